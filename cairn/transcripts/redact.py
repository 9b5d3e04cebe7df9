"""Redaction of secrets and ``<private>`` sections before any text is stored or shown to a model.

Transcripts routinely contain secrets: a ``.env`` file the agent read, a ``curl`` with an
``Authorization`` header, a key pasted into a prompt. Everything cairn stores or sends to a model
passes through :func:`redact` first.

Two kinds of rule:

* Token shapes that are secret wherever they appear (provider API keys, AWS key ids, GitHub tokens,
  JWTs, private-key blocks) are replaced outright with ``[REDACTED:<kind>]``.
* Assignments (``password=…``, ``"token": "…"``, ``DB_PASSWORD=…``) keep their name and lose their
  value. These are judged by a small function rather than one regex, because the same shape is
  everywhere in ordinary code (``token = get_token()``, ``password: str``, ``api_key=api_key``) and
  redacting code would make the memory useless. The name must *end* in a secret word
  (``password_field`` and ``token_count`` do not), and values that look like code (calls, attribute
  access, type names, variable references, a bare lower-case word in ``x = y`` style) are left alone.

``<private>…</private>`` becomes ``[private]``; an opening tag that is never closed hides the rest of
the text, since the user asked for it to stay private and the closing tag may simply not have been
written yet.

* Passwords on command lines: a long option named like a secret with its value after a space
  (``--password hunter2``, ``--api-token abc123``), and the password flags of the commands that take
  one (``mysql -pSECRET``, ``sshpass -p``, ``docker login -p``, ``redis-cli -a``, ``mongosh -p``,
  ``ldapsearch -w``, ``sqlcmd -P``, ``7z -p``, ``curl -u user:pass``, ``smbclient -U user%pass``). Short
  flags are judged per command because they mean other things elsewhere (``ssh -p 2222``,
  ``docker run -p 8080:80``, ``mkdir -p``, ``pytest -p no:cacheprovider``).
* URL user-info: everything between ``user:`` and the *last* ``@`` before the host, so a password
  holding an ``@`` is hidden whole.

Deliberately *not* redacted, to keep code readable: an unquoted letters-only word after a spaced
separator (``password = hunter``, ``--password secret``), which is indistinguishable from a variable
name or a metavar.

Most text contains no secret at all, so every rule has literal trigger substrings checked with ``in``
first; the regexes run only when a trigger is present.

Every rule is linear in its text whatever the text holds: a transcript can hold thousands of near
misses of one rule's shape, and a rule that rescans the rest of the text from each (a regex lookahead
or backtracking that runs to the next space, a lookback from each flag) turns one message into
minutes. The shapes no regex finds in linear time are found by scanners
(`cairn.transcripts.redact_linear`); ``benchmarks/redact.py`` times a near miss of every rule's shape
next to ordinary text of its size. Linear is not yet quick: a near miss that costs a call into Python
(a match the rule then declines, a flag taken back to its command) makes a text of them many times
slower than text of its size, so `re` tells near misses apart itself wherever a bounded test can (in
the rule's regex, or in a regex that must find something before the rule runs: `_Rule.candidate`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from cairn.transcripts.redact_linear import jwt_spans, url_credentials

__all__ = ["redact", "redact_with_count"]

_Replacer = Callable[[re.Match[str]], str]


@dataclass(frozen=True, slots=True)
class _Rule:
    """A regex whose matches are rewritten by ``replace`` (which may decline by returning the match)."""

    pattern: re.Pattern[str]
    replace: _Replacer
    triggers: tuple[str, ...]
    """The regex runs only if one of these substrings occurs in the text."""
    lower: bool = False
    """Look for ``triggers`` in the lower-cased text (for case-insensitive rules)."""
    candidate: re.Pattern[str] | None = None
    """Where this finds nothing, ``replace`` would decline every match: for a rule whose near misses
    cost a call each, a regex that tells in one scan that a text holds none it would replace."""

    def apply(self, text: str) -> tuple[str, int]:
        if self.candidate is not None and self.candidate.search(text) is None:
            return text, 0
        replaced = 0
        replace = self.replace

        def counting(match: re.Match[str]) -> str:
            nonlocal replaced
            result = replace(match)
            if result != match.group(0):
                replaced += 1
            return result

        new_text = self.pattern.sub(counting, text)
        return (new_text, replaced) if replaced else (text, 0)


def _whole(kind: str) -> _Replacer:
    marker = f"[REDACTED:{kind}]"
    return lambda _match: marker


def _keep_prefix(kind: str) -> _Replacer:
    """Keep group 1 (a header or key name) and replace group 2 (the value)."""
    marker = f"[REDACTED:{kind}]"

    def replace(match: re.Match[str]) -> str:
        if _is_reference(match.group(2)):
            return match.group(0)
        return match.group(1) + marker

    return replace


_REFERENCE_PREFIXES = ("$", "%", "{", "<", "[REDACTED", "[private]", "***", "…", "...")
#: What `_is_reference` tells, as a regex: a value starting here is a reference.
_REFERENCE = "|".join(map(re.escape, _REFERENCE_PREFIXES))


def _is_reference(value: str) -> bool:
    """A variable reference, template or placeholder rather than a literal secret."""
    return value.startswith(_REFERENCE_PREFIXES)


_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)
_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
# Token patterns start with their literal prefix so `re` can jump straight to candidates; the word
# boundary a leading `\b` would give is checked by a fixed-width lookbehind after the prefix instead.
_ANTHROPIC = re.compile(r"sk-ant-[A-Za-z0-9_\-]{20,}")  # distinctive enough to need no boundary
_OPENAI = re.compile(r"sk-(?<!\wsk-)(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,}|[A-Za-z0-9]{20,}\b)")
_GOOGLE = re.compile(r"AIza(?<!\wAIza)[0-9A-Za-z_\-]{35}")
_SLACK = re.compile(r"xox[abposr]-(?<!\wxox[abposr]-)[0-9A-Za-z\-]{10,}")
_STRIPE = re.compile(r"[sr]k_(?<!\w[sr]k_)(?:live|test)_[0-9A-Za-z]{20,}")
_HUGGINGFACE = re.compile(r"hf_(?<!\whf_)[A-Za-z0-9]{30,}\b")
_AWS_KEY_ID = re.compile(r"A[KS]IA(?<!\wA[KS]IA)[0-9A-Z]{16}\b")
# The secret access key on an AWS credentials CSV line (what IAM's console downloads: `Access key ID,Secret
# access key` then `AKIA…,wJal…`), found after the key id's marker: anchored on that literal, with a
# fixed-width value, so it never rescans the text after a near miss; it also finds the secret in text an
# earlier redaction stored with only the key id hidden (`redact --rescan`).
_AWS_CSV_SECRET = re.compile(
    r"(\[REDACTED:aws_access_key_id\]\"?[ \t]*+,[ \t]*+\"?)([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
)
_GITHUB = re.compile(
    r"gh[pousr]_(?<!\wgh[pousr]_)[A-Za-z0-9]{36,}\b|github_pat_(?<!\wgithub_pat_)[A-Za-z0-9_]{22,}"
)
# GitLab, npm, PyPI and SendGrid tokens: one rule (one pass, one trigger check per text), the kind told
# by the prefix.
_PACKAGE_TOKENS = re.compile(
    r"glpat-(?<!\wglpat-)[A-Za-z0-9_\-]{20,}|npm_(?<!\wnpm_)[A-Za-z0-9]{36}\b"
    r"|pypi-(?<!\wpypi-)AgE[A-Za-z0-9_\-]{50,}|SG\.(?<!\wSG\.)[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"
)
_PACKAGE_TOKEN_KINDS = {"gl": "gitlab_token", "np": "npm_token", "py": "pypi_token", "SG": "sendgrid_key"}
# JWTs (`jwt_spans`) and URL passwords (`url_credentials`) are found by scanners of their own
# (`cairn.transcripts.redact_linear`): as regexes they rescanned the rest of the text from each start.
# Case-insensitive rules start with a character class instead of using re.IGNORECASE, which would
# disable `re`'s fast scan for the first character.
_AUTH_HEADER = re.compile(
    r"([Aa](?i:uthorization)[\"']?\s*[:=]\s*[\"']?(?P<scheme>(?i:bearer|basic|token|digest)\s+)?)"
    r"([^\s\"',;]+)"
)
# Where `_authorization` may keep a header's credentials: a scheme and a value that is no reference, or
# without a scheme a value of 20 characters or more, or of 8 or more with one among its first 19 that
# may be a digit (a digit, or any other character but a space that is not printable ASCII:
# `str.isdigit` is true of `²` too). A
# superset, tested in a bounded look at the value that gives nothing back (possessive: what follows each
# part cannot start with what it holds), so that a text of headers `_authorization` declines
# (`"Authorization: " * 3200`, each taking the next header's name for its value) is passed over by `re`
# alone; such a text cost a call each. Only a test: `_AUTH_HEADER` still decides, since a declined
# header's value is passed over (a header inside it, `Authorization: xAuthorization: Bearer abc`, is
# not read).
_AUTH_REFERENCE = rf"(?!{_REFERENCE})"
_AUTH_CANDIDATE = re.compile(
    r"[Aa](?i:uthorization)[\"']?+\s*+[:=]\s*+[\"']?+"
    rf"(?:(?=[BbTtDd])(?i:bearer|basic|token|digest)\s++{_AUTH_REFERENCE}\S"
    rf"|{_AUTH_REFERENCE}(?=\S{{20}}|(?=\S{{8}})[!-/:-~]{{0,18}}+[^!-/:-~\s]))"
)
_BEARER = re.compile(r"([Bb](?i:earer)\s+)([A-Za-z0-9._~+/\-]{20,}=*)")
# A URL's password runs to the *last* `@` before the host (`@` allowed): `u:p@ss@host` hides `p@ss`.
# One holding `/` or `'` (`postgres://admin:sl/ash@db/app`), which the first form stops at, runs to the
# first `@` followed by a host name and the end of the authority (`url_credentials`). `_url_passwords`
# declines a port and path (`http://host:8000/api/@me`).
_PORT_AND_PATH = re.compile(r"\d{1,5}(?:/|$)")
# A .netrc entry, `machine HOST login USER password SECRET`; anchored on the literal `machine` for `re`'s
# fast scan. The `default` entry needs its `login` too: "the default password is admin" is prose. Each
# word and space is taken whole (possessive): the next part starts with what the last cannot hold, so
# giving characters back never helps, and a near miss (`"machine " * 6000`) costs one try, not one per
# character of the word.
_NETRC = re.compile(r"(machine[ \t]++\S++(?:[ \t]++login[ \t]++\S++)?[ \t]++password[ \t]++)(\S+)")
_NETRC_DEFAULT = re.compile(r"(default[ \t]++login[ \t]++\S++[ \t]++password[ \t]++)(\S+)")
_AWS_SECRET = re.compile(
    r"([Aa](?i:ws_?secret_?access_?key)[\"']?\s*[:=]\s*[\"']?)([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
)


def _by_first_letter(variants: list[str]) -> str:
    """An alternation of `variants` grouped by their first letter (`K(?:ey|EY)|p(?:ass|wd)|…`): `re` tests
    the alternatives one by one, and a letter then costs one test per first letter, not one per word."""
    firsts = dict.fromkeys(variant[0] for variant in variants)
    return "|".join(f"{first}(?:{'|'.join(v[1:] for v in variants if v[0] == first)})" for first in firsts)


# Anchored on the secret word itself (not on the start of the name) with its case variants spelled out:
# a case-sensitive literal alternation lets `re` skip quickly to candidates, where IGNORECASE or a
# lookahead at every word start costs several times more on code-heavy text. The rest of the name
# before the word is found by scanning backwards in `_redact_assignment`.
# A bare "key" or "Key" is never a secret name (it needs a qualifier: `api_key`, `apiKey`; "KEY=" alone
# is one, env style), so those two match only after a name character — checked by a lookbehind after
# the literal, which keeps the literal first: a run of thousands of `key="` then costs no match each.
_SECRET_WORD_ALTERNATION = _by_first_letter(
    [
        variant
        for word in ("key", "pass", "token", "secret", "pwd", "credential")
        for variant in (
            (r"key(?<=[\w.\-]key)", r"Key(?<=[\w.\-]Key)", "KEY")
            if word == "key"
            else (word, word.upper(), word.capitalize())
        )
    ]
)
# From the name's first secret word the match takes the rest of the name whole, and the separator and
# value if they follow it. A name with none is still a match when the rest could hold another secret word
# (`more`: 3 characters or more), one that takes the name whole: the search goes on after it, not at the
# name's next secret word, so a name of thousands of secret words ("key" * 16000, "pass." * 16000) is
# read once (48 KB took 14 s when each of its words began a search that read the rest of it). Where the
# rest is shorter there is no other, and a name without a value is no match at all (`"api_key " * 6000`
# costs no match each). `_AssignmentRule` passes over a match with no value. The rest is possessive: none
# of its characters can start the quote or separator, so giving any back never helps.
_ASSIGNMENT = re.compile(
    rf"(?:{_SECRET_WORD_ALTERNATION})(?P<more>(?=[\w.\-]{{3}}))?[\w.\-]*+"
    r"(?:(?P<quote>[\"']?)"
    r"(?P<sep>[ \t]*+(?::=|=>|=|:)[ \t]*+)"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|`[^`\n]*`|[^\s\"'`,;]+)"
    r"|(?(more)|(?!)))"
)
# The last secret word of a name, searched for between its first one and the name's end: the one followed
# by no other up to there (see `_redact_assignment`).
_LAST_SECRET_WORD = re.compile(
    rf"(?:{_SECRET_WORD_ALTERNATION})(?:(?!{_SECRET_WORD_ALTERNATION})[\w.\-])*+\Z"
)

_SPLIT_NAME = re.compile(r"[_.\-]+|(?<=[a-z0-9])(?=[A-Z])")
_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "pass", "pwd"})
#: Names ending in a password word that hold no password: the shell's working directories.
_NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD"})
_SECRET_WORDS = _PASSWORD_WORDS | frozenset({"secret", "token", "apikey", "credential", "credentials"})
_KEY_QUALIFIERS = frozenset(
    {"api", "access", "secret", "private", "client", "auth", "signing", "encryption", "master", "license"}
)
_ENV_WORDS = frozenset({"key", "token", "secret", "password", "pass", "passwd", "credential", "credentials"})
_CODE_WORDS = frozenset(
    {
        "none",
        "null",
        "nil",
        "true",
        "false",
        "undefined",
        "str",
        "string",
        "int",
        "bytes",
        "bool",
        "boolean",
        "number",
        "any",
        "optional",
        "secretstr",
        "await",
        "new",
        "function",
        "lambda",
        "async",
        "required",
        "self",
        "this",
        "os.environ",
        "process.env",
    }
)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_ATTRIBUTE_CHAIN = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def _secret_kind(name: str, *, env_style: bool) -> str | None:
    """`_judge_name`, remembered for short names: names repeat (a hostile text can hold thousands of one),
    and a long one is judged afresh rather than kept."""
    if len(name) <= _CACHED_NAME_CHARS:
        return _judged_name(name, env_style)
    return _judge_name(name, env_style=env_style)


_CACHED_NAME_CHARS = 80


@functools.lru_cache(maxsize=4096)
def _judged_name(name: str, env_style: bool) -> str | None:
    return _judge_name(name, env_style=env_style)


def _judge_name(name: str, *, env_style: bool) -> str | None:
    """The kind of secret a variable/key name holds, or None if the name is not secret-like.

    ``env_style`` (``NAME=value``, no spaces) also accepts upper-case names that merely contain a
    secret word (``SECRET_KEY_BASE``, ``SSH_KEY_PATH``); in code (``STORAGE_KEY = 'todos'``) that
    would be far too eager.
    """
    parts = [part for part in _SPLIT_NAME.split(name.strip("-")) if part]
    if not parts or name in _NOT_SECRET_NAMES:
        return None
    last = parts[-1].lower()
    if last in _PASSWORD_WORDS:
        return "password"
    if last in _SECRET_WORDS:
        return {"token": "token", "apikey": "api_key"}.get(last, "secret")
    if last == "key" and len(parts) > 1 and parts[-2].lower() in _KEY_QUALIFIERS:
        return "api_key" if parts[-2].lower() == "api" else "secret"
    if env_style and name.isupper():
        # `PGPASSWORD=`, `REDISCLI_PASSWD=`: the environment variables clients read a password from.
        if last.endswith(("password", "passwd")):
            return "password"
        if any(part.lower() in _ENV_WORDS for part in parts):
            return "secret"
    return None


def _looks_like_code(value: str, key: str, sep: str) -> bool:
    """True when an unquoted assignment value is an expression rather than a literal secret."""
    if len(value) < 4 or any(c in value for c in "()[]{}"):
        return True
    lowered = value.lower()
    if lowered in _CODE_WORDS or _ATTRIBUTE_CHAIN.fullmatch(value):
        return True
    if _IDENTIFIER.fullmatch(value):
        if lowered.replace("_", "") == key.lower().replace("_", "").replace("-", ""):
            return True
        # `token = response` / `password: Secret` is code; `password=hunter` is not.
        if sep.strip() != sep and not any(c.isdigit() for c in value):
            return True
    return False


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _redact_assignment(text: str, match: re.Match[str], ascii_text: bool) -> tuple[int, str] | None:
    """For a match of :data:`_ASSIGNMENT` with a value: where the name starts and the replacement, or
    None. `ascii_text`: the whole text is ASCII."""
    # The name starts where a scan back over ASCII name characters from its last secret word stops. The
    # match starts at its first one, the same place to scan back from unless a name character the scan
    # stops at (a non-ASCII letter: `passé_key`) lies between the two: the name judged is then the part
    # after that letter, as it was when the match started at the last word.
    start = match.start()
    if not ascii_text and not text[start : match.start("quote")].isascii():
        last = _LAST_SECRET_WORD.search(text, start, match.start("quote"))
        if last is not None:
            start = last.start()
    while start > 0 and text[start - 1] in _NAME_CHARS:
        start -= 1
    key = text[start : match.start("quote")]
    if not key or not (key[0].isalpha() or key[0] in "_-"):
        return None
    sep = match.group("sep")
    kind = _secret_kind(key, env_style=sep == "=")
    if kind is None:
        return None
    value = match.group("value")
    quoted = value[0] in "\"'`"
    inner = value[1:-1] if quoted else value
    if not inner or _is_reference(inner):
        return None
    if not quoted and _looks_like_code(value, key, sep):
        return None
    marker = f"[REDACTED:{kind}]"
    if quoted:
        marker = value[0] + marker + value[0]
    return start, key + match.group("quote") + sep + marker


@dataclass(frozen=True, slots=True)
class _AssignmentRule:
    """``name = value`` assignments whose name is secret-like; see the module docstring."""

    triggers: tuple[str, ...] = ("pass", "pwd", "secret", "token", "key", "credential")
    lower: bool = True

    def apply(self, text: str) -> tuple[str, int]:
        pieces: list[str] = []
        copied = 0  # text[:copied] is already in pieces
        ascii_text = text.isascii()
        for match in _ASSIGNMENT.finditer(text):
            if match.lastgroup != "value":  # a name with no separator and value after it
                continue
            found = _redact_assignment(text, match, ascii_text)
            if found is None:
                continue
            start, replacement = found
            if start < copied:  # the name overlaps the previous replacement; leave it
                continue
            pieces.append(text[copied:start])
            pieces.append(replacement)
            copied = match.end()
        if not pieces:
            return text, 0
        pieces.append(text[copied:])
        return "".join(pieces), len(pieces) // 2


def _authorization(match: re.Match[str]) -> str:
    """An ``Authorization`` header's credentials. With a scheme (``Bearer``, ``Basic``...) any literal
    value is one; without, only a value that looks like a credential (long, or with digits), since
    ``authorization: required`` and ``{"Authorization": auth_header}`` are ordinary text and code."""
    value = match.group(3)
    if _is_reference(value):
        return match.group(0)
    if match.group("scheme") is None and (
        len(value) < 8
        or (len(value) < 20 and not any(c.isdigit() for c in value))
        or any(c in value for c in "()[]{}")
    ):
        return match.group(0)
    return match.group(1) + "[REDACTED:authorization]"


# Command lines. A value is a quoted string or a bare word up to shell punctuation.
_CLI_VALUE = r"""(?P<value>'[^'\n]*'|"[^"\n]*"|[^\s'"`;|&<>][^\s'"`;|&<>]*)"""
# The commands whose password flags are known; matched as a command word (a path prefix allowed).
# Each name's literal comes first, its word boundary checked behind it, for `re`'s fast scan.
_CLI_NAMES = {
    "mysql": r"\w*",
    "mariadb": r"\w*",
    "7z": "a?",
    "sshpass": "",
    "docker": "",
    "podman": "",
    "helm": "",
    "redis-cli": "",
    "mongo": r"\w*",
    "ldap": "[a-z]+",
    "sqlcmd": "",
    "curl": "",
    "smbclient": "",
}


def _command_word(name: str, rest: str) -> str:
    """A command called `name` (`rest` after it) as a word of its own, a path before it allowed: the
    literal first and its boundary checked behind it, for `re`'s fast scan."""
    return rf"{re.escape(name)}(?<![\w.\-]{re.escape(name)}){rest}(?![\w\-])"


#: Any of the commands: where one command's words end and the next command's begin.
_CLI_COMMAND = "(?:" + "|".join(_command_word(name, rest) for name, rest in _CLI_NAMES.items()) + ")"
# Every password flag any of them takes. Only a flag with a value that may hold a password is one: the
# user flags (curl's `user:password`, smbclient's `user%password`) need the separator in it, the others
# a value after a space or `=` (and `-p` one glued to it too), so that a text of such flags without one
# (`"curl -u " * 6000`) is passed over by the regex alone.
# (Spaces are taken whole and a value up to its first separator: giving back never helps, and a text of
# flags without a value, `" -u" * 16000`, costs `re` a few steps each.)
_CLI_FLAG_BODY = (
    r"(?:(?:[uU]|-(?:user|proxy-user)(?=[ \t=]))"
    r"""(?=(?:[ \t]++|=)?+(?:'[^'\n:%]*+[:%]|"[^"\n:%]*+[:%]|[^\s'"`;|&<>:%]*+[:%]))"""
    r"|(?:-(?:password|pass)(?=[ \t=])|[awP])(?=(?:[ \t]++|=)[^\s\-])"
    r"|p(?=[ \t]*+[^\s\-]))"  # (`=` and a value: `=` is a glued value's first character)
)
_CLI_FLAG_NAMES = "-" + _CLI_FLAG_BODY
# The rule looks for one of these first (a literal ` -` prefix lets `re` skip to candidates): text
# without one, nearly all of it, costs that one scan.
_CLI_FLAG = re.compile(" " + _CLI_FLAG_NAMES)
# The same after a tab (`mysql<TAB>-pSECRET`), for the few texts that have one: a character class in
# front would cost every text `re`'s fast scan for the literal.
_CLI_FLAG_TAB = re.compile(r"[ \t]" + _CLI_FLAG_NAMES)
# The words of a shell command from its name up to one of its flags: no separator (a line end, `;`, `|`,
# `&`) and no other command (the flags after that one are its own). Lazy, so that the flag is looked for
# after each word and each character between words; a word is taken whole (possessive) once it is no
# command. A command's stretch ends where the next one's starts, so each character is read once.
_CLI_WORDS = rf"(?:[^\n;|&\w.\-]|(?!{_CLI_COMMAND})[\w.\-]++)*?"
# A flag starts after a space or tab.
_CLI_AT_FLAG = rf"(?<=[ \t])(?={_CLI_FLAG_NAMES})"
#: How far back from a flag its command may start.
_CLI_LOOKBACK = 400
_LOGIN = re.compile(r"(?<!\S)login(?!\S)")
# A long option named like a secret, its value after spaces (`--password hunter2`); the `=` form is
# an assignment. Anchored on the literal `--` with the boundary checked behind it, for `re`'s fast scan.
# Only a name holding a secret word, with a value that is no option, is a match at all: every match
# costs a call of `_spaced_option`, and a match it declined still used up its value, so in
# `--verbose --password hunter22` the option `--password` was taken for the value of `--verbose` and
# its password kept (and `" --a" * 12000` cost 12,000 calls).
# (The name is checked for a value after it first: a name of thousands of characters is then scanned
# for a secret word only when it is an option with a value.)
_OPTION_SECRET_WORDS = _by_first_letter(
    [
        variant
        for word in ("pass", "pwd", "secret", "token", "key", "credential")
        for variant in (word, word.upper(), word.capitalize())
    ]
)
# An unquoted value of fewer than 4 characters, or of letters and `_` only, is code to `_spaced_option`
# (`--token T`, `--password PASSWORD`): no match either. Whether the value is one is told first (a
# bounded test), before the name is read for a secret word: `" --token T" * 4800` then costs no search.
_OPTION_VALUE = r"""'[^'\n]*'|"[^"\n]*"|(?![A-Za-z_]*+(?:[\s'"`;|&<>]|\Z))[^\s'"`;|&<>]{4,}"""
_SPACED_OPTION = re.compile(
    r"--(?<!\S--)"
    r"""(?=[\w\-]*+[ \t]++(?!-)(?:['"]|(?![A-Za-z_]*+(?:[\s'"`;|&<>]|\Z))[^\s'"`;|&<>]{4}))"""
    rf"(?=[\w\-]*?(?:{_OPTION_SECRET_WORDS}))"
    rf"(?P<name>[A-Za-z][\w\-]*+)[ \t]++(?P<value>{_OPTION_VALUE})"
)


