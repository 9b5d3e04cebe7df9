"""Redaction rules linear by construction, redacting what they redacted before.

`url_credentials` and `jwt_spans` replace two regexes that rescanned the rest of the text from every
place they started (``redact('://:' * 20000)`` took 6.8 s, ``'https://a:' * 20000`` 16.3 s). They must
find exactly what the old regexes found, which are kept here as the reference and compared on random
text made of the characters that matter to them. Speed is `benchmarks/redact.py`'s to show; here the
hostile inputs only have to come back, redacted as they should be.
"""

from __future__ import annotations

import importlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.transcripts import redact
from cairn.transcripts.redact_linear import jwt_spans, url_credentials

OLD_URL_CREDENTIALS = re.compile(
    r"(://[^\s:/@'\"\[\]]*:)"
    r"(?:(?P<plain>[^\s/?'\"\[\]]+)(?=@)|(?=[^\s@]*@)(?P<slashed>[^\s?\"\[\]]+?)(?=@[A-Za-z0-9.\-]+(?:[:/?#\s'\"]|$)))"
)
OLD_JWT = re.compile(r"eyJ(?<!\weyJ)[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*")

# Pieces that make matches, near misses and every character either pattern stops at.
URL_PIECES = [*":/@?# '\"[]a0.-\né$", "://", "://a:", "@h.c", ":80/"]
# `cairn.transcripts.redact` is also the name of the function the package exports.
redact_module = importlib.import_module("cairn.transcripts.redact")

JWT_PIECES = ["eyJ", "eyJabcdefgh", ".", "-", "_", "a", "9", " ", "é", "xyz12345"]


def _old_urls(text: str) -> list[tuple[int, int, int, bool]]:
    return [
        (m.start(), m.end(1), m.end(), m.group("slashed") is not None)
        for m in OLD_URL_CREDENTIALS.finditer(text)
    ]


def _new_urls(text: str) -> list[tuple[int, int, int, bool]]:
    return list(url_credentials(text))


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(URL_PIECES), max_size=40).map("".join))
def test_url_credentials_are_the_old_patterns_matches(text: str) -> None:
    assert _new_urls(text) == _old_urls(text)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(JWT_PIECES), max_size=30).map("".join))
def test_jwt_spans_are_the_old_patterns_matches(text: str) -> None:
    assert list(jwt_spans(text)) == [m.span() for m in OLD_JWT.finditer(text)]


@pytest.mark.parametrize(
    "text",
    [
        "postgres://u:p@ssW0rdAt@host/db",
        "DATABASE_URL=postgres://admin:sl/ash9Q@db/app and https://x:y@h.com?q",
        "http://host:8000/api/@me https://a:b@c https://user@github.com/o/r",
        "://a?b:c@d ://x:/y@host:1 ://x:/y@ ://u:p@h@ '://u:p'@h",
        "redis://:r3disPass@cache:6379/0 amqp://guest:gu@est99@rabbit:5672/",
    ],
)
def test_url_credentials_of_real_shapes_are_the_old_patterns_matches(text: str) -> None:
    assert _new_urls(text) == _old_urls(text)


@pytest.mark.parametrize("unit", ["://:", "https://a:", "://a:@", "://a:/@", "://"])
def test_a_text_of_url_starts_comes_back_and_a_password_after_it_is_redacted(unit: str) -> None:
    hostile = unit * 20_000
    assert redact(hostile) == hostile
    assert redact(f"{hostile} postgres://app:s3cretPass@db/app") == (
        f"{hostile} postgres://app:[REDACTED:url_password]@db/app"
    )


def test_a_run_of_jwt_headers_comes_back_and_a_token_after_it_is_redacted() -> None:
    hostile = "-eyJ" * 20_000
    token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    assert redact(hostile) == hostile
    assert redact(f"{hostile} {token}") == f"{hostile} [REDACTED:jwt]"


OLD_CLI_COMMAND = re.compile(
    r"(?<![\w.\-])(?P<command>mysql\w*|mariadb\w*|7za?|sshpass|docker|podman|helm|redis-cli|mongo\w*|"
    r"ldap[a-z]+|sqlcmd|curl|smbclient)(?![\w\-])"
)

