"""`python -m kdissect`: the same command as the `kdissect` script."""

from kdissect.cli import main

main()
