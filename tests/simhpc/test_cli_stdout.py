"""Standard output that cannot be written (``> /dev/full``, a full disk): one line on
stderr and status 1, never a traceback (from a print or from the interpreter's final flush)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from results_helpers import fabricate
from simhpc.results import write_results

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")


def _simhpc_to_full(*argv: str) -> subprocess.CompletedProcess:
    with open("/dev/full", "w") as full:
        return subprocess.run([sys.executable, "-m", "simhpc.cli", *argv], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=300)


@pytest.fixture(scope="module")
def results_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("full") / "r.h5"
    write_results(fabricate(), path, created="2024-01-01T00:00:00+00:00")
    return str(path)


@pytest.mark.parametrize("argv", [
    ["machine", "cab"],
    ["machine", "cab", "--json"],
    ["show", "{results}"],
    ["show", "{results}", "--json"],
    ["run", "--print-config"],
    ["replay", "builtin:lublin_256.swf", "--limit", "20", "--json"],
])
def test_a_full_stdout_is_one_line_and_status_1(results_file, argv):
    p = _simhpc_to_full(*(a.format(results=results_file) for a in argv))
    assert p.returncode == 1, p.stderr
    assert p.stderr == "simhpc: error: cannot write the standard output (No space left on device)\n"


def test_user_mistakes_are_still_status_2_and_a_closed_pipe_is_not_an_error():
    p = _simhpc_to_full("machine", "nope")
    assert p.returncode == 2 and p.stderr.startswith("simhpc: error: unknown machine 'nope'")
    # The reader went away after one line: status 0 and nothing on stderr.
    p = subprocess.run(f"{sys.executable} -m simhpc.cli machine cab | head -1", shell=True, capture_output=True,
                       text=True, timeout=300)
    assert p.stdout.startswith("machine") and p.stderr == ""


def test_stdout_is_restored_after_a_command(capsys):
    from simhpc.cli import main

    before = sys.stdout
    assert main(["machine", "cab", "--json"]) == 0
    assert sys.stdout is before and capsys.readouterr().out.startswith("{")
