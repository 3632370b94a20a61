"""The queue's numpy columns (scheduler.mirror) and the backfill passes that use them.

EASY, EASY-SJBF and depth k pick their backfill candidates from a long queue with one
vectorised comparison on the columns. The columns must stay row for row with the queue
(insertions in the middle under non-FCFS orders, single and bulk removals), and the
schedules must be those of the plain Python walk over the queue (forced here by raising the
queue length from which the columns are used) and of the reference scheduler of the
benchmarks, on workloads whose queues grow to hundreds of jobs.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from scheduler import backfill as bf_mod
from scheduler.backfill import Easy, make_backfill
from scheduler.job import Job
from scheduler.lifecycle import MIRROR_OFF, MIRROR_ON, simulate
from scheduler.load import tile_workload
from scheduler.metrics import capacity_violations
from scheduler.mirror import QueueMirror
from scheduler.workload import Exponential, LogNormal, PowerOfTwo, SyntheticWorkload, Uniform


def loaded(n=600, seed=2, gap=25.0):
    """A workload that overloads 64 nodes: the queue grows to hundreds of jobs."""
    return SyntheticWorkload(
        n_jobs=n,
        inter_arrival=Exponential(mean=gap),
        size=PowerOfTwo(low=1, high=64),
        run_time=LogNormal(median=900.0, sigma=1.2),
        request_factor=Uniform(low=1.0, high=3.0),
        max_run_time=30000.0,
    ).generate(seed)


def starts(res):
    return {j.job_id: j.start_time for j in res.jobs}


def test_mirror_follows_a_list_through_inserts_and_removals():
    rng = random.Random(4)
    m = QueueMirror(capacity=2)
    model: list[tuple[int, float, int]] = []
    for step in range(600):
        op = rng.random()
        if op < 0.55 or not model:
            i = rng.randint(0, len(model))
            row = (rng.randint(1, 64), rng.random() * 1000, step)
            model.insert(i, row)
            m.insert(i, *row)
        elif op < 0.85:
            i = rng.randrange(len(model))
            del model[i]
            m.delete(i)
        else:
            mask = np.array([rng.random() < 0.7 for _ in model], dtype=bool)
            model = [r for r, k in zip(model, mask) if k]
            m.keep(mask)
        assert len(m) == len(model)
        assert m.nodes.tolist() == [r[0] for r in model]
        assert m.estimate.tolist() == [r[1] for r in model]
        assert m.seq.tolist() == [r[2] for r in model]


def test_mirror_keeps_rows_when_the_head_leaves_and_returns():
    # A first-come-first-served queue: jobs join at the tail and leave at the head, so the
    # rows move forward in the buffer; some return near the head and some leave elsewhere.
    rng = random.Random(5)
    m = QueueMirror(capacity=4)
    model: list[tuple[int, float, int]] = []
    for step in range(2000):
        op = rng.random()
        if op < 0.5 or not model:
            i = len(model) if rng.random() < 0.8 else rng.randint(0, min(2, len(model)))
            row = (rng.randint(1, 64), rng.random() * 1000, step)
            model.insert(i, row)
            m.insert(i, *row)
        elif op < 0.95:
            i = 0 if rng.random() < 0.8 else rng.randrange(len(model))
            del model[i]
            m.delete(i)
        else:
            mask = np.array([rng.random() < 0.9 for _ in model], dtype=bool)
            model = [r for r, k in zip(model, mask) if k]
            m.keep(mask)
        assert m.nodes.tolist() == [r[0] for r in model]
        assert m.estimate.tolist() == [r[1] for r in model]
        assert m.seq.tolist() == [r[2] for r in model]
        if model:
            lo = rng.randrange(len(model))
            want = [i for i in range(lo, len(model)) if model[i][0] <= 32]
            assert m.backfill_rows(lo, 32, 0.0, 0.0, 32) == want

        if model:
            lo = rng.randrange(len(model))
            now, end_by = rng.uniform(0, 1e6), rng.uniform(0, 2e6)
            free, extra = rng.randrange(1, 80), rng.randrange(0, 80)
            want = [i for i in range(lo, len(model))
                    if model[i][0] <= free and (model[i][0] <= extra or now + model[i][1] <= end_by)]
            assert m.backfill_rows(lo, free, end_by, now, extra) == want



def test_backfill_rows_end_by_exactly_as_floats_add():
    # now + estimate <= end_by, decided as floats add, also where the sum rounds: large
    # clocks, estimates a few ulps either side of end_by - now, an infinite shadow time.
    rng = random.Random(11)
    for _ in range(400):
        now = rng.choice([rng.uniform(0, 1e8), float(rng.randrange(10**9)), rng.random(), 1e9 + 0.1])
        end_by = now + rng.choice([rng.uniform(0, 1e5), 0.0, float(rng.randrange(86400)), rng.random() * 1e-6])
        if rng.random() < 0.05:
            end_by = math.inf
        e = end_by - now if end_by != math.inf else 1e6
        ests = [e, math.nextafter(e, math.inf), math.nextafter(e, 0.0), e * (1 + 1e-15), e * (1 - 1e-15),
                e + 1.0, max(e - 1.0, 0.0), 0.0] + [rng.uniform(0, 2 * e + 1) for _ in range(8)]
        m = QueueMirror(capacity=4)
        for i, est in enumerate(ests):
            m.insert(i, rng.randint(1, 8), est, i)
        want = [i for i, est in enumerate(ests) if m.nodes[i] <= 6 and (m.nodes[i] <= 2 or now + est <= end_by)]
        assert m.backfill_rows(0, 6, end_by, now, 2) == want


class _Checked(Easy):
    """EASY that checks, at every pass, that the columns (kept while the queue is long)
    are the queue's, row for row."""

    name = "easy"
    seen = 0
    with_columns = 0
    without = 0

    def schedule(self, sched, queue):
        cols = sched.queue_columns(queue)
        if cols is None:
            assert len(queue) < MIRROR_ON
            type(self).without += 1
        else:
            assert len(queue) >= MIRROR_OFF and len(cols) == len(queue)
            assert cols.nodes.tolist() == [j.nodes for j in queue]
            assert cols.estimate.tolist() == [j.estimate for j in queue]
            assert cols.seq.tolist() == [j.seq for j in queue]
            type(self).with_columns += 1
        type(self).seen = max(type(self).seen, len(queue))
        super().schedule(sched, queue)


