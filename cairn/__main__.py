"""`python -m cairn` runs the command line."""

from cairn.cli import main

main()
