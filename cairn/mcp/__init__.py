"""`cairn mcp`: cairn's memory as MCP tools a coding agent calls (search, show, timeline, ...), over stdio.

`server` defines the tools and what the model sees of their results; `backend` decides, call by call,
whether the daemon answers over its socket or the store is opened for that one call.
"""