# `MYSQL_PWD=...` (mysql's password variable; `PWD` and `OLDPWD` are directories and have no `_`): a
# word of capitals, digits and single underscores starting with a capital (`MYSQL_PWD`), then `=` and
# the value. The name comes before the one literal the shape has, so the text is read reversed
# (`_env_pwds`), where `=DWP_` comes first and lets `re` skip to candidates: forward, a try at every
# capital letter cost a text of near misses (`"A_PWD=;" * 6857`) most of the time of its other rules.
# The name is read back to its start (`(?!\w)` after it, as `\b` before it), and only a candidate whose
# value may start after the `=` (behind it in the reversed text) is looked at further.
_ENV_PWD_REVERSED = re.compile(r"=DWP_(?<=[^\s`;]=DWP_)(?:[A-Z0-9]++_)*+[A-Z0-9]*+(?<=[A-Z])(?!\w)")
_ENV_PWD_VALUE = re.compile(r"[^\s\"'`;]+|\"[^\"\n]*\"|'[^'\n]*'")


def _env_pwds(text: str) -> Iterator[tuple[int, int, str]]:
    """Each `NAME_PWD=value`'s value, left to right, as a regex matching the name, `_PWD=` and the value
    (and declining references) replaced them: a value holding the next one hides it."""
    size = len(text)
    # (where the name starts, where its value starts), right to left
    names = [(size - found.end(), size - found.start()) for found in _ENV_PWD_REVERSED.finditer(text[::-1])]
    copied = 0
    for start, at in reversed(names):
        if start < copied or (value := _ENV_PWD_VALUE.match(text, at)) is None:
            continue
        copied = value.end()
        quote = value[0][0] if value[0][0] in "'\"" else ""
        inner = value[0][1:-1] if quote else value[0]
        if inner and not _is_reference(inner):
            yield at, value.end(), f"{quote}[REDACTED:password]{quote}"


