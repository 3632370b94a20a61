"""The benchmark scripts run end to end on tiny inputs and end with their JSON line.

These check that the scripts work and that what they compare is the same simulation
(identical event counts); they time nothing. The figures come from running the scripts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
MPIRUN = shutil.which("mpirun", path=os.path.dirname(sys.executable)) or shutil.which("mpirun")


def _run(*argv: str) -> tuple[str, dict]:
    out = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=300, check=True)
    return out.stdout, json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed (pip install '.[mpi]')")
def test_bench_parallel_compares_the_same_events_at_every_rank_count():
    text, res = _run(str(SCRIPTS / "bench_parallel.py"), "--lps", "120", "--end", "6", "--rounds", "1", "--ranks", "2,3")
    assert res["bench"] == "parallel" and set(res["speedup"]) == {"2", "3"}
    for p in ("2", "3"):
        rows = [res["results"][f"{p}:{how}"] for how in ("seq", "1", p)]
        assert len({r["events"] for r in rows}) == 1 and rows[0]["events"] > 0
        assert rows[0]["windows"] == 0 and rows[1]["windows"] > 0
        assert rows[1]["remote_fraction"] == 0 and rows[2]["remote_fraction"] > 0.05
        assert res["speedup"][p] > 0 and res["p1_vs_sequential"][p] > 0
    assert "speedup" in text.splitlines()[1]  # the table's header


def test_bench_parallel_refuses_p_of_one():
    out = subprocess.run([sys.executable, str(SCRIPTS / "bench_parallel.py"), "--ranks", "1,2"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "P > 1" in out.stderr


def test_bench_kernel_runs_every_implementation_on_a_tiny_model():
    # SimPy comes with the bench extra only: the SimPy baselines are left out here.
    impls = "pdes-service,pdes-process,bare-greenlet,bare-callback"
    _, res = _run(str(SCRIPTS / "bench_kernel.py"), "--sizes", "50", "--events", "4", "--rounds", "1", "--impls", impls)
    assert res["bench"] == "kernel"
    rates = res["events_per_s"]
    assert set(rates) == set(impls.split(","))
    assert set(res["ratios"]) == {"pdes-process/bare-greenlet", "pdes-service/bare-callback"}
    assert all(v["50"] > 0 for v in rates.values())
