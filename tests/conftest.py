"""Make the shared test helpers (tests/*.py) importable from every test folder (one per package, plus tests/mpi/)."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
