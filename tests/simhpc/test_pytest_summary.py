"""Every documented test command ends with pytest's summary line ("N passed in ...").

The project's pytest options (pyproject.toml) are added to every invocation: a ``-q`` there
turned ``pytest -q`` into ``-q -q``, which prints no summary, so a run's outcome could only be
read from the exit status.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


@pytest.mark.parametrize("extra", [[], ["-q"]], ids=["plain", "-q"])
def test_a_run_with_the_project_options_prints_the_summary_line(extra, tmp_path):
    (tmp_path / "test_tiny.py").write_text("def test_one():\n    assert 1 + 1 == 2\n\n\ndef test_two():\n    assert True\n")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", *extra, "-c", str(PYPROJECT), "--rootdir", str(tmp_path),
         "-p", "no:cacheprovider", str(tmp_path / "test_tiny.py")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"^=*\s*2 passed in [\d.]+s", out.stdout, re.M), out.stdout
