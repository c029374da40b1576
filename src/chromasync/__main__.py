"""`python -m chromasync`: the same entry as the console script."""

import sys

from .fastpath import main

sys.exit(main())
