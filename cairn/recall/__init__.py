"""Recall: memory brought back into the coding agent by Claude Code's hooks.

Capture and indexing fill the store whether or not anyone looks; recall is the half that pays for it.
At SessionStart the agent gets a compact index of what matters for its project (open questions and
todos, the latest decisions, fixes and conclusions, the current topic — never the guesses a
conversation abandoned), and at each UserPromptSubmit the few ideas most related to the prompt — each
one line with an id the agent can expand with the MCP `show` tool. Injections are
recorded per session, so a prompt does not repeat what the session was already shown, and an injected
id the agent then expands counts as a hit: `cairn stats` reports how often recall was worth its tokens.
"""
