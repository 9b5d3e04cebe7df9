"""Learning from failed searches: weak cairn searches, the reads that followed, and search associations."""
