"""The daemon: the one long-lived owner of a store, indexing transcripts as Claude Code writes them."""
