"""PHOLD on the kernel: event counts against their expected values, both styles, determinism."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pdes.examples.phold import PholdParams, _renewal_count, lp_digests, run, run_digest
from tests_support import MPIRUN


@pytest.mark.parametrize("style", ["service", "process"])
def test_hop_limited_phold_executes_exactly_n_times_e_times_h_events(style):
    p = PholdParams(n_lps=50, events_per_lp=3, max_hops=7, end_time=1e9, regions=5, remote=0.3)
    sim, st = run(p, style=style, seed=11, comm=None)
    # The kernel also counts the start event of each process in the process style.
    starts = 50 if style == "process" else 0
    assert st.events == 50 * 3 * 7 + starts
    assert sum(lp.count for lp in sim.entities("lp")) == 50 * 3 * 7


@pytest.mark.parametrize("style", ["service", "process"])
def test_phold_event_count_matches_renewal_expectation(style):
    p = PholdParams(n_lps=400, events_per_lp=5, end_time=40.0, lookahead=1.0, mean_delay=1.0)
    _, st = run(p, style=style, seed=3, comm=None)
    expected = p.expected_events()
    # 2,000 independent chains of ~20 events: relative sd ~ 0.3%; allow 2%.
    assert abs(st.events - expected) / expected < 0.02


def test_renewal_count_closed_forms():
    # Pure exponential (shift 0): Poisson process, E[N(t)] = t / mean.
    assert _renewal_count(10.0, 0.0, 2.0) == pytest.approx(5.0, rel=1e-9)
    # Deterministic delays: events at 0, s, 2s, ... < t.
    assert _renewal_count(10.0, 3.0, 0.0) == 4.0


def test_service_and_process_styles_agree_event_for_event():
    p = PholdParams(n_lps=64, events_per_lp=4, end_time=30.0, regions=4, remote=0.5, digest=True)
    s1, _ = run(p, style="service", seed=9, comm=None)
    s2, _ = run(p, style="process", seed=9, comm=None)
    assert lp_digests(s1) == lp_digests(s2)


@pytest.mark.parametrize("regions", [1, 4])
def test_benchmark_fast_paths_draw_exactly_like_the_general_handler(regions):
    # The fast handlers (no digest) must visit the same LPs at the same times: compare
    # per-LP counts and the end state of every LP's stream with the general handler's.
    from pdes.examples import phold

    p = PholdParams(n_lps=64, events_per_lp=4, end_time=30.0, regions=regions, remote=0.4)
    fast, st_fast = run(p, seed=5, comm=None)
    assert type(next(fast.entities("lp"))).__name__ in ("_PlainPholdLP", "_PlainRegionPholdLP")
    sim = phold.Simulator(end_time=p.end_time, lookahead=p.lookahead, seed=5, comm=None)
    sim.add_entities(phold.PholdLP, p.n_lps, p, name="lp", placement="block")
    st_gen = sim.run()
    assert st_fast.events == st_gen.events
    assert [lp.count for lp in fast.entities("lp")] == [lp.count for lp in sim.entities("lp")]
    assert [lp.rng.random() for lp in fast.entities("lp")] == [lp.rng.random() for lp in sim.entities("lp")]


def test_windowed_loop_on_one_rank_equals_sequential_loop():
    p = PholdParams(n_lps=64, events_per_lp=4, end_time=30.0, regions=4, remote=0.5, digest=True)
    s1, st1 = run(p, seed=2, comm=None)
    s2, st2 = run(p, seed=2, comm=None, parallel=True)
    assert run_digest(s1) == run_digest(s2)
    assert st1.events == st2.events
    assert st2.windows > 0 and st1.windows == 0


@pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed (pip install '.[mpi]')")
@pytest.mark.parametrize("ranks", [3])
def test_phold_digest_identical_under_mpirun_with_odd_rank_count(ranks):
    args = ["--lps", "60", "--end", "20", "--regions", "6", "--remote", "0.4", "--digest", "--seed", "4"]
    seq = subprocess.run([sys.executable, "-m", "pdes.examples.phold", *args], capture_output=True, text=True, check=True)
    par = subprocess.run(
        [MPIRUN, "-n", str(ranks), sys.executable, "-m", "pdes.examples.phold", *args],
        capture_output=True, text=True, timeout=120, check=True,
    )
    a = json.loads(seq.stdout.strip().splitlines()[-1])
    b = json.loads(par.stdout.strip().splitlines()[-1])
    assert b["ranks"] == ranks
    assert a["digest"] == b["digest"] and a["events"] == b["events"]
    assert b["remote_fraction"] > 0.1