@pytest.mark.parametrize("order", ["fcfs", "sjf", "laf"])
def test_columns_stay_row_for_row_with_the_queue(order):
    _Checked.seen = _Checked.with_columns = _Checked.without = 0
    res = simulate(loaded(n=300), n_nodes=64, ordering=order, backfill=_Checked())
    assert _Checked.seen > 100  # long queues, many insertions and removals
    assert _Checked.with_columns > 50 and _Checked.without > 10  # kept, dropped and rebuilt
    assert capacity_violations(res.jobs, 64) == []


def test_dynamic_orders_get_no_columns():
    class Probe(Easy):
        got = []

        def schedule(self, sched, queue):
            Probe.got.append(sched.queue_columns(queue))
            super().schedule(sched, queue)

    simulate(loaded(n=80), n_nodes=64, ordering="wfp", backfill=Probe())
    assert Probe.got and all(c is None for c in Probe.got)


@pytest.mark.parametrize("backfill,depth", [("easy", 1), ("easy-sjbf", 1), ("easy", 3), ("easy-sjbf", 2)])
@pytest.mark.parametrize("order", ["fcfs", "sjf"])
def test_vectorised_candidates_give_the_python_walks_schedule(monkeypatch, backfill, depth, order):
    jobs = loaded()
    opts = {"depth": depth} if depth > 1 else None
    fast = simulate(jobs, n_nodes=64, ordering=order, backfill=backfill, backfill_options=opts)
    monkeypatch.setattr(bf_mod, "_VECTOR_MIN", 10**9)
    plain = simulate(jobs, n_nodes=64, ordering=order, backfill=backfill, backfill_options=opts)
    assert starts(fast) == starts(plain)
    assert len({j.start_time for j in fast.jobs}) > 100


@pytest.mark.parametrize("backfill", ["easy", "easy-sjbf"])
@pytest.mark.parametrize("order", ["fcfs", "sjf"])
def test_asking_the_columns_again_after_each_failed_candidate_changes_nothing(monkeypatch, backfill, order):
    # _REQUERY = 1: the candidates are recomputed after every candidate that does not start.
    jobs = loaded()
    asked = []
    index = bf_mod.Easy._index

    def counted(self, *args):
        asked.append(args[1])
        return index(self, *args)

    monkeypatch.setattr(bf_mod.Easy, "_index", counted)
    usual = simulate(jobs, n_nodes=64, ordering=order, backfill=backfill)
    n_usual = len(asked)
    monkeypatch.setattr(bf_mod, "_REQUERY", 1)
    eager = simulate(jobs, n_nodes=64, ordering=order, backfill=backfill)
    assert starts(eager) == starts(usual)
    assert len(asked) - n_usual > n_usual + 20  # the columns were asked again, often


@pytest.mark.parametrize("chunk", [1, 2, 5])
@pytest.mark.parametrize("backfill", ["easy", "easy-sjbf"])
def test_candidates_listed_a_few_at_a_time_change_nothing(monkeypatch, backfill, chunk):
    # The candidate array is turned into a list _CHUNK rows at a time; tiny chunks (and
    # asking again after each miss, so that a chunk runs out between asks) give the same starts.
    jobs = loaded()
    usual = simulate(jobs, n_nodes=64, backfill=backfill)
    monkeypatch.setattr(bf_mod, "_CHUNK", chunk)
    small = simulate(jobs, n_nodes=64, backfill=backfill)
    assert starts(small) == starts(usual)
    monkeypatch.setattr(bf_mod, "_REQUERY", 3)
    assert starts(simulate(jobs, n_nodes=64, backfill=backfill)) == starts(usual)


