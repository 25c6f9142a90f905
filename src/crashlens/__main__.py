"""`python -m crashlens`."""

from crashlens.cli import main

main()
