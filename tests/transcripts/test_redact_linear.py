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

pytestmark = pytest.mark.slow

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


# The rules rewritten so that a text of their near misses costs `re` alone, no call per near miss. Each
# must redact what its old pattern did; the old patterns are the reference, compared on random text.

_OLD_SECRET_WORDS = "|".join(
    variant
    for word in ("key", "pass", "token", "secret", "pwd", "credential")
    for variant in (
        (r"key(?<=[\w.\-]key)", r"Key(?<=[\w.\-]Key)", "KEY")
        if word == "key"
        else (word, word.upper(), word.capitalize())
    )
)
OLD_ASSIGNMENT = re.compile(
    rf"(?:{_OLD_SECRET_WORDS})(?:(?!{_OLD_SECRET_WORDS})[\w.\-])*+"
    r"(?P<quote>[\"']?)"
    r"(?P<sep>[ \t]*+(?::=|=>|=|:)[ \t]*+)"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|`[^`\n]*`|[^\s\"'`,;]+)"
)


def _old_assignment_rule(text: str) -> tuple[str, int]:
    """The assignment rule as it was: a match only at a name's last secret word, the name's start found
    by scanning back from there over ASCII name characters."""
    pieces: list[str] = []
    copied = 0
    for match in OLD_ASSIGNMENT.finditer(text):
        start = match.start()
        while start > 0 and text[start - 1] in redact_module._NAME_CHARS:
            start -= 1
        key = text[start : match.start("quote")]
        if not key or not (key[0].isalpha() or key[0] in "_-"):
            continue
        sep, value = match.group("sep"), match.group("value")
        kind = redact_module._secret_kind(key, env_style=sep == "=")
        quoted = value[0] in "\"'`"
        inner = value[1:-1] if quoted else value
        if kind is None or not inner or redact_module._is_reference(inner):
            continue
        if (not quoted and redact_module._looks_like_code(value, key, sep)) or start < copied:
            continue
        marker = f"[REDACTED:{kind}]"
        marker = value[0] + marker + value[0] if quoted else marker
        pieces += [text[copied:start], key + match.group("quote") + sep + marker]
        copied = match.end()
    return ("".join([*pieces, text[copied:]]), len(pieces) // 2) if pieces else (text, 0)


# Secret words in every case, the characters a name holds or stops at (`é` is a name character to the
# regex but not to the scan back for the name's start), separators and values.
ASSIGNMENT_PIECES = ["key", "Key", "KEY", "pass", "PASS", "Pass", "token", "Token", "secret", "SECRET"]
ASSIGNMENT_PIECES += ["pwd", "PWD", "credential", "api", "API", *"_.-=:\"'` \t\n", ":=", "=>", "é", "É"]
ASSIGNMENT_PIECES += ["x", "1", "$", "(", ",", ";", "word", "hunter22", "abc123", "ACCESS", "client"]
ASSIGNMENT_PIECES += ["s3cr3t9", "wd", "s1"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(ASSIGNMENT_PIECES), max_size=30).map("".join))
def test_the_assignment_rule_redacts_what_it_did_when_a_match_began_at_the_last_secret_word(
    text: str,
) -> None:
    assert redact_module._AssignmentRule().apply(text) == _old_assignment_rule(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The name judged is what the scan back from its last secret word reaches: not past `é`.
        ("tokené_password=hunter22", "tokené_password=[REDACTED:password]"),
        ("PASSÉKEY=X1234", "PASSÉKEY=[REDACTED:secret]"),
        ("passékey=hunter22", "passékey=hunter22"),
        ("aws_secret_access_key_id=abc123x", "aws_secret_access_key_id=abc123x"),
        ("pw_file: /run/pw and api_key: 'k3y-99'", "pw_file: /run/pw and api_key: '[REDACTED:api_key]'"),
    ],
)
def test_an_assignment_is_judged_by_its_whole_name(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize("unit", ["api_key ", "token ", "A_PWD=;", "aws_secret_access_key ", " --password"])
def test_a_text_of_secret_names_without_a_value_comes_back_and_an_assignment_after_it_is_redacted(
    unit: str,
) -> None:
    hostile = unit * 8_000
    assert redact(hostile) == hostile
    assert redact(f"{hostile}\nDB_PASSWORD=s3cret") == f"{hostile}\nDB_PASSWORD=[REDACTED:password]"


OLD_ENV_PWD = re.compile(r"(\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_PWD=)([^\s\"'`;]+|\"[^\"\n]*\"|'[^'\n]*')")


def _old_env_pwd(match: re.Match[str]) -> str:
    value = match.group(2)
    quote = value[0] if value[0] in "'\"" else ""
    inner = value[1:-1] if quote else value
    if not inner or redact_module._is_reference(inner):
        return match.group(0)
    return f"{match.group(1)}{quote}[REDACTED:password]{quote}"


ENV_PWD_PIECES = ["_PWD=", "A", "B1", "a", "_", "__", "PWD", "=", "MYSQL", "9", "é", "É", *" -;`\"'\n\t"]
ENV_PWD_PIECES += ["x", "$X", "hunter2", "[REDACTED", "_PWD", "A_PWD="]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(ENV_PWD_PIECES), max_size=30).map("".join))
def test_env_pwd_values_read_from_the_end_are_the_old_patterns_replacements(text: str) -> None:
    """`_env_pwds` reads the text reversed; a value holding the next `NAME_PWD=` still hides it."""
    expected = OLD_ENV_PWD.sub(_old_env_pwd, text)
    assert redact_module._ScanRule(redact_module._env_pwds, ("_PWD=",)).apply(text)[0] == expected


