"""``python -m simhpc.cli``: the same as the ``simhpc`` console script."""

import sys

from . import console

sys.exit(console())
