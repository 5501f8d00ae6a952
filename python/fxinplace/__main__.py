"""`python -m fxinplace ...`: see fxinplace.cli."""

import sys

from fxinplace.cli import main

sys.exit(main())
