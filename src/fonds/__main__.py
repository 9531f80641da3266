"""`python -m fonds`: the same as the `fonds` command."""

from fonds.cli import main

if __name__ == "__main__":
    main()
