"""Topology-oblivious allocators: first free, random, round-robin list, dual-end, FIFO-0, virtual
partitions.

Each treats the machine as a list of nodes (an ordering of :mod:`.orderings`; node id order
by default) and any ``n`` free nodes can host an ``n``-node job, so all are ``count_only``.

=============  =====================================================================
name           nodes chosen
=============  =====================================================================
firstfree      the lowest-numbered free nodes (node id order, no options)
random         ``n`` free nodes drawn uniformly (the job's own generator)
roundrobin     the head of a free list in which reclaimed nodes go to the tail
dualend        small jobs the first free nodes of the ordering, the others the last
fifo0          the first free nodes of the ordering (what most production schedulers do)
vpart          the ordering cut into ``parts`` blocks; ``n / parts`` nodes from each
=============  =====================================================================
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import SchedulerError
from ..job import Job
from .base import OptionsAllocator, check_choice, check_float_option, check_int_option, job_rng
from .interface import Allocator, AllocState
from .orderings import node_ordering
from .registry import register_allocator

__all__ = [
    "FirstFreeAllocator",
    "OrderedAllocator",
    "RandomAllocator",
    "RoundRobinAllocator",
    "RoundRobinState",
    "DualEndAllocator",
    "Fifo0Allocator",
    "VirtualPartitionAllocator",
]

_SALT_RANDOM = 0x52414E44  # "RAND"


class OrderedAllocator(OptionsAllocator):
    """An allocator running on a node ordering (options ``ordering`` and ``box``).

    ``order[i]`` is the node at position ``i``; ``pos[node]`` its position.
    """

    OPTIONS: tuple[str, ...] = ("ordering", "box")

    def __init__(self, *, n_nodes: int, topology: Any = None, seed: int = 0, ordering: Any = "topological",
                 box: Any = None, **options: Any):
        super().__init__(n_nodes=n_nodes, topology=topology, seed=seed, **options)
        self.ordering = ordering if isinstance(ordering, str) else "custom"
        self.order = node_ordering(topology, ordering, n_nodes=self.n_nodes, box=box, alloc=self.name)
        pos = np.empty(self.n_nodes, dtype=np.int64)
        pos[self.order] = np.arange(self.n_nodes, dtype=np.int64)
        self.pos = pos

    def free_positions(self, state: AllocState) -> np.ndarray:
        """Positions (in the ordering) of the free nodes, increasing."""
        return np.flatnonzero(state.free[self.order])

    def nodes_at(self, positions: np.ndarray) -> np.ndarray:
        """Sorted node ids at ``positions`` of the ordering."""
        return np.sort(self.order[positions])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_nodes={self.n_nodes}, ordering={self.ordering!r})"


@register_allocator
class FirstFreeAllocator(Allocator):
    """The lowest-numbered free nodes; any free nodes will do (``count_only``)."""

    name = "firstfree"
    count_only = True

    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        k = job.nodes
        if k > state.n_free:
            return None
        return state.free.nonzero()[0][:k]  # (flatnonzero's wrapper costs more than the search)


@register_allocator
class RandomAllocator(OptionsAllocator):
    """``n`` free nodes drawn uniformly at random.

    The draw comes from the job's own generator (seeded from the allocator's seed and the
    job id): each job ranks all nodes by a random key and takes the free ones with the
    smallest keys, so a select is a pure function of (job, state).
    """

    name = "random"
    count_only = True

    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        k = job.nodes
        if k > state.n_free:
            return None
        free = np.flatnonzero(state.free)
        keys = job_rng(self.seed, job.job_id, _SALT_RANDOM).random(self.n_nodes)[free]
        if k < len(free):
            pick = np.argpartition(keys, k - 1)[:k]
        else:
            pick = np.arange(len(free))
        return np.sort(free[pick])


class RoundRobinState(AllocState):
    """Occupancy plus the free list as keys: a free node's ``key`` is its place in the list
    (smaller is nearer the head); ``next_key`` is the tail."""

    __slots__ = ("key", "next_key")

    def copy(self) -> "RoundRobinState":
        c = super().copy()
        c.key = self.key.copy()
        c.next_key = self.next_key
        return c  # type: ignore[return-value]


@register_allocator
class RoundRobinAllocator(OrderedAllocator):
    """Round-robin over an ordered free list: a job takes the ``n`` nodes at its head and
    released nodes rejoin at its tail (in ordering order), so successive jobs sweep the
    machine instead of reusing the nodes just freed."""

    name = "roundrobin"
    count_only = True

    def new_state(self) -> RoundRobinState:
        st = RoundRobinState.__new__(RoundRobinState)
        AllocState.__init__(st, self.n_nodes)
        st.key = self.pos.copy()
        st.next_key = self.n_nodes
        return st

    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        k = job.nodes
        if k > state.n_free:
            return None
        free = np.flatnonzero(state.free)
        keys = state.key[free]  # type: ignore[attr-defined]
        if k < len(free):
            pick = np.argpartition(keys, k - 1)[:k]
        else:
            pick = np.arange(len(free))
        return np.sort(free[pick])

    def release(self, job: Job, nodes: np.ndarray, state: AllocState) -> None:
        if not isinstance(state, RoundRobinState):
            raise SchedulerError(f"allocator {self.name!r} was given a {type(state).__name__}; use its new_state()")
        super().release(job, nodes, state)
        nodes = np.asarray(nodes, dtype=np.int64)
        ranked = nodes[np.argsort(self.pos[nodes], kind="stable")]
        state.key[ranked] = state.next_key + np.arange(len(ranked), dtype=np.int64)
        state.next_key += len(ranked)


@register_allocator
class DualEndAllocator(OrderedAllocator):
    """Dual-end: jobs below a threshold take the first free nodes of the ordering, the
    others the last ones, so short (or small) and long (or large) jobs pack at opposite ends.

    Options: ``by`` (``"size"``: ``job.nodes < threshold``; ``"time"``: requested time
    ``< threshold`` seconds) and ``threshold`` (default: ``max(2, n_nodes // 32)`` nodes,
    or 3600 s).
    """

    name = "dualend"
    count_only = True
    OPTIONS = OrderedAllocator.OPTIONS + ("by", "threshold")

    def __init__(self, *, by: str = "size", threshold: Any = None, **kw: Any):
        super().__init__(**kw)
        self.by = check_choice(self.name, "by", by, ("size", "time"))
        if threshold is None:
            self.threshold = float(max(2, self.n_nodes // 32)) if self.by == "size" else 3600.0
        else:
            self.threshold = check_float_option(self.name, "threshold", threshold, 0.0)

    def is_small(self, job: Job) -> bool:
        v = job.nodes if self.by == "size" else job.request_time
        return v < self.threshold

    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        k = job.nodes
        if k > state.n_free:
            return None
        fp = self.free_positions(state)
        return self.nodes_at(fp[:k] if self.is_small(job) else fp[len(fp) - k:])


@register_allocator
class Fifo0Allocator(OrderedAllocator):
    """FIFO-0: the first free nodes in the ordering (``firstfree`` on node id order)."""

    name = "fifo0"
    count_only = True

    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        k = job.nodes
        if k > state.n_free:
            return None
        return self.nodes_at(self.free_positions(state)[:k])


@register_allocator
class VirtualPartitionAllocator(OrderedAllocator):
    """Virtual partitioning: the ordering cut into ``parts`` equal blocks; a job takes
    ``n / parts`` nodes from each (the first free ones of the block). A block short of free
    nodes gives what it has and the others make up the difference evenly (water-filling),
    so any ``n <= n_free`` nodes fit. Spreads every job over the whole machine (a load
    balancing placement for dragonflies and tapered trees)."""

    name = "vpart"
    count_only = True
    OPTIONS = OrderedAllocator.OPTIONS + ("parts",)

    def __init__(self, *, parts: int = 2, **kw: Any):
        super().__init__(**kw)
        self.parts = check_int_option(self.name, "parts", parts, 1, self.n_nodes)
        bounds = np.linspace(0, self.n_nodes, self.parts + 1).round().astype(np.int64)
        self.block_start = bounds[:-1]
        self.block_of_pos = np.repeat(np.arange(self.parts), np.diff(bounds))

    def quotas(self, n: int, cap: np.ndarray) -> np.ndarray:
        """Nodes taken from each block: the most even split of ``n`` under the caps ``cap``."""
        P = len(cap)
        srt = np.sort(cap)
        # Smallest level t with sum(min(cap, t)) >= n.
        below = np.concatenate(([0], np.cumsum(srt)[:-1]))
        total_at = below + srt * (P - np.arange(P))  # filled when t reaches srt[i]
        i = int(np.searchsorted(total_at, n))
        if i >= P:
            raise SchedulerError("vpart: more nodes asked than free")  # pragma: no cover - guarded by n_free
        prev = below[i]
        t = math.ceil((n - prev) / (P - i)) if P - i else 0
        q = np.minimum(cap, t)
        excess = int(q.sum()) - n
        if excess:
            # Give back one node each from the last blocks that reached level t.
            at_t = np.flatnonzero(q == t)
            q[at_t[len(at_t) - excess:]] -= 1
        return q

    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        k = job.nodes
        if k > state.n_free:
            return None
        fp = self.free_positions(state)
        blk = self.block_of_pos[fp]
        cap = np.bincount(blk, minlength=self.parts)
        q = self.quotas(k, cap)
        first = np.searchsorted(blk, np.arange(self.parts))
        rank = np.arange(len(fp)) - first[blk]
        return self.nodes_at(fp[rank < q[blk]])
