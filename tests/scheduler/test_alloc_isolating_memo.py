"""t123 and jigsaw against their reference searches: the memoized, per-state-derived select
must give the very placements (nodes and link reservations) of the straightforward one.

``isolating_reference`` keeps the search as it stood before (verbatim); random streams of
arrivals and departures on small trees query both on the same states: repeated sizes on one
state, copies, states released step by step as backfilling does, and whole FCFS + EASY
replays.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from alloc_helpers import job, machine  # noqa: E402
from isolating_reference import ReferenceJigsaw, ReferenceT123  # noqa: E402
from models.topology import FatTree  # noqa: E402
from scheduler.allocators import make_allocator  # noqa: E402
from scheduler.allocators.isolating import JigsawInfo  # noqa: E402

TREES = ["ft3", "ft3-r8", "ft3-taper", "ft3-par", "ft2"]
KINDS = [("t123", {}), ("t123", {"t3_rule": "whole-pods"}), ("jigsaw", {})]


def pair(tree: str, name: str, opts: dict):
    topo = machine(tree)
    ref_cls = ReferenceJigsaw if name == "jigsaw" else ReferenceT123
    new = make_allocator(name, n_nodes=topo.n_nodes, topology=topo, **opts)
    ref = ref_cls(n_nodes=topo.n_nodes, topology=topo, **opts)
    return new, ref


def same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if not np.array_equal(np.asarray(a), np.asarray(b)):
        return False
    ia, ib = a.info, b.info
    if isinstance(ia, JigsawInfo):
        return (ia.kind == ib.kind and np.array_equal(ia.leaf_ports, ib.leaf_ports)
                and np.array_equal(ia.l2_ports, ib.l2_ports) and ia.nodes_per_full_leaf == ib.nodes_per_full_leaf
                and ia.full_leaf_ports == ib.full_leaf_ports)
    return ia == ib


def check(new, ref, st, n: int, jid: int):
    j = job(jid, n)
    got = new.select(j, st)
    want = ref.select(j, st)
    assert same(got, want), f"size {n}: {got!r} / {getattr(got, 'info', None)} != {want!r} / {getattr(want, 'info', None)}"
    return got


@pytest.mark.parametrize("tree", TREES)
@pytest.mark.parametrize("kind", range(len(KINDS)))
@pytest.mark.parametrize("seed", range(4))
def test_select_matches_reference_on_random_streams(tree, kind, seed):
    name, opts = KINDS[kind]
    new, ref = pair(tree, name, opts)
    N = new.n_nodes
    rng = np.random.default_rng(1000 * seed + kind)
    st = new.new_state()
    running: list = []
    jid = 1
    for _ in range(160):
        if running and rng.random() < 0.35:
            j, p = running.pop(int(rng.integers(len(running))))
            new.release(j, p, st)
            continue
        # Sizes from one node to the whole machine, small ones most often.
        n = int(min(N, max(1, rng.lognormal(1.2, 1.1)))) if rng.random() < 0.8 else int(rng.integers(1, N + 1))
        for m in (n, n, max(1, n - 1), n + 1, int(rng.integers(1, N + 1))):  # repeats on one state
            check(new, ref, st, m, jid)
        if rng.random() < 0.2:
            # Backfilling's shadow search: a copy released step by step, the head queried each time.
            test = st.copy()
            head = int(rng.integers(1, N + 1))
            for j, p in list(running)[: int(rng.integers(0, len(running) + 1))]:
                new.release(j, p, test)
                check(new, ref, test, head, jid)
        p = check(new, ref, st, n, jid)
        if p is not None:
            j = job(jid, n)
            new.commit(j, p, st)
            running.append((j, p))
            jid += 1


@pytest.mark.parametrize("name,opts", KINDS)
def test_block_and_copies_keep_answers_right(name, opts):
    """A state changed by block (no commit) and its copies answer like the reference."""
    new, ref = pair("ft3-r8", name, opts)
    st = new.new_state()
    placed = []
    for jid, n in enumerate([5, 9, 17, 3, 40], start=1):
        p = check(new, ref, st, n, jid)
        assert p is not None
        placed.append((job(jid, n), p))
    st2 = new.new_state()
    for n in (3, 9, 30):
        check(new, ref, st2, n, 99)
    new.block(placed, st2)
    c = st2.copy()
    for n in (1, 3, 9, 17, 30, 60, 100):
        check(new, ref, st2, n, 99)
        check(new, ref, c, n, 99)


@pytest.mark.parametrize("name,opts", KINDS)
@pytest.mark.parametrize("radix", [6, 8])
def test_easy_replay_matches_reference(name, opts, radix):
    """Whole FCFS + EASY replays give the same schedule with either search."""
    from scheduler.lifecycle import simulate
    from scheduler.workload import Choice, Exponential, LogNormal, SyntheticWorkload, Uniform

    topo = FatTree.from_radix(radix=radix, levels=3)
    N = topo.n_nodes
    sizes = np.arange(1, N // 2 + 1, dtype=float)
    w = sizes ** -0.9
    jobs = SyntheticWorkload(n_jobs=300, inter_arrival=Exponential(mean=60.0),
                             size=Choice(values=tuple(sizes.tolist()), weights=tuple((w / w.sum()).tolist())),
                             run_time=LogNormal(median=1800.0, sigma=1.0), request_factor=Uniform(low=1.0, high=2.0),
                             max_run_time=40000.0).generate(radix)
    ref_cls = ReferenceJigsaw if name == "jigsaw" else ReferenceT123
    runs = []
    for alloc in (make_allocator(name, n_nodes=N, topology=topo, **opts), ref_cls(n_nodes=N, topology=topo, **opts)):
        res = simulate(jobs, n_nodes=N, topology=topo, allocator=alloc, ordering="fcfs", backfill="easy", seed=1)
        runs.append([(j.job_id, j.start_time, j.end_time, np.asarray(j.assigned_nodes).tolist())
                     for j in sorted(res.jobs, key=lambda j: j.job_id)])
    assert runs[0] == runs[1]
