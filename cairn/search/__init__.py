"""Search over what cairn remembers: hybrid idea/span/message search, content search, show and timeline."""
