"""Shared machinery of the allocator tests: small machines and a checked allocation driver."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from models.topology import Dragonfly, FatTree, Torus
from scheduler.allocators import AllocState, Allocator, make_allocator
from scheduler.job import Job


@lru_cache(maxsize=None)
def machine(name: str):
    """Small test machines (each built once per test run)."""
    return {
        "ft3": lambda: FatTree.from_radix(radix=6, levels=3),  # 54 nodes: 3/leaf, 3 leaves & 3 L2 per pod, 6 pods
        "ft3-r8": lambda: FatTree.from_radix(radix=8, levels=3),  # 128 nodes: 4/leaf, 4 leaves & 4 L2 per pod, 8 pods
        "ft3-taper": lambda: FatTree(levels=3, down=(4, 3, 3), up=(1, 2, 2)),  # 36 nodes, 4/leaf, 2 uplinks
        "ft3-par": lambda: FatTree(levels=3, down=(2, 4, 3), up=(1, 2, 4), parallel=(1, 2, 2)),  # parallel links, 24 nodes
        "ft2": lambda: FatTree(levels=2, down=(4, 5), up=(1, 4)),  # 20 nodes
        "torus": lambda: Torus(dims=(4, 3, 4), nodes_per_router=2),  # 96 nodes
        "bgq": lambda: Torus(dims=(4, 6, 4)),  # 96 nodes, 2x2x2 midplanes -> grid (2, 3, 2)
        "dragonfly": lambda: Dragonfly(a=4, p=2, h=2),  # 72 nodes
    }[name]()


def job(jid: int, n: int, request: float = 100.0, **kw) -> Job:
    return Job(job_id=jid, job_size=n, submit_time=0.0, request_time=request, run_time=request, **kw)


def snapshot(state: AllocState) -> dict:
    """Every array and scalar of a state (to check that select does not change it)."""
    out = {}
    for cls in type(state).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if not hasattr(state, name):
                continue
            v = getattr(state, name)
            if isinstance(v, np.ndarray):
                out[name] = v.copy()
            elif isinstance(v, dict):
                out[name] = dict(v)
            elif isinstance(v, (int, float, bool)):
                out[name] = v
    return out


def same_snapshot(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, np.ndarray):
            if not np.array_equal(x, y):
                return False
        elif isinstance(x, dict):
            if x.keys() != y.keys() or any(x[i] is not y[i] for i in x):
                return False
        elif x != y:
            return False
    return True


def check_consistent(state: AllocState, running: dict) -> None:
    """free/owner/n_free agree with each other and with the running jobs."""
    free, owner = state.free, state.owner
    assert state.n_free == int(free.sum())
    assert np.array_equal(free, owner == -1)
    expect = np.full(len(free), -1, dtype=np.int64)
    for jid, (_, nodes) in running.items():
        assert (expect[np.asarray(nodes)] == -1).all(), "two jobs on one node"
        expect[np.asarray(nodes)] = jid
    assert np.array_equal(owner, expect)


class Driver:
    """Runs arrivals and departures through an allocator, checking every contract."""

    def __init__(self, alloc: Allocator):
        self.alloc = alloc
        self.state = alloc.new_state()
        self.empty = snapshot(self.state)
        self.running: dict[int, tuple[Job, np.ndarray]] = {}
        self.next_id = 1
        self.placed = 0
        self.refused = 0

    def arrive(self, n: int, **kw) -> np.ndarray | None:
        alloc, st = self.alloc, self.state
        j = job(self.next_id, n, **kw)
        self.next_id += 1
        before = snapshot(st)
        nodes = alloc.select(j, st)
        assert same_snapshot(before, snapshot(st)), "select changed the state"
        again = alloc.select(j, st)
        copy_pick = alloc.select(j, st.copy())
        if nodes is None:
            assert again is None and copy_pick is None
            if alloc.count_only:
                assert n > st.n_free, "count_only allocator refused a job that fits by count"
            self.refused += 1
            return None
        assert np.array_equal(nodes, again) and np.array_equal(nodes, copy_pick), "select is not deterministic"
        a = np.asarray(nodes)
        assert a.dtype == np.int64 and len(a) == n, (a, n)
        assert np.all(np.diff(a) > 0), "nodes must be sorted and distinct"
        assert st.free[a].all(), "select returned busy nodes"
        alloc.commit(j, nodes, st)
        self.running[j.job_id] = (j, nodes)
        check_consistent(st, self.running)
        self.placed += 1
        return nodes

    def depart(self, k: int) -> None:
        if not self.running:
            return
        jid = sorted(self.running)[k % len(self.running)]
        j, nodes = self.running.pop(jid)
        self.alloc.release(j, nodes, self.state)
        assert self.state.free[np.asarray(nodes)].all()
        check_consistent(self.state, self.running)

    def drain(self) -> None:
        while self.running:
            self.depart(0)
        # The round-robin free list keeps its order (reclaimed nodes at the tail) by design.
        now = {k: v for k, v in snapshot(self.state).items() if k not in ("key", "next_key")}
        empty = {k: v for k, v in self.empty.items() if k not in ("key", "next_key")}
        assert same_snapshot(empty, now), "releasing every job did not restore the empty state"


def build(name: str, topo_name: str | None, seed: int = 0, **options) -> Allocator:
    topo = machine(topo_name) if topo_name else None
    n = topo.n_nodes if topo is not None else 40
    return make_allocator(name, n_nodes=n, topology=topo, seed=seed, **options)
