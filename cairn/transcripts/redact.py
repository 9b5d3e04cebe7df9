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

Deliberately *not* redacted, to keep code readable: a value separated by a space instead of ``=``/``:``
(``--password hunter2``), and an unquoted letters-only word after a spaced separator
(``password = hunter``), which is indistinguishable from a variable name.

Most text contains no secret at all, so every rule has literal trigger substrings checked with ``in``
first; the regexes run only when a trigger is present.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

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

    def apply(self, text: str) -> tuple[str, int]:
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


def _is_reference(value: str) -> bool:
    """A variable reference, template or placeholder rather than a literal secret."""
    return value.startswith(("$", "%", "{", "<", "[REDACTED", "[private]", "***", "…", "..."))


_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)
_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
# Token patterns start with their literal prefix so `re` can jump straight to candidates; the word
# boundary a leading `\b` would give is checked by a fixed-width lookbehind after the prefix instead.
_ANTHROPIC = re.compile(r"sk-ant-[A-Za-z0-9_\-]{20,}")  # distinctive enough to need no boundary
_OPENAI = re.compile(r"sk-(?<!\wsk-)(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}|[A-Za-z0-9]{20,}\b)")
_GOOGLE = re.compile(r"AIza(?<!\wAIza)[0-9A-Za-z_\-]{35}")
_SLACK = re.compile(r"xox[abposr]-(?<!\wxox[abposr]-)[0-9A-Za-z\-]{10,}")
_STRIPE = re.compile(r"[sr]k_(?<!\w[sr]k_)(?:live|test)_[0-9A-Za-z]{20,}")
_HUGGINGFACE = re.compile(r"hf_(?<!\whf_)[A-Za-z0-9]{30,}\b")
_AWS_KEY_ID = re.compile(r"A[KS]IA(?<!\wA[KS]IA)[0-9A-Z]{16}\b")
_GITHUB = re.compile(
    r"gh[pousr]_(?<!\wgh[pousr]_)[A-Za-z0-9]{36,}\b|github_pat_(?<!\wgithub_pat_)[A-Za-z0-9_]{22,}"
)
_JWT = re.compile(r"eyJ(?<!\weyJ)[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*")
# Case-insensitive rules start with a character class instead of using re.IGNORECASE, which would
# disable `re`'s fast scan for the first character.
_AUTH_HEADER = re.compile(
    r"([Aa](?i:uthorization)[\"']?\s*[:=]\s*[\"']?(?i:bearer|basic|token|digest)\s+)([^\s\"',;]+)"
)
_BEARER = re.compile(r"([Bb](?i:earer)\s+)([A-Za-z0-9._~+/\-]{20,}=*)")
_URL_CREDENTIALS = re.compile(r"(://[^\s:/@'\"\[\]]+:)([^\s@/'\"\[\]]+)(?=@)")
_AWS_SECRET = re.compile(
    r"([Aa](?i:ws_?secret_?access_?key)[\"']?\s*[:=]\s*[\"']?)([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
)
# Anchored on the secret word itself (not on the start of the name) with its case variants spelled out:
# a case-sensitive literal alternation lets `re` skip quickly to candidates, where IGNORECASE or a
# lookahead at every word start costs several times more on code-heavy text. The rest of the name
# before the word is found by scanning backwards in `_redact_assignment`.
_SECRET_WORD_ALTERNATION = "|".join(
    variant
    for word in ("pass", "secret", "token", "key", "credential")
    for variant in (word, word.upper(), word.capitalize())
)
_ASSIGNMENT = re.compile(
    rf"(?:{_SECRET_WORD_ALTERNATION})[\w.\-]*"
    r"(?P<quote>[\"']?)"
    r"(?P<sep>[ \t]*(?::=|=>|=|:)[ \t]*)"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|`[^`\n]*`|[^\s\"'`,;]+)"
)

_SPLIT_NAME = re.compile(r"[_.\-]+|(?<=[a-z0-9])(?=[A-Z])")
_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "pass"})
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
    """The kind of secret a variable/key name holds, or None if the name is not secret-like.

    ``env_style`` (``NAME=value``, no spaces) also accepts upper-case names that merely contain a
    secret word (``SECRET_KEY_BASE``, ``SSH_KEY_PATH``); in code (``STORAGE_KEY = 'todos'``) that
    would be far too eager.
    """
    parts = [part for part in _SPLIT_NAME.split(name.strip("-")) if part]
    if not parts:
        return None
    last = parts[-1].lower()
    if last in _PASSWORD_WORDS:
        return "password"
    if last in _SECRET_WORDS:
        return {"token": "token", "apikey": "api_key"}.get(last, "secret")
    if last == "key" and len(parts) > 1 and parts[-2].lower() in _KEY_QUALIFIERS:
        return "api_key" if parts[-2].lower() == "api" else "secret"
    if env_style and name.isupper() and any(part.lower() in _ENV_WORDS for part in parts):
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


def _redact_assignment(text: str, match: re.Match[str]) -> tuple[int, str] | None:
    """For a match of :data:`_ASSIGNMENT`: where the name starts and the replacement, or None."""
    start = match.start()
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

    triggers: tuple[str, ...] = ("pass", "secret", "token", "key", "credential")
    lower: bool = True

    def apply(self, text: str) -> tuple[str, int]:
        pieces: list[str] = []
        copied = 0  # text[:copied] is already in pieces
        for match in _ASSIGNMENT.finditer(text):
            found = _redact_assignment(text, match)
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


_RULES: tuple[_Rule | _AssignmentRule, ...] = (
    _Rule(_PRIVATE, lambda _match: "[private]", ("<private",), lower=True),
    _Rule(_PRIVATE_KEY, _whole("private_key"), ("PRIVATE KEY",)),
    _Rule(_ANTHROPIC, _whole("anthropic_api_key"), ("sk-ant-",)),
    _Rule(_OPENAI, _whole("openai_api_key"), ("sk-",)),
    _Rule(_GOOGLE, _whole("google_api_key"), ("AIza",)),
    _Rule(_SLACK, _whole("slack_token"), ("xox",)),
    _Rule(_STRIPE, _whole("stripe_key"), ("_live_", "_test_")),
    _Rule(_HUGGINGFACE, _whole("huggingface_token"), ("hf_",)),
    _Rule(_AWS_KEY_ID, _whole("aws_access_key_id"), ("AKIA", "ASIA")),
    _Rule(_GITHUB, _whole("github_token"), ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    _Rule(_JWT, _whole("jwt"), ("eyJ",)),
    _Rule(_AUTH_HEADER, _keep_prefix("authorization"), ("authorization",), lower=True),
    _Rule(_BEARER, _keep_prefix("bearer_token"), ("bearer",), lower=True),
    _Rule(_URL_CREDENTIALS, _keep_prefix("url_password"), ("://",)),
    _Rule(_AWS_SECRET, _keep_prefix("aws_secret_access_key"), ("aws_secret", "awssecret"), lower=True),
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
