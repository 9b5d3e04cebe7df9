"""The demo session cairn ships: a short Claude Code transcript written by the cairn team."""
