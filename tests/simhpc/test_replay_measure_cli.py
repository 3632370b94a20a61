"""``simhpc replay --tau/--load-factor/--skip-first/--skip-last/--window``: figures, the
results file's record of them, and one-line errors for bad values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simhpc.cli import main

SIX = str(Path(__file__).resolve().parents[1] / "data" / "backfill6.swf")


def run_cli(capsys, *argv):
    code = main(["replay", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_percentiles_classes_and_trim(capsys, tmp_path):
    out_h5 = tmp_path / "r.h5"
    code, out, err = run_cli(capsys, SIX, "--nodes", "8", "--skip-first", "1", "--tau", "1min",
                             "--out", str(out_h5), "--json")
    assert code == 0 and err == ""
    s = json.loads(out.strip().splitlines()[-1])
    # FCFS + EASY starts 0, 10, 23, 3, 33, 33 for submits 0..5: waits 0, 9, 21, 0, 29, 28
    assert s["measured_jobs"] == 5 and s["trim"]["skip_first"] == 1 and s["tau"] == 60
    assert s["wait_p50"] == 21.0 and s["mean_wait"] == pytest.approx(87 / 5)
    assert s["classes"]["by_size"]["class"] == ["1", "2", "5-8"]
    text = out
    assert "measured" in text and "wait p50 / p90 / p99" in text and "(tau 60 s)" in text
    assert "job nodes" in text and "run time" in text
    from simhpc.results import read_results

    r = read_results(out_h5)
    assert r.system["tau"] == 60 and r.system["measured_jobs"] == 5
    assert list(r.system["classes"]["by_run"]["class"]) == s["classes"]["by_run"]["class"]
    assert "skip_first = 1" in r.experiment_toml and "tau = 60.0" in r.experiment_toml
    assert r.summary()["measured_jobs"] == 5


def test_load_factor_compresses_arrivals(capsys):
    code, out, _ = run_cli(capsys, SIX, "--nodes", "8", "--load-factor", "5", "--json")
    s = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and s["load_factor"] == 5.0 and "load factor" in out


@pytest.mark.parametrize("argv, message", [
    (["--tau", "0"], "tau (--tau) (the bounded-slowdown threshold, seconds) must be a finite number in (0, inf), got 0"),
    (["--tau=-5s"], "tau"),
    (["--load-factor", "0"], "load_factor (--load-factor) (divides the inter-arrival times) must be"),
    (["--load-factor", "-1"], "load_factor"),
    (["--skip-first", "4", "--skip-last", "2"], "the trim --skip-first 4 --skip-last 2 leaves no job of the 6"),
    (["--window", "1h:2h"], "leaves no job of the 6 to measure (submit times run from 0 to 5 s)"),
    (["--window", "5"], "write START:END"),
    (["--skip-first", "-3"], "skip_first (--skip-first) must be"),
])
def test_bad_values_are_one_line_errors(capsys, argv, message):
    code, out, err = run_cli(capsys, SIX, "--nodes", "8", *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("simhpc: error: ") and message in err
