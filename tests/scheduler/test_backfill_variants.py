"""Backfilling variants: reservation depth k, EASY-SJBF, EASY under non-FCFS orders.

Small schedules are worked out by hand (comments give the decisive steps); depth k is also
checked against a deliberately plain reference implementation on random workloads, and
depth 1 on a count profile against the classic EASY arithmetic.
"""

from __future__ import annotations

import pytest

from scheduler.backfill import BACKFILLS, EasySJBF, make_backfill
from scheduler.errors import UserError
from scheduler.job import Job
from scheduler.lifecycle import simulate
from scheduler.metrics import capacity_violations
from scheduler.workload import Exponential, LogNormal, PowerOfTwo, SyntheticWorkload, Uniform
from tests_support import load_test_module


def J(jid, nodes, submit, run, request=None, **kw):
    return Job(job_id=jid, job_size=nodes, submit_time=submit, run_time=run,
               request_time=run if request is None else request, **kw)


def starts(res):
    return {j.job_id: j.start_time for j in res.jobs}


def synthetic(n=250, seed=1, gap=100.0):
    spec = SyntheticWorkload(
        n_jobs=n,
        inter_arrival=Exponential(mean=gap),
        size=PowerOfTwo(low=1, high=32),
        run_time=LogNormal(median=600.0, sigma=1.0),
        request_factor=Uniform(low=1.0, high=4.0),
        max_run_time=20000.0,
    )
    return spec.generate(seed)


# 4 nodes. J1 holds 2 nodes until 100; J2 (3 nodes) is the blocked head, shadow 100 with
# 1 extra node; J3 needs the whole machine; J4 (1 node, 200 s) arrives last.
DEPTH_JOBS = [(1, 2, 0, 100), (2, 3, 1, 10), (3, 4, 2, 10), (4, 1, 3, 200)]


def test_depth_two_protects_the_second_blocked_job():
    jobs = [J(*t) for t in DEPTH_JOBS]
    # depth 1: J4 fits the head's extra node, so it backfills at 3 and runs to 203; J3
    # (4 nodes) then waits for it.
    assert starts(simulate(jobs, n_nodes=4, backfill="easy")) == {1: 0, 2: 100, 3: 203, 4: 3}
    # depth 2: J3 holds [110, 120); J4 would still run then, so it waits until 120.
    two = simulate(jobs, n_nodes=4, backfill="easy", backfill_options={"depth": 2})
    assert starts(two) == {1: 0, 2: 100, 3: 110, 4: 120}
    assert {j.job_id: j.reservation_time for j in two.jobs} == {1: None, 2: 100, 3: 110, 4: 120}
    # Every blocked job holds one here, as under conservative backfilling.
    assert starts(simulate(jobs, n_nodes=4, backfill="conservative")) == starts(two)


def test_easy_sjbf_tries_the_shortest_candidate_first():
    # 4 nodes; J2 (whole machine) is the head with shadow 100 and no extra node. J3 (95 s)
    # and J4 (50 s) arrive together and both end before the shadow, but only one fits.
    jobs = [J(1, 2, 0, 100), J(2, 4, 1, 10), J(3, 2, 2, 95), J(4, 2, 2, 50)]
    # EASY takes J3 (queue order); J4 would end after the shadow at 97 and waits for J2.
    assert starts(simulate(jobs, n_nodes=4, backfill="easy")) == {1: 0, 2: 100, 3: 2, 4: 110}
    # EASY-SJBF takes J4; at 52 J3 would end after the shadow and waits for J2.
    assert starts(simulate(jobs, n_nodes=4, backfill="easy-sjbf")) == {1: 0, 2: 100, 3: 110, 4: 2}
    assert isinstance(make_backfill("easy-sjbf"), EasySJBF)


def test_easy_sjbf_orders_candidates_by_estimate_not_request():
    jobs = [J(1, 2, 0, 100), J(2, 4, 1, 10), J(3, 2, 2, 30, request=95), J(4, 2, 2, 50, request=60)]
    # User estimates: J4 (60) before J3 (95). Exact estimates: J3 (30) before J4 (50).
    assert starts(simulate(jobs, n_nodes=4, backfill="easy-sjbf"))[4] == 2
    exact = simulate(jobs, n_nodes=4, backfill="easy-sjbf", estimate="exact")
    assert starts(exact)[3] == 2


def test_easy_under_sjf_moves_the_reservation_to_a_new_head():
    # J2 (4 nodes, 50 s) becomes head at 1 with a reservation at 100. J3 (3 nodes, 10 s)
    # arrives at 2 and sorts before it under sjf: J3 is the new head and takes the
    # reservation at 100; J2's promise lapses and it starts when J3 ends.
    jobs = [J(1, 2, 0, 100), J(2, 4, 1, 50), J(3, 3, 2, 10)]
    res = simulate(jobs, n_nodes=4, ordering="sjf", backfill="easy")
    by = {j.job_id: j for j in res.jobs}
    assert starts(res) == {1: 0, 2: 110, 3: 100}
    assert by[2].reservation_time == 100 and by[2].start_time > by[2].reservation_time
    assert by[3].reservation_time == 100
    fcfs = simulate(jobs, n_nodes=4, ordering="fcfs", backfill="easy")
    assert starts(fcfs) == {1: 0, 2: 100, 3: 150}


@pytest.mark.parametrize("order", ["fcfs", "sjf", "wfp"])
@pytest.mark.parametrize("sjbf", [False, True])
def test_depth_one_on_a_profile_equals_classic_easy(order, sjbf):
    jobs = synthetic(seed=3)
    name = "easy-sjbf" if sjbf else "easy"
    classic = simulate(jobs, n_nodes=32, ordering=order, backfill=name)
    bf = make_backfill(name)
    bf._profile = True  # the depth-k planner with k = 1
    prof = simulate(jobs, n_nodes=32, ordering=order, backfill=bf)
    assert starts(prof) == starts(classic)