AUTH_PIECES = ["Authorization", "aUTHORIZATION", "Proxy-Authorization", "Bearer", "bearer ", "BASIC "]
AUTH_PIECES += ["Digest\t", "token ", "abc", "abcdefgh", "abcdefghijklmnop", "x", "1", "²", "\x01", "é"]
AUTH_PIECES += [*":= \t\n\"'(},;$%<{-", "\u2003", "[REDACTED", "[private]", "***", "…", "..."]


def _authorization_rule(candidate: re.Pattern[str] | None) -> redact_module._Rule:
    auth = redact_module._AUTH_HEADER
    return redact_module._Rule(auth, redact_module._authorization, ("authorization",), True, candidate)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(AUTH_PIECES), max_size=25).map("".join))
def test_the_authorization_candidate_test_never_passes_over_a_header_that_loses_its_value(text: str) -> None:
    """`_AUTH_CANDIDATE` only lets the rule stop early: with it the rule does what it did without."""
    with_test = _authorization_rule(redact_module._AUTH_CANDIDATE).apply(text)
    assert with_test == _authorization_rule(None).apply(text)


@pytest.mark.parametrize(
    "value", ["abcdefg²", "abc\x01defg1", "abcdefgh1", "abcdefghijklmnopqrst", "é1234567"]
)
def test_a_header_value_with_a_digit_of_any_kind_or_20_characters_loses_it(value: str) -> None:
    assert redact(f"Authorization: {value}") == "Authorization: [REDACTED:authorization]"


@pytest.mark.parametrize("unit", ["Authorization: ", "Authorization: Bearer $X ", "authorization: required "])
def test_a_text_of_declined_headers_comes_back_and_a_header_after_it_loses_its_value(unit: str) -> None:
    hostile = unit * 3_200
    header = "x Authorization: Bearer abc123"
    assert redact(hostile) == hostile
    assert redact(f"{hostile}\n{header}") == f"{hostile}\nx Authorization: Bearer [REDACTED:authorization]"


OLD_NETRC = re.compile(r"(machine[ \t]+\S+(?:[ \t]+login[ \t]+\S+)?[ \t]+password[ \t]+)(\S+)")
OLD_NETRC_DEFAULT = re.compile(r"(default[ \t]+login[ \t]+\S+[ \t]+password[ \t]+)(\S+)")
_OLD_OPTION_WORDS = "|".join(
    variant
    for word in ("pass", "pwd", "secret", "token", "key", "credential")
    for variant in (word, word.upper(), word.capitalize())
)
OLD_SPACED_OPTION = re.compile(
    rf"--(?<!\S--)(?=[\w\-]*+[ \t]++[^\s\-])(?=[\w\-]*?(?:{_OLD_OPTION_WORDS}))"
    r"(?P<name>[A-Za-z][\w\-]*+)[ \t]++"
    r"""(?P<value>'[^'\n]*'|"[^"\n]*"|(?![A-Za-z_]*+(?:[\s'"`;|&<>]|\Z))[^\s'"`;|&<>]{4,})"""
)
WORD_PIECES = ["machine", "default", "login", "password", "machine api.example.com", " login bob"]
WORD_PIECES += [" password ", "default login anon", *" \t\n-;", "  ", "h", "u", "s3cr3t", "--", "--token"]
WORD_PIECES += ["--api-key", "--password", "T", "TOKEN", "'q'", '"a b"', "abcd1234", "ab12", "a1", "$X", "-x"]
WORD_PIECES += ["é", "x_y"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(WORD_PIECES), max_size=25).map("".join))
def test_netrc_and_spaced_option_patterns_match_what_the_old_ones_did(text: str) -> None:
    """Possessive where giving back never helped; the option's value told before its name is read."""
    for new, old in (
        (redact_module._NETRC, OLD_NETRC),
        (redact_module._NETRC_DEFAULT, OLD_NETRC_DEFAULT),
        (redact_module._SPACED_OPTION, OLD_SPACED_OPTION),
    ):
        assert [m.groups() for m in new.finditer(text)] == [m.groups() for m in old.finditer(text)]


