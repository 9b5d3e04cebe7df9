"""cairn: a searchable memory built from coding-agent transcripts."""

__version__ = "0.1.0"
