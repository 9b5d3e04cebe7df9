"""cairn's storage: SQLite (the source of truth, FTS5) and Chroma (vectors derived from it)."""