@pytest.mark.parametrize("backfill", ["easy", "easy-sjbf", "conservative", "none"])
def test_schedules_equal_the_reference_scheduler(scripts_on_path, backfill):
    import sched_reference

    # Conservative backfilling plans every queued job: a shorter workload keeps it quick.
    jobs = loaded(n=200 if backfill == "conservative" else 500, seed=6, gap=20.0)
    res = simulate(jobs, n_nodes=64, backfill=backfill)
    ref = sched_reference.schedule([(j.submit_time, j.nodes, j.run_time, j.request_time) for j in jobs],
                                   64, backfill)
    assert starts(res) == {j.job_id: s for j, s in zip(jobs, ref)}


def test_the_reference_scheduler_rejects_an_unknown_policy(scripts_on_path):
    import sched_reference

    with pytest.raises(ValueError, match="easy-sjbf"):
        sched_reference.schedule([(0.0, 1, 1.0, 1.0)], 4, "firstfit")


@pytest.fixture
def scripts_on_path(monkeypatch):
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "scripts"))


def test_tile_workload_repeats_the_mix_end_to_end():
    base = [Job(job_id=10 + i, job_size=1 + i % 3, submit_time=100.0 + 50.0 * i, run_time=30.0, request_time=60.0,
                preceding_job=10 + i - 1 if i else -1) for i in range(5)]
    out = tile_workload(base, 12)
    assert len(out) == 12 and all(o is not b for o in out for b in base)
    # span 200 s + mean gap 50 s: each repetition starts 250 s later.
    assert [o.submit_time for o in out[:6]] == [100.0, 150.0, 200.0, 250.0, 300.0, 350.0]
    assert out[10].submit_time == 100.0 + 2 * 250.0
    assert len({o.job_id for o in out}) == 12 and out[5].job_id == 10 + 15
    assert out[6].preceding_job == out[5].job_id and out[5].preceding_job == -1
    assert [o.nodes for o in out] == [b.nodes for b in base] * 2 + [base[0].nodes, base[1].nodes]
    with pytest.raises(Exception, match="n_jobs"):
        tile_workload(base, 0)
    with pytest.raises(Exception, match="empty"):
        tile_workload([], 3)


@pytest.mark.parametrize("backfill", ["easy", "easy-sjbf"])
@pytest.mark.parametrize("order", ["fcfs", "sjf"])
@pytest.mark.parametrize("kw", [{}, {"kill_overrun": False}, {"estimate": "recent"}])
def test_a_pass_after_a_quiet_one_tries_only_the_new_jobs_and_decides_the_same(monkeypatch, backfill, order, kw):
    # After a pass that started nothing, with no start or end since, only the jobs submitted
    # since are tried: same starts and the same reservations as full passes, also with
    # overruns (kill_overrun=False, requests below run times) and corrected estimates.
    jobs = loaded(n=400, seed=8)
    if kw.get("kill_overrun") is False:
        for j in jobs[::3]:
            j.request_time = j.run_time / 2
    calls = []
    quiet = Easy._after_quiet

    def counted(self, *a):
        calls.append(quiet(self, *a))
        return calls[-1]

    monkeypatch.setattr(Easy, "_after_quiet", counted)
    fast = simulate(jobs, n_nodes=64, ordering=order, backfill=backfill, record_reservations=True, **kw)
    if order == "fcfs":
        # The short pass was taken (less often with overruns or corrections, which move
        # expected ends; under sjf new jobs rarely sort last).
        assert sum(calls) >= (20 if not kw else 1)
    monkeypatch.setattr(Easy, "_after_quiet", lambda self, *a: False)
    full = simulate(jobs, n_nodes=64, ordering=order, backfill=backfill, record_reservations=True, **kw)
    assert starts(fast) == starts(full)
    assert fast.reservation_log == full.reservation_log


def test_the_benchmark_measures_stand_ins_beside_the_reference():
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "bench_scheduler.py"
    out = subprocess.run([sys.executable, str(script), "--limit", "300", "--repeat", "1", "--tile-to", "700",
                          "--load-factor", "1.3", "--configs", "easy,easy-sjbf,conservative"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    res = json.loads(out.strip().splitlines()[-1])
    assert "STAND-IN" in out and res["jobs"] == 700 and res["tile_to"] == 700 and res["load_factor"] == 1.3
    assert set(res["results"]) == {"fcfs/easy", "fcfs/easy-sjbf", "fcfs/conservative"}
    assert all(r["same_starts"] == 700 for r in res["reference"].values())
    bad = subprocess.run([sys.executable, str(script), "--configs", "easy,fifo"], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "fifo" in bad.stderr and "easy-sjbf" in bad.stderr
