"""cairn: a searchable memory built from coding-agent transcripts."""

__version__ = "0.1.0"

# Started as early as cairn loads: the fallback for a command's elapsed time where /proc is missing.
from cairn import clock as _clock  # noqa: F401
