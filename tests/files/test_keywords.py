"""document_keywords: definitions first, then frequent words, the stem when it names something."""

from __future__ import annotations

from cairn.files.keywords import document_keywords

COMPONENT = """import React from "react";

export const LoginButton = ({ onLogin }: Props) => {
  const handleClick = () => onLogin();
  return <button onClick={handleClick}>Sign in</button>;
};

export function useSession() {
  return session;
}

export default LoginButton;
"""


def test_the_stem_and_the_definitions_lead() -> None:
    keywords = document_keywords("src/components/LoginButton.tsx", COMPONENT)
    assert keywords[0] == "LoginButton"
    assert "useSession" in keywords[:4]
    assert "handleClick" in keywords


def test_definitions_outrank_frequent_words() -> None:
    text = "class Parser:\n    pass\n" + "token token token token token token token token\n" * 20
    keywords = document_keywords("src/thing.py", text)
    assert keywords.index("Parser") < keywords.index("token")


def test_module_level_names_outrank_methods() -> None:
    text = "class Engine:\n    def start(self):\n        pass\n\ndef ignite():\n    pass\n"
    assert document_keywords("x/__init__.py", text)[:3] == ["Engine", "ignite", "start"]


def test_markdown_headings_are_phrases() -> None:
    text = "# Installation guide\n\nRun the installer.\n\n## Troubleshooting network errors\n\nRetry.\n"
    keywords = document_keywords("docs/README.md", text)
    assert keywords[:2] == ["Installation guide", "Troubleshooting network errors"]


def test_meaningless_stems_and_stopwords_are_left_out() -> None:
    text = "def build_index(self, value):\n    return self.value if value else None\n"
    keywords = document_keywords("pkg/index.py", text)
    assert "index" not in [k.lower() for k in keywords]
    assert not {"self", "return", "value", "none", "def"} & {k.lower() for k in keywords}
    assert keywords[0] == "build_index"


def test_distinct_case_insensitively_limited_and_deterministic() -> None:
    text = "class Widget: pass\nwidget = Widget()\nWIDGET_SIZE = 3\n" + "gadget sprocket lever pulley " * 5
    first = document_keywords("src/widget.py", text, limit=4)
    assert first == document_keywords("src/widget.py", text, limit=4)
    assert len(first) == 4
    assert len({k.lower() for k in first}) == 4
    assert first[0] == "Widget"  # the first spelling in the file


def test_empty_and_odd_input() -> None:
    assert document_keywords("a/b.txt", "") == []
    assert document_keywords("src/LoginForm.vue", "") == ["LoginForm"]
    assert document_keywords("x.py", "def f(): pass", limit=0) == []
    assert document_keywords("ab.bin", "\x00\x01 ### ::: 123 456") == []


def test_a_run_of_letters_without_end_is_no_keyword() -> None:
    keywords = document_keywords("data/blob.py", "x" * 500_000 + "\ndef parse_blob():\n    pass\n")
    assert keywords and all(len(k) <= 64 for k in keywords)
    assert "parse_blob" in keywords
