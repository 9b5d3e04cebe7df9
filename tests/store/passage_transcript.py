"""A session with long messages: a long assistant answer and a long tool result, each hiding one
fact deep inside where neither the message's vector (its first 256 word pieces) nor, for the clipped
tool result, its stored text reaches."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.builders import Transcript

#: Deep in the tool result's elided middle (line 100 of 150: clipping keeps ~30 lines and ~10).
HIDDEN_FILE = "zanzibar_settings.toml"
#: The last paragraph of the long answer; the query below says the same in other words.
DEEP_SENTENCE = (
    "The nightly export stalls because the network file share drops its file locks whenever the "
    "backup job rotates the disk snapshots, so the export process waits forever on a lock."
)
PARAPHRASE = "why does the overnight data dump hang waiting on a lock during backups"

_FILLER = [
    "The layout of the settings page uses a CSS grid with two columns on wide screens and a single "
    "column on phones. The sidebar collapses into a drawer, the header keeps the search box visible, "
    "and every form field gets its label above it so long translations never overflow the column.",
    "Fonts are loaded with font-display swap and preloaded for the two weights the landing page uses. "
    "The icon set moved from an icon font to inline SVG sprites, which removed a request and made the "
    "icons crisp on high-density displays; colours follow the theme tokens defined in one file.",
    "Unit tests are named after the behaviour they check rather than the function they call. Each test "
    "builds its own fixture data, uses no shared global state, and the slow browser tests live in a "
    "separate folder so the quick suite stays under ten seconds on a laptop.",
    "The changelog is written by hand for every release: one line per user-visible change, grouped into "
    "added, changed and fixed, with a link to the pull request. Internal refactors are left out, and "
    "version numbers follow semantic versioning with a tag pushed by the release script.",
    "Translations live in one JSON file per language. Missing keys fall back to English at runtime, a "
    "lint step lists keys that exist in English only, and plural forms use the ICU message syntax so "
    "languages with several plural categories render numbers correctly in every sentence.",
]

LONG_ANSWER = "\n\n".join([*_FILLER, DEEP_SENTENCE])


def listing(rows: int = 150, hidden_at: int = 100) -> str:
    lines = [f"drwxr-xr-x  2 dev dev 4096 Jan  1 12:{i % 60:02d} module_{i:04d}" for i in range(rows)]
    lines[hidden_at] = f"-rw-r--r--  1 dev dev   77 Jan  1 12:00 {HIDDEN_FILE}"
    return "\n".join(lines)


def long_session(cwd: Path, session_id: str = "5e55a9e0-0000-4000-8000-00000000beef") -> Transcript:
    t = Transcript(cwd, session_id=session_id)
    t.user("What is left to tidy up in the frontend before the release?")
    t.tool("Bash", {"command": "ls -l"}, listing())
    t.say(LONG_ANSWER)
    t.say("Short answer: see above.")
    return t
