"""Reservation/backfill policies: hand-computed schedules and their guarantees.

The six-job trace ``tests/data/backfill6.swf`` (8 nodes, exact estimates) is replayed under
every ordering x backfill combination; each expected schedule below was worked out by hand
(the comments give the decisive steps). Further tests check the EASY guarantee (with exact
estimates every head job starts exactly at the shadow time computed when it became head),
that conservative backfilling never delays a reservation, that the machine is never
oversubscribed, and that the general (allocator-driven) path gives the same schedules as
the fast count arithmetic on a count-only allocator.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from scheduler.backfill import BACKFILLS, CountProfile, Easy, make_backfill
from scheduler.errors import UserError
from scheduler.job import Job
from scheduler.lifecycle import simulate
from scheduler.metrics import capacity_violations, job_table
from scheduler.ordering import QueueSpec
from scheduler.swf import read_swf
from scheduler.workload import Constant, Exponential, LogNormal, PowerOfTwo, SyntheticWorkload, Uniform
from simhpc.traces import trace_path

DATA = Path(__file__).resolve().parents[1] / "data"

MPP_QUEUES = [QueueSpec(name="express", priority=2, max_nodes=2), QueueSpec(name="batch", priority=1)]
FAIRSHARE_ONLY = {"weight_fairshare": 1.0, "weight_age": 0.0, "weight_size": 0.0}
SIZE_ONLY = {"weight_fairshare": 0.0, "weight_age": 0.0, "weight_size": 1.0}
ORDER_OPTIONS = {"mpp": {"queues": MPP_QUEUES}, "sbp": FAIRSHARE_ONLY}

# Conservative backfilling gives reservations in arrival order (a priority policy only
# orders jobs that arrive together, and compression); with one arrival at a time and exact
# estimates every ordering gives the FCFS plan.
CONSERVATIVE6 = {1: 0, 2: 10, 3: 20, 4: 30, 5: 30, 6: 5}

EXPECTED6 = {
    # FCFS. none: strict order. firstfit: J4 starts at 3 and J5, J6 at 20 (J3 needs all 8
    # nodes and waits for J5 until 120). easy: J4 backfills at 3 on the head's 2 extra
    # nodes; J3 then waits for J4 (shadow 23); J5 and J6 would end after 23. conservative:
    # J3 reserved at 20, J4 after it at 30, J6 fits before J2's reservation.
    ("fcfs", "none"): {1: 0, 2: 10, 3: 20, 4: 30, 5: 30, 6: 30},
    ("fcfs", "firstfit"): {1: 0, 2: 10, 3: 120, 4: 3, 5: 20, 6: 20},
    ("fcfs", "easy"): {1: 0, 2: 10, 3: 23, 4: 3, 5: 33, 6: 33},
    ("fcfs", "conservative"): CONSERVATIVE6,
    # SJF by node-seconds (J6 10 < J4 40 < J1 = J2 60 < J3 80 < J5 100).
    # none: J4 heads at 3; J6 at 10, J2 when J6 ends (15), J3 when J2 ends (25).
    ("saf", "none"): {1: 0, 2: 15, 3: 25, 4: 3, 5: 35, 6: 10},
    ("saf", "firstfit"): {1: 0, 2: 23, 3: 110, 4: 3, 5: 10, 6: 10},
    ("saf", "easy"): {1: 0, 2: 15, 3: 25, 4: 3, 5: 35, 6: 10},
    ("saf", "conservative"): CONSERVATIVE6,
    # LJF: J5 (100) then J3 (80) lead. none: J5 starts at 4 and J3 waits for it (104).
    # easy: J3's shadow is 104, so J2 (10..20) and J4, J6 (from 20) backfill before it.
    ("laf", "none"): {1: 0, 2: 114, 3: 104, 4: 114, 5: 4, 6: 124},
    ("laf", "firstfit"): {1: 0, 2: 23, 3: 110, 4: 3, 5: 10, 6: 10},
    ("laf", "easy"): {1: 0, 2: 10, 3: 104, 4: 20, 5: 4, 6: 20},
    ("laf", "conservative"): CONSERVATIVE6,
    # MPP: express (<= 2 nodes, priority 2) holds J4 and J6; J5 names queue "batch".
    ("mpp", "none"): {1: 0, 2: 15, 3: 25, 4: 3, 5: 35, 6: 10},
    ("mpp", "firstfit"): {1: 0, 2: 23, 3: 110, 4: 3, 5: 10, 6: 10},
    ("mpp", "easy"): {1: 0, 2: 15, 3: 25, 4: 3, 5: 35, 6: 10},
    ("mpp", "conservative"): CONSERVATIVE6,
    # WFP (wait/request)^3 * nodes. At 10: J2 4.37 > J3 4.10 > J6 2; at 20: J6 54 > J3 46.7.
    ("wfp", "none"): {1: 0, 2: 10, 3: 25, 4: 35, 5: 35, 6: 20},
    ("wfp", "firstfit"): {1: 0, 2: 10, 3: 120, 4: 3, 5: 20, 6: 20},
    ("wfp", "easy"): {1: 0, 2: 10, 3: 25, 4: 3, 5: 35, 6: 20},
    ("wfp", "conservative"): CONSERVATIVE6,
    # SBP with fair share only; users: J1 J2 J4 -> 1, J3 J6 -> 2, J5 -> 3. When J1 ends
    # (10) user 1 holds all usage: F1 = 2^-3, so J3, J5, J6 go before J2 and J4.
    # none: J3 at 10; at 20 F3 = 1 > F1 = 0.41 > F2 = 0.30: J5, J2; at 30 J6 then J4.
    # easy: J6 backfills at 10 (ends 15 <= shadow 23); at 15 J5 leads (F3 = 1) and
    # starts, pushing J3's shadow to 115; J2 backfills at 23.
    ("sbp", "none"): {1: 0, 2: 20, 3: 10, 4: 30, 5: 20, 6: 30},
    ("sbp", "firstfit"): {1: 0, 2: 23, 3: 110, 4: 3, 5: 10, 6: 10},
    ("sbp", "easy"): {1: 0, 2: 23, 3: 115, 4: 3, 5: 15, 6: 10},
    ("sbp", "conservative"): CONSERVATIVE6,
}


def six_jobs() -> tuple[list[Job], int]:
    tr = read_swf(DATA / "backfill6.swf")
    return tr.jobs, tr.n_nodes


def starts(res) -> dict[int, float]:
    return {j.job_id: j.start_time for j in res.jobs}


def run(jobs, n_nodes, order, backfill, *, general=False, opts=None, **kw):
    return simulate(
        jobs,
        n_nodes=n_nodes,
        ordering=order,
        backfill=backfill,
        ordering_options=opts if opts is not None else ORDER_OPTIONS.get(order),
        backfill_options={"general": general},
        **kw,
    )


def test_fixture_reads_as_intended():
    jobs, n = six_jobs()
    assert n == 8
    assert [(j.job_id, j.nodes, j.submit_time, j.run_time, j.request_time) for j in jobs] == [
        (1, 6, 0, 10, 10), (2, 6, 1, 10, 10), (3, 8, 2, 10, 10),
        (4, 2, 3, 20, 20), (5, 1, 4, 100, 100), (6, 2, 5, 5, 5),
    ]
    assert jobs[4].queue_name == "batch" and [j.user for j in jobs] == [1, 1, 2, 1, 3, 2]


@pytest.mark.parametrize("order,backfill", sorted(EXPECTED6))
def test_hand_computed_schedule(order, backfill):
    jobs, n = six_jobs()
    res = run(jobs, n, order, backfill)
    assert starts(res) == EXPECTED6[order, backfill]
    assert all(j.end_time == j.start_time + j.run_time for j in res.jobs)
    assert capacity_violations(res.jobs, n) == []


@pytest.mark.parametrize("order,backfill", sorted(EXPECTED6))
def test_general_path_gives_the_hand_computed_schedule(order, backfill):
    jobs, n = six_jobs()
    res = run(jobs, n, order, backfill, general=True)
    assert starts(res) == EXPECTED6[order, backfill]


# Four jobs on 4 nodes; jobs 2-4 arrive together at t=1 while job 1 holds the machine
# until 10, so the ordering decides the order in which conservative reservations are made:
# J2 2 nodes x 10 s (20 node-s, user 1), J3 4 x 4 (16, user 2), J4 1 x 30 (30, user 3).
SIMULTANEOUS = [(1, 0, 4, 10, 1), (2, 1, 2, 10, 1), (3, 1, 4, 4, 2), (4, 1, 1, 30, 3)]
CONSERVATIVE_BY_ORDER = {
    "fcfs": {1: 0, 2: 10, 3: 20, 4: 24},  # J2 10..20, J3 20..24, J4 after J3
    "saf": {1: 0, 2: 14, 3: 10, 4: 14},  # J3 10..14, J2 14..24, J4 14..44
    "laf": {1: 0, 2: 10, 3: 40, 4: 10},  # J4 10..40, J2 10..20, J3 after J4
    "wfp": {1: 0, 2: 10, 3: 20, 4: 24},  # all waited 0 at t=1: arrival order
    "mpp": {1: 0, 2: 10, 3: 40, 4: 10},  # express (1 node) first: J4, then J2, J3
    "sbp": {1: 0, 2: 14, 3: 10, 4: 14},  # size only: J3 (4), J2 (2), J4 (1)
}


def simultaneous_jobs() -> list[Job]:
    return [Job(job_id=i, job_size=n, submit_time=s, request_time=r, run_time=r, user=u)
            for i, s, n, r, u in SIMULTANEOUS]


@pytest.mark.parametrize("general", [False, True])
@pytest.mark.parametrize("order", sorted(CONSERVATIVE_BY_ORDER))
def test_conservative_reserves_simultaneous_arrivals_in_priority_order(order, general):
    opts = {"mpp": {"queues": [QueueSpec(name="express", priority=2, max_nodes=1), QueueSpec(name="batch", priority=1)]},
            "sbp": SIZE_ONLY}.get(order)
    res = run(simultaneous_jobs(), 4, order, "conservative", general=general, opts=opts)
    assert starts(res) == CONSERVATIVE_BY_ORDER[order]


@pytest.mark.parametrize("general", [False, True])
def test_conservative_compresses_after_an_early_end(general):
    # J1 requests 10 s but ends at 5. Before that: J2 reserved 10..20, J3 (4 nodes) 20..30,
    # J4 30..45. Compression at 5 moves each in turn: J2 -> 5, J3 -> 15, J4 -> 25.
    jobs = [
        Job(job_id=1, job_size=4, submit_time=0, request_time=10, run_time=5),
        Job(job_id=2, job_size=2, submit_time=1, request_time=10, run_time=10),
        Job(job_id=3, job_size=4, submit_time=2, request_time=10, run_time=10),
        Job(job_id=4, job_size=2, submit_time=3, request_time=15, run_time=15),
    ]
    res = simulate(jobs, n_nodes=4, backfill="conservative", backfill_options={"general": general},
                   record_reservations=True)
    assert starts(res) == {1: 0, 2: 5, 3: 15, 4: 25}
    history = {}
    for _, jid, t in res.reservation_log:
        history.setdefault(jid, []).append(t)
    assert history == {1: [0], 2: [10, 5], 3: [20, 15], 4: [30, 25]}


# -- guarantees on larger workloads ------------------------------------------------------

def synthetic(n=300, seed=1, exact=True, max_size=32, gap=120.0):
    spec = SyntheticWorkload(
        n_jobs=n,
        inter_arrival=Exponential(mean=gap),
        size=PowerOfTwo(low=1, high=max_size),
        run_time=LogNormal(median=600.0, sigma=1.0),
        request_factor=Constant(value=1.0) if exact else Uniform(low=1.0, high=4.0),
        max_run_time=20000.0,
    )
    return spec.generate(seed)


def lublin(limit=1500):
    path = trace_path("lublin_256.swf")
    tr = read_swf(path, limit=limit)
    return tr.jobs, tr.n_nodes


@pytest.mark.parametrize("source", ["synthetic", "lublin"])
def test_easy_head_starts_exactly_at_its_first_shadow_time_with_exact_estimates(source):
    jobs, n = (synthetic(), 32) if source == "synthetic" else lublin()
    assert all(j.request_time == j.run_time for j in jobs)
    res = simulate(jobs, n_nodes=n, backfill="easy", record_reservations=True)
    heads = [j for j in res.jobs if j.reservation_time is not None]
    assert len(heads) > 20  # the workload does make jobs wait
    for j in heads:
        assert j.start_time == j.reservation_time, j
    # Every later shadow time computed for a head is the same one.
    first = {j.job_id: j.reservation_time for j in heads}
    for _, jid, t in res.reservation_log:
        assert t == first[jid]
    # Recording changes nothing.
    plain = simulate(jobs, n_nodes=n, backfill="easy")
    assert job_table(plain.jobs).equals(job_table(res.jobs))


@pytest.mark.parametrize("general", [False, True])
@pytest.mark.parametrize("exact", [True, False])
def test_conservative_never_delays_a_reservation(exact, general):
    jobs = synthetic(n=150 if general else 400, seed=3, exact=exact)
    res = simulate(jobs, n_nodes=32, backfill="conservative", backfill_options={"general": general},
                   record_reservations=True)
    history: dict[int, list[float]] = {}
    for _, jid, t in res.reservation_log:
        history.setdefault(jid, []).append(t)
    moved = 0
    for j in res.jobs:
        h = history[j.job_id]
        assert all(b <= a for a, b in zip(h, h[1:])), (j.job_id, h)
        assert j.start_time == h[-1], (j.job_id, h, j.start_time)  # starts when due
        moved += h[-1] < h[0]
    if exact:
        assert moved == 0
    else:
        assert moved > 10  # early ends did compress the plan
    assert capacity_violations(res.jobs, 32) == []
    plain = simulate(jobs, n_nodes=32, backfill="conservative", backfill_options={"general": general})
    assert job_table(plain.jobs).equals(job_table(res.jobs))


@pytest.mark.parametrize("backfill", sorted(BACKFILLS))
@pytest.mark.parametrize("order", ["fcfs", "sjf", "ljf", "saf", "laf", "sbp", "mpp", "wfp"])
def test_capacity_is_never_exceeded(order, backfill):
    jobs = synthetic(n=200, seed=7, exact=False, gap=60.0)
    res = simulate(jobs, n_nodes=32, ordering=order, backfill=backfill)
    assert capacity_violations(res.jobs, 32) == []
    assert all(j.start_time >= j.submit_time for j in res.jobs)
    assert all(j.end_time - j.start_time <= j.request_time for j in res.jobs)  # killed at walltime


@pytest.mark.parametrize("backfill", ["none", "firstfit", "easy", "easy-sjbf"])
@pytest.mark.parametrize("order", ["fcfs", "sjf", "wfp"])
@pytest.mark.parametrize("exact", [True, False])
def test_general_path_equals_count_arithmetic_on_firstfree(order, backfill, exact):
    jobs = synthetic(n=250, seed=11, exact=exact, gap=90.0)
    fast = simulate(jobs, n_nodes=32, ordering=order, backfill=backfill)
    slow = simulate(jobs, n_nodes=32, ordering=order, backfill=backfill, backfill_options={"general": True})
    assert [(j.job_id, j.start_time, j.end_time) for j in fast.jobs] == [(j.job_id, j.start_time, j.end_time) for j in slow.jobs]
    assert all(np.array_equal(a.assigned_nodes, b.assigned_nodes) for a, b in zip(fast.jobs, slow.jobs))


def test_general_easy_equals_count_easy_on_lublin():
    jobs, n = lublin(limit=800)
    fast = simulate(jobs, n_nodes=n, backfill="easy")
    slow = simulate(jobs, n_nodes=n, backfill="easy", backfill_options={"general": True})
    assert [j.start_time for j in fast.jobs] == [j.start_time for j in slow.jobs]


def test_backfilling_beats_strict_order_on_wait():
    jobs = synthetic(n=300, seed=5, gap=60.0)
    waits = {b: np.mean([j.start_time - j.submit_time for j in simulate(jobs, n_nodes=32, backfill=b).jobs])
             for b in ("none", "easy", "conservative")}
    assert waits["easy"] < waits["none"] and waits["conservative"] < waits["none"]


# -- reference implementation ------------------------------------------------------------

def reference_schedule(jobs: list[Job], n_nodes: int, policy: str, order_key) -> dict[int, float]:
    """A deliberately plain event loop (no kernel) for none/firstfit/easy on node counts."""
    pending = sorted(jobs, key=lambda j: (j.submit_time, j.job_id))
    queue: list[Job] = []
    running: list[tuple[float, float, Job]] = []  # (actual end, expected end, job)
    free = n_nodes
    start: dict[int, float] = {}
    times = sorted({j.submit_time for j in jobs})
    i = 0
    while times:
        t = times.pop(0)
        for r in [r for r in running if r[0] == t]:
            running.remove(r)
            free += r[2].nodes
        while i < len(pending) and pending[i].submit_time == t:
            queue.append(pending[i])
            i += 1
        queue.sort(key=lambda j: (order_key(j), j.submit_time, j.job_id))

        def launch(j):
            nonlocal free
            free -= j.nodes
            end = t + min(j.run_time, j.request_time)
            running.append((end, t + j.request_time, j))
            start[j.job_id] = t
            queue.remove(j)
            if end not in times:
                times.append(end)
                times.sort()

        while queue and queue[0].nodes <= free:
            launch(queue[0])
        if policy == "firstfit":
            for j in list(queue):
                if j.nodes <= free:
                    launch(j)
        elif policy == "easy" and queue:
            head = queue[0]
            avail, shadow = free, None
            for end in sorted({r[1] for r in running}):
                avail += sum(r[2].nodes for r in running if r[1] == end)
                if avail >= head.nodes:
                    shadow, extra = end, avail - head.nodes
                    break
            for j in list(queue[1:]):
                if j.nodes > free:
                    continue
                if t + j.request_time <= shadow:
                    launch(j)
                elif j.nodes <= extra:
                    extra -= j.nodes
                    launch(j)
    return start


@pytest.mark.parametrize("backfill", ["none", "firstfit", "easy"])
@pytest.mark.parametrize("order", ["fcfs", "sjf", "ljf", "saf", "laf"])
@pytest.mark.parametrize("seed", [1, 2])
def test_matches_a_plain_reference_implementation(order, backfill, seed):
    jobs = synthetic(n=200, seed=seed, exact=False, gap=80.0)
    key = {"fcfs": lambda j: 0, "sjf": lambda j: j.request_time, "ljf": lambda j: -j.request_time,
           "saf": lambda j: j.nodes * j.request_time, "laf": lambda j: -j.nodes * j.request_time}[order]
    res = simulate(jobs, n_nodes=32, ordering=order, backfill=backfill)
    assert starts(res) == reference_schedule(jobs, 32, backfill, key)


def reference_conservative(jobs: list[Job], n_nodes: int, order_key) -> dict[int, float]:
    """A deliberately plain conservative backfilling on node counts (no kernel, no profile
    kept between events): every queued job holds a reservation, the earliest slot that
    delays no other; after an early end each reservation, in priority order, is re-made at
    its earliest slot; jobs start when their reservation comes."""
    pending = sorted(jobs, key=lambda j: (j.submit_time, j.job_id))
    queue: list[Job] = []
    running: list[tuple[float, float, Job]] = []  # (actual end, expected end, job)
    res: dict[int, float] = {}
    start: dict[int, float] = {}
    times = sorted({j.submit_time for j in jobs})
    i = 0

    def slot_end(s, r):
        return s + r if r > 0 else math.nextafter(s, math.inf)

    def earliest(t, job):
        # Free-node changes after t: running jobs' expected ends, the other reservations.
        deltas = [(e, j.nodes) for _, e, j in running]
        for q in queue:
            if q is not job and q.job_id in res:
                deltas += [(res[q.job_id], -q.nodes), (slot_end(res[q.job_id], q.request_time), q.nodes)]
        base = n_nodes - sum(j.nodes for _, _, j in running)

        def free(u):
            return base + sum(d for v, d in deltas if v <= u)

        for c in sorted({t} | {v for v, d in deltas if d > 0 and v > t}):
            e = slot_end(c, job.request_time)
            if all(free(u) >= job.nodes for u in [c] + [v for v, _ in deltas if c < v < e]):
                return c
        raise AssertionError("no slot")

    while times:
        t = times.pop(0)
        ended = [r for r in running if r[0] == t]
        early = any(r[0] < r[1] or r[2].start_time == t for r in ended)
        for r in ended:
            running.remove(r)
        while i < len(pending) and pending[i].submit_time == t:
            queue.append(pending[i])
            i += 1
        queue.sort(key=lambda j: (order_key(j), j.submit_time, j.job_id))
        if early:
            for q in queue:
                if q.job_id in res and res[q.job_id] > t:
                    res[q.job_id] = earliest(t, q)
        for q in queue:
            if q.job_id not in res:
                res[q.job_id] = earliest(t, q)
        for q in [q for q in queue if res[q.job_id] <= t]:
            queue.remove(q)
            del res[q.job_id]
            q.start_time = start[q.job_id] = t
            running.append((t + min(q.run_time, q.request_time), t + q.request_time, q))
        wakeups = {r[0] for r in running} | set(res.values())
        times = sorted(set(times) | {u for u in wakeups if u > t})
        if any(r[0] == t for r in running):  # a zero-length job ends at this instant
            times.insert(0, t)
    return start


@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("order", ["fcfs", "sjf", "ljf", "saf", "laf"])
@pytest.mark.parametrize("seed", [1, 2])
def test_conservative_matches_a_plain_reference_implementation(order, exact, seed):
    jobs = synthetic(n=120, seed=seed, exact=exact, max_size=16, gap=100.0)
    key = {"fcfs": lambda j: 0, "sjf": lambda j: j.request_time, "ljf": lambda j: -j.request_time,
           "saf": lambda j: j.nodes * j.request_time, "laf": lambda j: -j.nodes * j.request_time}[order]
    res = simulate(jobs, n_nodes=16, ordering=order, backfill="conservative")
    assert starts(res) == reference_conservative([j.fresh() for j in jobs], 16, key)


# -- pieces ------------------------------------------------------------------------------

def test_count_profile_find_and_add():
    p = CountProfile(0.0, 2, [], 1e-300)
    p.times, p.free = [0.0, 10.0, 20.0], [2, 0, 4]
    assert p.find(2, 10) == 0.0
    assert p.find(2, 11) == 20.0
    assert p.find(3, 1) == 20.0
    assert p.find(1, 0) == 0.0
    assert p.find(2, 11, before=20.0) is None
    p.add(20.0, 25.0, -3)
    assert (p.times, p.free) == ([0.0, 10.0, 20.0, 25.0], [2, 0, 1, 4])
    assert p.find(2, 3) == 0.0 and p.find(2, 12) == 25.0
    p.trim(22.0)
    assert (p.times, p.free) == ([22.0, 25.0], [1, 4])


def test_unknown_backfill_lists_the_valid_names():
    with pytest.raises(UserError, match="unknown backfill policy 'eazy'.*none, firstfit, easy, easy-sjbf, conservative"):
        make_backfill("eazy")
    with pytest.raises(UserError, match="takes no option"):
        make_backfill("easy", reserve=2)
    with pytest.raises(UserError, match="takes no option"):
        make_backfill("conservative", depth=2)
    assert isinstance(make_backfill("easy"), Easy)