def _flags(*, spaced: str = "", glued: str = "", value: str = "") -> re.Pattern[str]:
    """Flags whose value follows after spaces or `=` (`spaced`) or directly (`glued`: `-pSECRET`), the
    value where `value` (a lookahead) holds."""
    forms = []
    if spaced:
        forms.append(rf"(?<!\S)(?:{spaced})(?:[ \t]+|=)")
    if glued:
        forms.append(rf"(?<!\S)(?:{glued})(?=[^\s\-])")
    return re.compile(rf"(?P<flag>{'|'.join(forms)})" + value + _CLI_VALUE)


@dataclass(frozen=True, slots=True)
class _Command:
    """A command's password flags. `split`: the value is `user<split>password` and only the password
    is secret (without the separator the tool prompts). `login`: only in a `login` subcommand.

    `first` finds the first place where any of the flags may be (after a space, or `first_tab` after
    a space or tab), a quick test of whether the command's flags are in a text at all.
    `password_flag` is a flag with a value that may be a password, where a flag may start, and
    `next_flag` finds the next one from within a shell command."""

    flags: re.Pattern[str]
    first: re.Pattern[str]
    first_tab: re.Pattern[str]
    password_flag: str
    next_flag: re.Pattern[str]
    split: str | None = None
    login: bool = False


