"""Topology-aware allocators through the scheduler's backfill policies.

Small synthetic workloads on small machines: the machine's capacity is never exceeded, EASY
heads start at their reservation, conservative reservations are never delayed (exact
estimates), and the interference-free allocators keep every pair of jobs that run at the
same time on disjoint links (T1/T2/T3 over every ECMP route, jigsaw over reserved links)
and torus partitions on disjoint midplanes and wiring.
"""

from __future__ import annotations

import numpy as np
import pytest

from alloc_helpers import machine
from scheduler.allocators import make_allocator
from scheduler.allocators.isolating import reserved_link_ids
from scheduler.lifecycle import simulate
from scheduler.metrics import capacity_violations
from scheduler.workload import Constant, Exponential, LogNormal, PowerOfTwo, SyntheticWorkload, Uniform
from test_alloc_fattree import job_links_all_routes


def workload(n: int, max_size: int, seed: int, exact: bool = True, gap: float = 100.0):
    return SyntheticWorkload(
        n_jobs=n,
        inter_arrival=Exponential(mean=gap),
        size=PowerOfTwo(low=1, high=max_size),
        run_time=LogNormal(median=600.0, sigma=1.0),
        request_factor=Constant(value=1.0) if exact else Uniform(low=1.0, high=3.0),
        max_run_time=20000.0,
    ).generate(seed)


def overlapping(jobs):
    """Pairs of jobs that ran at the same time."""
    ran = sorted((j for j in jobs if j.start_time is not None), key=lambda j: j.start_time)
    for i, a in enumerate(ran):
        for b in ran[i + 1:]:
            if b.start_time >= a.end_time:
                continue
            if a.start_time < b.end_time:
                yield a, b


def alloc(name, topo, **opts):
    t = machine(topo)
    return make_allocator(name, n_nodes=t.n_nodes, topology=t, seed=1, **opts)


CASES = [
    ("jigsaw", "ft3", {}),
    ("t123", "ft3", {}),
    ("treefit", "ft3", {}),
    ("bgq-cfca", "bgq", {"block": (2, 2, 2), "sensitive_fraction": 0.5}),
    ("closestfit", "torus", {"ordering": "hilbert"}),
    ("random", "torus", {}),
]


@pytest.mark.parametrize("name,topo,opts", CASES, ids=[c[0] for c in CASES])
def test_easy_with_topology_aware_allocators(name, topo, opts):
    a = alloc(name, topo, **opts)
    jobs = workload(120, 32, seed=2)
    res = simulate(jobs, allocator=a, backfill="easy", record_reservations=True)
    assert capacity_violations(res.jobs, a.n_nodes) == []
    heads = [j for j in res.jobs if j.reservation_time is not None]
    assert len(heads) > 5
    for j in heads:  # exact estimates: the head starts when its reservation said
        assert j.start_time <= j.reservation_time, (j.job_id, j.start_time, j.reservation_time)
    check_isolation(name, topo, res.jobs)


@pytest.mark.parametrize("name,topo,opts", CASES[:4], ids=[c[0] for c in CASES[:4]])
def test_conservative_reservations_hold_with_topology_aware_allocators(name, topo, opts):
    a = alloc(name, topo, **opts)
    jobs = workload(60, 32, seed=3)
    res = simulate(jobs, allocator=a, backfill="conservative", record_reservations=True)
    assert capacity_violations(res.jobs, a.n_nodes) == []
    history: dict[int, list[float]] = {}
    for _, jid, t in res.reservation_log:
        history.setdefault(jid, []).append(t)
    for j in res.jobs:
        h = history[j.job_id]
        assert all(b <= a for a, b in zip(h, h[1:])), (j.job_id, h)
        assert j.start_time == h[-1]
    check_isolation(name, topo, res.jobs)


@pytest.mark.parametrize("name,topo,opts", [("closestfit", "torus", {}), ("treefit", "ft3", {}), ("vpart", "torus", {"parts": 3}),
                                            ("roundrobin", "torus", {"ordering": "hilbert"})])
def test_count_only_allocators_give_the_same_schedule_on_both_backfill_paths(name, topo, opts):
    jobs = workload(150, 32, seed=4, exact=False, gap=60.0)
    fast = simulate(jobs, allocator=alloc(name, topo, **opts), backfill="easy")
    slow = simulate(jobs, allocator=alloc(name, topo, **opts), backfill="easy", backfill_options={"general": True})
    assert [(j.start_time, j.end_time) for j in fast.jobs] == [(j.start_time, j.end_time) for j in slow.jobs]
    assert all(np.array_equal(x.assigned_nodes, y.assigned_nodes) for x, y in zip(fast.jobs, slow.jobs))


def check_isolation(name, topo, jobs):
    t = machine(topo)
    if name == "jigsaw":
        links = {j.job_id: set(reserved_link_ids(t, j.assigned_nodes.info).tolist()) for j in jobs}
    elif name == "t123":
        links = {j.job_id: job_links_all_routes(topo, j.assigned_nodes) for j in jobs}
    elif name.startswith("bgq"):
        links = {}
        for j in jobs:
            info = j.assigned_nodes.info
            links[j.job_id] = {("mp", m) for m in info.midplanes.tolist()} | {
                ("cable", d, s) for d, c in enumerate(info.cables) for s in c.tolist()}
    else:
        return
    for a, b in overlapping(jobs):
        shared = links[a.job_id] & links[b.job_id]
        assert not shared, f"jobs {a.job_id} and {b.job_id} ran together on {sorted(shared)[:4]}"


def test_simulate_builds_every_topology_allocator_by_name():
    jobs = workload(30, 16, seed=5)
    t = machine("ft3")
    for name in ("jigsaw", "t123", "treefit", "firstfit", "dualend"):
        res = simulate(jobs, n_nodes=t.n_nodes, topology=t, allocator=name, backfill="easy", seed=3)
        assert res.allocator == name and capacity_violations(res.jobs, t.n_nodes) == []
