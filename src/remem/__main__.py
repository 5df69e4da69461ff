"""Entry point for ``python -m remem``."""

import sys

from remem.cli import main

sys.exit(main())