def _cli_command(
    *, spaced: str = "", glued: str = "", split: str | None = None, login: bool = False
) -> _Command:
    """The command whose password flags are `spaced` and `glued` (as in `_flags`)."""
    flags = _flags(spaced=spaced, glued=glued)
    # Searched for, a flag whose value `_cli_secret` declines (no password: empty, a reference, an
    # option) is passed over by `re`, not returned to it: `"mongo -p $X " * 4000` and `"curl -u a: " *
    # 4363` cost a call each. A `user:password` value's password is what follows its first separator.
    if split is None:
        password = rf"(?!['\"]?(?:-|{_REFERENCE})|''|\"\")"
    else:
        after = rf"{re.escape(split)}(?!-|{_REFERENCE})"
        password = (
            rf"(?='[^'\n{split}]*+{after}[^'\n]|\"[^\"\n{split}]*+{after}[^\"\n]"
            rf"|[^\s'\"`;|&<>{split}]*+{after}[^\s'\"`;|&<>])"
        )
    password_flag = _CLI_AT_FLAG + _flags(spaced=spaced, glued=glued, value=password).pattern
    names = []  # each flag's name after its first `-`
    if spaced:
        names.append(rf"(?:{'|'.join(flag[1:] for flag in spaced.split('|'))})(?:[ \t]+|=)")
    if glued:
        names.append(rf"(?:{'|'.join(flag[1:] for flag in glued.split('|'))})")
    # One of these flags and the first character of its value, a password flag of some command.
    first = rf"-(?={_CLI_FLAG_BODY})(?:{'|'.join(names)}){password}[^\s`;|&<>]"
    return _Command(
        flags=flags,
        first=re.compile(" " + first),
        first_tab=re.compile(r"[ \t]" + first),
        password_flag=password_flag,
        next_flag=re.compile(_CLI_WORDS + password_flag),
        split=split,
        login=login,
    )


