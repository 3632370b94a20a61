"""scripts/estimates_backfill.py runs end to end on a short trace prefix (it times nothing here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "estimates_backfill.py"


def test_every_estimate_and_backfill_pair_is_reported_against_the_baseline():
    out = subprocess.run([sys.executable, str(SCRIPT), "--limit", "300"], capture_output=True, text=True,
                         timeout=300, check=True).stdout
    res = json.loads(out.strip().splitlines()[-1])
    rows = res["results"]
    assert res["bench"] == "estimates_backfill" and res["jobs"] == 300 and len(rows) == 16
    assert {r["estimate"] for r in rows} == {"user", "exact", "fmodel(f=1)", "recent"}
    assert {r["backfill"] for r in rows} == {"easy", "easy-sjbf", "easy(depth=4)", "conservative"}
    assert rows[0]["estimate"] == "user" and rows[0]["backfill"] == "easy"
    assert rows[0]["wait_vs_base"] == rows[0]["bsld_vs_base"] == 1.0
    assert all(r["events"] > 0 and r["cpu_s"] >= 0 and r["mean_bsld"] >= 1 for r in rows)
    # Different estimates give different schedules.
    assert len({r["mean_wait"] for r in rows if r["backfill"] == "easy"}) > 1
    assert "wait/base" in out
