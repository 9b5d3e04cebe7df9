"""`cairn ui`: a local web viewer over the same store ops the CLI and MCP server use (see `app`)."""