@functools.cache
def _commands() -> dict[str, _Command]:
    """The password flags of each command, by the name `_command` files it under. Compiled at the first
    text with a flag in it: their patterns take a twentieth of a second to compile, which a process
    that redacts no command line (a search showing transcript paths) should not pay at import."""
    return {
        "mysql": _cli_command(glued="-p"),  # mysql -pSECRET (`-p SECRET` prompts and names a database)
        "sshpass": _cli_command(spaced="-p", glued="-p"),
        "login": _cli_command(spaced="-p|--password", glued="-p", login=True),
        "redis-cli": _cli_command(spaced="-a|--pass"),
        "mongo": _cli_command(spaced="-p|--password"),
        "ldap": _cli_command(spaced="-w"),
        "sqlcmd": _cli_command(spaced="-P"),
        "curl": _cli_command(spaced="-u|--user|-U|--proxy-user", glued="-u|-U", split=":"),
        "smbclient": _cli_command(spaced="-U|--user", glued="-U", split="%"),
    }


def _command(name: str) -> _Command | None:
    name = name.lower()
    commands = _commands()
    if name.startswith(("mysql", "mariadb", "7z")):
        return commands["mysql"]
    if name in ("docker", "podman", "helm"):
        return commands["login"]
    if name.startswith("mongo"):
        return commands["mongo"]
    if name.startswith("ldap"):
        return commands["ldap"]
    return commands.get(name)


