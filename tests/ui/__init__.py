"""Tests of the local web viewer (`cairn ui`)."""
