"""``python -m worker.devlab.demo``: the same as ``dora demo``."""

import sys

from worker.devlab.demo.cli import main

sys.exit(main())