def _cli_secret(value: str, split: str | None) -> str | None:
    """What replaces a password flag's `value` (quotes kept), or None when it holds no secret."""
    quote = value[0] if value[0] in "'\"" else ""
    inner = value[1:-1] if quote else value
    kept = ""
    if split is not None:
        user, found, inner = inner.partition(split)
        if not found:
            return None
        kept = user + split
    if not inner or _is_reference(inner) or inner.startswith("-"):
        return None
    return f"{quote}{kept}[REDACTED:password]{quote}"


@functools.cache
def _first_flags() -> tuple[tuple[str, re.Pattern[str], _Command], ...]:
    """For each command name, its command followed by the first of its password flags in its shell
    command (after a `login` word in a command that needs one), and the command's flags."""
    patterns = []
    for name, rest in _CLI_NAMES.items():
        command = _command(name)
        assert command is not None
        # The first `login` will do (atomic: were the flags not found after it, a later one is no help).
        login = rf"(?>{_CLI_WORDS}(?<!\S)login(?!\S))" if command.login else ""
        flag = _CLI_WORDS + command.password_flag
        patterns.append((name, re.compile(_command_word(name, rest) + login + flag), command))
    return tuple(patterns)


@dataclass(frozen=True, slots=True)
class _CommandLineRule:
    """Password flags of known commands, within the shell command each belongs to; see the docstring.

    A flag belongs to the last command named between the start of its shell command (a line start,
    `;`, `|`, `&`) and the flag, at most `_CLI_LOOKBACK` characters back. The rule reads forward from
    each command to its flags (`_first_flags`, then `_Command.next_flag`), so that which command a
    flag belongs to is settled by `re` alone: when each flag that looked like a password flag was taken
    back to its command, a text of nothing but such flags cost up to 90 times what text of its size
    costs (`" -p" * 16000`), and still 8 to 17 times once each stretch was read once, when the command
    had no such flag (`"mysql -p " * 5333`: a call per flag). A command none of whose flags is in the
    text is not read at all (`_Command.first`).
    """

    triggers: tuple[str, ...] = (" -", "\t-")
    """Every password flag follows a space; most text has none, and the names are looked for only then."""
    lower: bool = False

    def apply(self, text: str) -> tuple[str, int]:
        tab = "\t-" in text
        flag = (_CLI_FLAG_TAB if tab else _CLI_FLAG).search(text)
        if flag is None:
            return text, 0
        # A command more than `_CLI_LOOKBACK` before a flag owns none of it.
        start = max(0, flag.start() - _CLI_LOOKBACK)
        firsts: dict[int, re.Match[str] | None] = {}  # each command's first flag, by `id`
        found: list[tuple[int, int, int, str]] = []
        for name, first_flag, command in _first_flags():
            if text.find(name, start) < 0 or (command.login and text.find("login", start) < 0):
                continue
            if (key := id(command)) not in firsts:
                firsts[key] = (command.first_tab if tab else command.first).search(text, flag.start())
            if (first := firsts[key]) is not None:
                found += _passwords(text, first_flag, command, max(0, first.start() - _CLI_LOOKBACK))
        if not found:
            return text, 0
        found.sort()
        pieces: list[str] = []
        copied = 0
        for at, value_start, value_end, replacement in found:
            if at < copied:  # a flag inside the value of the one before
                continue
            pieces.append(text[copied:value_start])
            pieces.append(replacement)
            copied = value_end
        pieces.append(text[copied:])
        return "".join(pieces), len(pieces) // 2