OLD_CLI_FLAG_NAMES = re.compile(
    r"[ \t]-(?:(?:[uU]|-(?:user|proxy-user)(?=[ \t=]))"
    r"""(?=(?:[ \t]+|=)?(?:'[^'\n]*?[:%]|"[^"\n]*?[:%]|[^\s'"`;|&<>]*?[:%]))"""
    r"|(?:-(?:password|pass)(?=[ \t=])|[awP])(?=(?:[ \t]+|=)[^\s\-])"
    r"|p(?=(?:[ \t]+|=)?[^\s\-]))"
)
FLAG_PIECES = [" -p", " -u", " -U", " --user", " --proxy-user", " --password", " --pass", " -a", " -w", " -P"]
FLAG_PIECES += ["\t-p", *"= \t-x:%'\"\n;$up", "a:b", "-x", "é"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(FLAG_PIECES), max_size=20).map("".join))
def test_password_flags_are_where_they_were_before_their_spaces_were_taken_whole(text: str) -> None:
    new = re.compile(r"[ \t]" + redact_module._CLI_FLAG_NAMES)
    assert [m.span() for m in new.finditer(text)] == [m.span() for m in OLD_CLI_FLAG_NAMES.finditer(text)]


# Every command, flags of other commands, separators inside quoted values, references and the window.
MORE_CLI_PIECES = [*CLI_PIECES, "mongo", "helm", "podman", "mariadb", "sqlcmd", "ldap", "mysql.exe", "/"]
MORE_CLI_PIECES += ["(", "$(", "'$X'", "''", '"-x"', " -p-x", "w" * 390, "&", "'a; mysql'", " -pX", "é"]
MORE_CLI_PIECES += [" -p'a -pB'", "a:", "a: ", "a:$X", "'a:'", "u%", "%$X", "a:-x"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(MORE_CLI_PIECES), max_size=40).map("".join))
def test_the_command_line_rule_reading_forward_from_each_command_redacts_what_it_did(text: str) -> None:
    assert redact_module._CommandLineRule().apply(text) == _old_command_line_rule(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A flag belongs to the last command before it: `mysql` takes no `-p VALUE`, `sshpass` does.
        ("sshpass mysql -p hunter2 x", "sshpass mysql -p hunter2 x"),
        ("mysql x; sshpass -p hunter2 x", "mysql x; sshpass -p [REDACTED:password] x"),
        # A command named inside a quoted value owns the flags after it; a flag inside one is passed.
        ("sshpass -p 'x; mysql' -pY", "sshpass -p '[REDACTED:password]' -p[REDACTED:password]"),
        ("sshpass -p 'a -p b' c", "sshpass -p '[REDACTED:password]' c"),
        ("docker -p x login -p y", "docker -p x login -p [REDACTED:password]"),
        ("mongo -p $X -p hunter2", "mongo -p $X -p [REDACTED:password]"),
        # At most `_CLI_LOOKBACK` characters from its command.
        ("mysql " + "w" * 400 + " -pX", "mysql " + "w" * 400 + " -pX"),
        ("mysql -pA " + "w" * 390 + " -pB", "mysql -p[REDACTED:password] " + "w" * 390 + " -pB"),
    ],
)
def test_a_password_flag_belongs_to_the_last_command_before_it(text: str, expected: str) -> None:
    assert redact_module._CommandLineRule().apply(text)[0] == expected


@pytest.mark.parametrize(
    ("lead", "unit"),
    [
        ("", "mysql -p "),
        ("sshpass ", "mysql -p "),
        ("", "docker -p x "),
        ("", "mongo -p $X "),
        ("", "sshpass -p $X "),
        ("", "curl -u a: "),
        ("", "smbclient -U a% "),
    ],
)
def test_a_text_of_flags_their_commands_decline_comes_back_and_a_password_after_it_is_redacted(
    lead: str, unit: str
) -> None:
    hostile = lead + unit * 5_000
    assert redact(hostile) == hostile
    assert redact(f"{hostile}\nmysql -u root -pS3cretPW") == f"{hostile}\nmysql -u root -p[REDACTED:password]"
