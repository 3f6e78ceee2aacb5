"""`python -m kdissect`: the same as the `kdissect` command."""

from kdissect.cli import main

main()
