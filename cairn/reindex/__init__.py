"""`cairn reindex`: rebuild memory from stored messages as a new generation, swapped in per session."""
