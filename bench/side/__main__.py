"""``python -m bench.side``: see :mod:`bench.side.cli`."""

import sys

from bench.side.cli import main

if __name__ == "__main__":
    sys.exit(main())