def _passwords(
    text: str, first_flag: re.Pattern[str], command: _Command, pos: int
) -> Iterator[tuple[int, int, int, str]]:
    """(flag, value start, value end, replacement) of each password of the commands `first_flag` finds
    from `pos` on, left to right."""
    while (match := first_flag.search(text, pos)) is not None:
        named = match.start()
        pos = match.end("flag")
        flag: re.Match[str] | None = match
        # Up to the first flag too far from the command for it to own: every later one is further.
        while flag is not None and flag.start("flag") - named <= _CLI_LOOKBACK:
            replacement = _cli_secret(flag.group("value"), command.split)
            if replacement is not None:
                yield flag.start("flag"), flag.start("value"), flag.end("value"), replacement
            pos = flag.end("flag")
            flag = command.next_flag.match(text, pos)


def _package_token(match: re.Match[str]) -> str:
    return f"[REDACTED:{_PACKAGE_TOKEN_KINDS[match.group()[:2]]}]"


def _url_passwords(text: str) -> Iterator[tuple[int, int, str]]:
    """Each URL's password, unless what sits between `host:` and `@` is a port and a path."""
    for _start, start, end, slashed in url_credentials(text):
        secret = text[start:end]
        if not (_is_reference(secret) or (slashed and _PORT_AND_PATH.match(secret))):
            yield start, end, "[REDACTED:url_password]"


def _jwts(text: str) -> Iterator[tuple[int, int, str]]:
    for start, end in jwt_spans(text):
        yield start, end, "[REDACTED:jwt]"


