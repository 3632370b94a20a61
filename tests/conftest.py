"""Make the shared test helpers importable from tests/ and tests/mpi/."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