OLD_CLI_FLAG = re.compile(r" -(?:-(?:password|pass|user|proxy-user)(?=[ \t=])|[pauUwP])")
OLD_CLI_FLAG_TAB = re.compile(r"[ \t]-(?:-(?:password|pass|user|proxy-user)(?=[ \t=])|[pauUwP])")


def _old_command_line_rule(text: str) -> tuple[str, int]:
    """The command-line rule as it was: every flag looked back up to `_CLI_LOOKBACK` characters."""

    def command_before(at: int) -> redact_module._Command | None:
        window = max(0, at - redact_module._CLI_LOOKBACK)
        start = max(max(text.rfind(mark, window, at) for mark in "\n;|&") + 1, window)
        named = None
        for match in OLD_CLI_COMMAND.finditer(text, start, at):
            named = match
        if named is None:
            return None
        command = redact_module._command(named.group("command"))
        if command is not None and command.login and not redact_module._LOGIN.search(text, named.end(), at):
            return None
        return command

    pieces: list[str] = []
    copied = count = 0
    flags = OLD_CLI_FLAG_TAB if "\t-" in text else OLD_CLI_FLAG
    for flag in flags.finditer(text):
        at = flag.start() + 1
        if at < copied or (command := command_before(at)) is None:
            continue
        if (found := command.flags.match(text, at)) is None:
            continue
        if (replacement := redact_module._cli_secret(found.group("value"), command.split)) is None:
            continue
        pieces += [text[copied : found.start("value")], replacement]
        copied = found.end("value")
        count += 1
    return ("".join([*pieces, text[copied:]]), count) if count else (text, 0)


CLI_PIECES = ["mysql", "curl", "docker", " login", "sshpass", "redis-cli", "smbclient", " -p", " -u", "\t-p"]
CLI_PIECES += [" -pS3cret", " -a", " --password", "=", " ", "\t", "u:pw9", "x%y", ";", "|", "\n", "'q'", "-"]
CLI_PIECES += ["w" * 150, "7z", "7za", "mysqlx", "mongosh", "ldapsearch", ".curl", "-curl", "$X", " -P"]
CLI_PIECES += [" -U", " -w", " --user", " --pass", " --proxy-user", ":", '"a b:c"', "'u %p'"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(CLI_PIECES), max_size=40).map("".join))
def test_the_command_line_rule_redacts_what_it_redacted_when_each_flag_looked_back(text: str) -> None:
    assert redact_module._CommandLineRule().apply(text) == _old_command_line_rule(text)


@pytest.mark.parametrize("unit", [" -p", " -u", "\t-p", "mysql -p ", "curl -u ", " --password"])
def test_a_text_of_password_flags_comes_back_and_a_password_after_it_is_redacted(unit: str) -> None:
    hostile = unit * 16_000
    assert redact(hostile) == hostile
    assert redact(f"{hostile}\nmysql -u root -pS3cretPW") == f"{hostile}\nmysql -u root -p[REDACTED:password]"


def test_an_option_declined_as_a_secret_no_longer_hides_the_next_one() -> None:
    """`--verbose --password hunter22`: the match for `--verbose` took `--password` for its value and,
    declined, used it up, so the password was kept. A value is never an option now, and only a name
    holding a secret word is looked at."""
    assert redact("mysql --verbose --password hunter22") == "mysql --verbose --password [REDACTED:password]"
    assert redact("x --password --token abc123def") == "x --password --token [REDACTED:token]"
    assert redact("tool --password-file /run/pw --token abc123def") == (
        "tool --password-file /run/pw --token [REDACTED:token]"
    )
    assert redact("deploy --token TOKEN --password $PW") == "deploy --token TOKEN --password $PW"


@pytest.mark.parametrize("unit", ["--a", " --a b", " --password", "--password ", " --token T"])
def test_a_text_of_long_options_comes_back(unit: str) -> None:
    hostile = unit * 12_000
    assert redact(hostile) == hostile
    assert redact(f"{hostile} --api-token s3cr3tvalue9") == f"{hostile} --api-token [REDACTED:token]"