@dataclass(frozen=True, slots=True)
class _ScanRule:
    """A rule whose replacements a scanner yields, as (start, end, replacement), left to right and not
    overlapping: for the shapes no regex finds in linear time (`cairn.transcripts.redact_linear`)."""

    scan: Callable[[str], Iterator[tuple[int, int, str]]]
    triggers: tuple[str, ...]
    lower: bool = False

    def apply(self, text: str) -> tuple[str, int]:
        pieces: list[str] = []
        copied = 0
        for start, end, replacement in self.scan(text):
            pieces.append(text[copied:start])
            pieces.append(replacement)
            copied = end
        if not pieces:
            return text, 0
        pieces.append(text[copied:])
        return "".join(pieces), len(pieces) // 2


def _spaced_option(match: re.Match[str]) -> str:
    """``--password VALUE``: a long option named like a secret, with a value that is no metavar,
    variable, option or code (``--token TOKEN``, ``--password $PW``, ``--password-file path`` stay)."""
    kind = _secret_kind(match.group("name"), env_style=False)
    if kind is None:
        return match.group(0)
    value = match.group("value")
    quoted = value[0] in "'\""
    inner = value[1:-1] if quoted else value
    if not inner or _is_reference(inner) or inner.startswith("-"):
        return match.group(0)
    if not quoted and _looks_like_code(inner, match.group("name"), " "):
        return match.group(0)
    marker = f"[REDACTED:{kind}]"
    return match.group(0)[: match.start("value") - match.start()] + (
        value[0] + marker + value[0] if quoted else marker
    )


_RULES: tuple[_Rule | _ScanRule | _AssignmentRule | _CommandLineRule, ...] = (
    _Rule(_PRIVATE, lambda _match: "[private]", ("<private",), lower=True),
    _Rule(_PRIVATE_KEY, _whole("private_key"), ("PRIVATE KEY",)),
    _Rule(_ANTHROPIC, _whole("anthropic_api_key"), ("sk-ant-",)),
    _Rule(_OPENAI, _whole("openai_api_key"), ("sk-",)),
    _Rule(_GOOGLE, _whole("google_api_key"), ("AIza",)),
    _Rule(_SLACK, _whole("slack_token"), ("xox",)),
    _Rule(_STRIPE, _whole("stripe_key"), ("_live_", "_test_")),
    _Rule(_HUGGINGFACE, _whole("huggingface_token"), ("hf_",)),
    _Rule(_AWS_KEY_ID, _whole("aws_access_key_id"), ("AKIA", "ASIA")),
    _Rule(_AWS_CSV_SECRET, _keep_prefix("aws_secret_access_key"), ("[REDACTED:aws_access_key_id]",)),
    _Rule(_GITHUB, _whole("github_token"), ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    _Rule(_PACKAGE_TOKENS, _package_token, ("glpat-", "npm_", "pypi-", "SG.")),
    _ScanRule(_jwts, ("eyJ",)),
    _Rule(_AUTH_HEADER, _authorization, ("authorization",), lower=True, candidate=_AUTH_CANDIDATE),
    _Rule(_BEARER, _keep_prefix("bearer_token"), ("bearer",), lower=True),
    _ScanRule(_url_passwords, ("://",)),
    _Rule(_NETRC, _keep_prefix("password"), ("machine",)),
    _Rule(_NETRC_DEFAULT, _keep_prefix("password"), ("default",)),
    _Rule(_AWS_SECRET, _keep_prefix("aws_secret_access_key"), ("aws_secret", "awssecret"), lower=True),
    _CommandLineRule(),
    _ScanRule(_env_pwds, ("_PWD=",)),
    _Rule(_SPACED_OPTION, _spaced_option, ("--",)),
    _AssignmentRule(),
)


def redact_with_count(text: str) -> tuple[str, int]:
    """Redact ``text`` and say how many secrets or private sections were replaced."""
    if not text:
        return text, 0
    count = 0
    lowered: str | None = None
    for rule in _RULES:
        if rule.lower:
            if lowered is None:
                lowered = text.lower()
            haystack = lowered
        else:
            haystack = text
        for trigger in rule.triggers:
            if trigger in haystack:
                break
        else:
            continue
        text, replaced = rule.apply(text)
        if replaced:
            count += replaced
            lowered = None
    return text, count


def redact(text: str) -> str:
    """``text`` with ``<private>`` sections and secrets replaced by markers."""
    return redact_with_count(text)[0]


#: A marker `redact` leaves: ``[REDACTED:<kind>]`` (the kind in group 1) or ``[private]``.
LABEL = re.compile(r"\[REDACTED:([a-z0-9_]+)\]|\[private\]")
_LABEL_WORD = re.compile(r"\bREDACTED\b|\[private\]", re.I)


def is_label(name: str) -> bool:
    """Whether `name` is, or holds, a redaction marker (``[REDACTED:jwt]``, ``REDACTED``, ``[private]``)."""
    return _LABEL_WORD.search(name) is not None


def label_only_kinds(text: str) -> frozenset[str]:
    """The kinds of the markers in `text` (``anthropic_api_key``) that it never writes outside a marker:
    such a word there stands for a removed secret, so naming it as a thing would be reading the label."""
    kinds = {match[1] for match in LABEL.finditer(text) if match[1]}
    if not kinds:
        return frozenset()
    rest = LABEL.sub(" ", text)
    return frozenset(k for k in kinds if not re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", rest))
