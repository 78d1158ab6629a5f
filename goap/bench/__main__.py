"""``python -m goap.bench``: the same as ``goap bench`` (the same options and error handling)."""

import sys

from goap.cli import main

sys.exit(main(["bench", *sys.argv[1:]]))