def reference_depth(jobs: list[Job], n_nodes: int, depth: int, order_key, sjbf: bool = False) -> dict[int, float]:
    """A deliberately plain k-reservation backfilling on node counts (no kernel, no profile
    object): at each event, in queue order, a job starts if it fits now for its whole
    estimate given the reservations made so far in the pass, else it is reserved at the
    earliest end instant where it fits, until ``depth`` jobs are reserved; the rest
    backfill the same way (shortest request first with ``sjbf``)."""
    pending = sorted(jobs, key=lambda j: (j.submit_time, j.job_id))
    queue: list[Job] = []
    running: list[tuple[float, float, Job]] = []  # (actual end, expected end, job)
    start: dict[int, float] = {}
    times = sorted({j.submit_time for j in jobs})
    i = 0
    while times:
        t = times.pop(0)
        running = [r for r in running if r[0] != t]
        while i < len(pending) and pending[i].submit_time == t:
            queue.append(pending[i])
            i += 1
        queue.sort(key=lambda j: (order_key(j), j.submit_time, j.job_id))
        iv = [(t, r[1], r[2].nodes) for r in running]

        def used(x):
            return sum(k for a, b, k in iv if a <= x < b)

        def fits(s, d, k):
            pts = [s] + [p for a, b, _ in iv for p in (a, b) if s < p < s + d]
            return all(n_nodes - used(p) >= k for p in pts)

        def launch(j):
            end = t + min(j.run_time, j.request_time)
            running.append((end, t + j.request_time, j))
            iv.append((t, t + j.request_time, j.nodes))
            start[j.job_id] = t
            queue.remove(j)
            if end not in times:
                times.append(end)
                times.sort()

        left = depth
        snapshot = list(queue)
        k = 0
        while k < len(snapshot) and left:
            j = snapshot[k]
            k += 1
            if fits(t, j.request_time, j.nodes):
                launch(j)
                continue
            s = next(c for c in sorted({t} | {b for _, b, _ in iv if b > t}) if fits(c, j.request_time, j.nodes))
            iv.append((s, s + j.request_time, j.nodes))
            left -= 1
        rest = snapshot[k:]
        if sjbf:
            rest.sort(key=lambda j: (j.request_time, j.submit_time, j.job_id))
        for j in rest:
            if fits(t, j.request_time, j.nodes):
                launch(j)
    return start


@pytest.mark.parametrize("depth", [1, 2, 4])
@pytest.mark.parametrize("order", ["fcfs", "sjf"])
@pytest.mark.parametrize("sjbf", [False, True])
def test_depth_matches_a_plain_reference_implementation(depth, order, sjbf):
    jobs = synthetic(n=150, seed=depth + 7, gap=60.0)
    key = {"fcfs": lambda j: 0, "sjf": lambda j: j.request_time}[order]
    res = simulate(jobs, n_nodes=32, ordering=order, backfill="easy-sjbf" if sjbf else "easy",
                   backfill_options={"depth": depth})
    assert starts(res) == reference_depth(jobs, 32, depth, key, sjbf)
    assert capacity_violations(res.jobs, 32) == []


def test_depth_changes_the_schedule_and_stays_within_capacity():
    jobs = synthetic(n=300, seed=5, gap=60.0)
    one = starts(simulate(jobs, n_nodes=32, backfill="easy"))
    for depth in (2, 8, 1000):
        res = simulate(jobs, n_nodes=32, backfill="easy", backfill_options={"depth": depth})
        assert capacity_violations(res.jobs, 32) == []
        assert all(j.start_time >= j.submit_time for j in res.jobs)
    assert starts(simulate(jobs, n_nodes=32, backfill="easy", backfill_options={"depth": 8})) != one


def test_bad_depth_and_unsupported_allocator_are_clear_errors():
    with pytest.raises(UserError, match=r"backfill 'easy': depth \(the number of reservations\) must be an integer >= 1, got 0"):
        make_backfill("easy", depth=0)
    with pytest.raises(UserError, match="depth .*must be an integer >= 1"):
        make_backfill("easy-sjbf", depth="all")
    assert "easy-sjbf" in BACKFILLS


def test_depth_on_the_general_path_gives_the_hand_schedule():
    jobs = [J(*t) for t in DEPTH_JOBS]
    res = simulate(jobs, n_nodes=4, backfill="easy", backfill_options={"depth": 2, "general": True})
    assert starts(res) == {1: 0, 2: 100, 3: 110, 4: 120}


ALLOC = load_test_module("scheduler/test_alloc_backfill.py")


@pytest.mark.parametrize("name,topo,opts", ALLOC.CASES[:3], ids=[c[0] for c in ALLOC.CASES[:3]])
@pytest.mark.parametrize("backfill,depth", [("easy", 2), ("easy-sjbf", 3)])
def test_depth_with_topology_aware_allocators_pins_reservations_to_nodes(name, topo, opts, backfill, depth):
    a = ALLOC.alloc(name, topo, **opts)
    jobs = ALLOC.workload(80, 32, seed=2)
    res = simulate(jobs, allocator=a, backfill=backfill, backfill_options={"depth": depth})
    assert capacity_violations(res.jobs, a.n_nodes) == []
    assert all(j.start_time >= j.submit_time for j in res.jobs)
    for x, y in ALLOC.overlapping(res.jobs):  # no node held by two jobs at once
        assert not set(x.assigned_nodes.tolist()) & set(y.assigned_nodes.tolist()), (x.job_id, y.job_id)
    ALLOC.check_isolation(name, topo, res.jobs)
    assert sum(j.reservation_time is not None for j in res.jobs) > 5
