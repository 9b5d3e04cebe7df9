"""The on-demand file index: project files the coding agent read, edited or found, as searchable chunks."""
