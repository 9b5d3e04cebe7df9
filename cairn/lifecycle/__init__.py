"""The memory's life cycle: forgetting parts of it, exporting it to a file and importing it elsewhere."""
