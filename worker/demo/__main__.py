"""``python -m worker.demo``: the same as ``dora demo``."""

import sys

from worker.demo.cli import main

sys.exit(main())
