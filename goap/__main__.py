"""`python -m goap`: the `goap` command."""

import sys

from goap.cli import main

if __name__ == "__main__":
    sys.exit(main())
