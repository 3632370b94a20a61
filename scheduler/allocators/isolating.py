"""Interference-free allocators on fat-trees: Pollard/Jain T1/T2/T3 and link reservation.

Both guarantee that no directed switch link carries the traffic of two jobs.

``t123`` (Pollard, Jain, Herbein, Bhatele, "Evaluation of an Interference-free Node
Allocation Policy on Fat-tree Clusters", SC18). Jobs are typed by size:

* **T1**, ``n <= nodes per leaf``: within one leaf. Its traffic never leaves the leaf, so it
  may share the leaf with anything. Placed in the fullest pod that has a leaf with room,
  on the fullest such leaf in it.
* **T2**, ``n <= nodes per pod``: within one pod, on leaves that hold no other T2 or T3
  job. Placed in the fullest pod that fits, on its emptiest eligible leaves.
* **T3**, larger: on pods that hold no other T3 job (a T3 job owns each pod it touches), on
  leaves that hold no T2 or T3 job, sharing leaves only with T1 jobs. Placed on the
  emptiest eligible pods and, in the last one, the emptiest leaves.

That is the paper's Algorithm 1 (option ``t3_rule="algorithm"``, the default): a T2 and a
T3 job may share a pod on different leaves. ``t3_rule="whole-pods"`` is a stricter rule: a
T3 job takes only pods that hold no T2 job, and a T2 job only pods that no T3 job owns.

Under every minimal route (any ECMP choice of up ports) a leaf's up links then carry one
job's traffic (T1 traffic stays below the leaf), an L2 switch's down link to a leaf carries
traffic to that leaf's one T2/T3 job, and a pod's L2-to-spine links and spine-to-L2 links
carry its one T3 job's traffic (a T2 job's traffic never leaves its pod), under either rule. This holds on trees of up to 3 levels (deeper trees share
links inside a pod) and is refused on others.

``jigsaw`` (in the style of LaaS, Zahavi et al. 2016, and Jigsaw, Smith and Lowenthal,
HPDC 2021). Every multi-leaf job reserves links for its exclusive use and is routed only on
them (:meth:`JigsawState.routes_for`):

* a job on one leaf reserves nothing (its traffic stays on the leaf);
* a job on several leaves has ``k`` nodes on each of its *full* leaves and possibly
  ``r < k`` on one *remainder* leaf; each leaf reserves exactly as many up ports (to L2
  switches; to spines on a 2-level tree) as the job has nodes on it: the full leaves the
  same ``k`` port indices ``Pi`` (so the same L2 switches), the remainder leaf ``r`` of
  them. Any two leaves of the job share a port index, so a minimal route exists on
  reserved links, and each leaf has its nodes' worth of up bandwidth;
* a job spanning pods (3 levels) has ``F`` full leaves in each of its *full* pods and a
  smaller *remainder* pod; on top of the leaf ports, L2 switch ``x`` of each pod reserves
  as many up ports (to spines) as the job's leaf ports reaching it, with the same port
  indices ``Sigma_x`` in every full pod and a subset of them in the remainder pod. A spine
  reached by port ``t`` of L2 ``x`` in one pod is reached by port ``t`` of L2 ``x`` in every
  pod, so routes between pods exist on reserved links.

The search prefers fewer, fuller leaves (largest ``k`` first), then (across pods) the
largest ``F``; among feasible pods the fullest, among feasible leaves the fullest (best fit,
which keeps empty leaves and pods for large jobs). ``Pi`` (and ``Sigma_x``) are the ports
most often free on the candidate leaves (L2 switches); a feasible set of another shape may
be missed, so the search is a heuristic, bounded by O(k_max * F_max) vectorized passes.

In the code the papers' symbols read: ``per_leaf`` (``k``), ``remainder_nodes`` (``r``),
``chosen_ports`` (``Pi``), ``full_per_pod`` (``F``), ``sigma`` (``Sigma_x``, one row per L2
switch), ``ports_per_l2`` (how many ports of ``Pi`` reach each L2 switch); T1/T2/T3 are the
job ``kind`` 1/2/3 of :class:`T123Info`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import SchedulerError, UserError
from ..job import Job
from .base import OptionsAllocator, Placement, PlacementState, check_choice, placement_info
from .interface import AllocState
from .memo import MemoState, SelectMemo
from .registry import register_allocator

__all__ = [
    "T123Allocator",
    "T123State",
    "T123Info",
    "JigsawAllocator",
    "JigsawState",
    "JigsawInfo",
]


class _TreeShape:
    """Pod/leaf geometry of a fat-tree as plain ints."""

    def __init__(self, topo: Any):
        self.topo = topo
        self.levels = topo.levels
        self.n_nodes = topo.n_nodes
        self.nodes_per_leaf = topo.nodes_per_leaf
        self.n_leaves = topo.n_leaves
        self.nodes_per_pod = topo.nodes_per_pod
        self.n_pods = topo.n_pods
        self.leaves_per_pod = topo.leaves_per_pod
        self.leaf_up_ports = topo.uplinks_per_leaf
        self.l2_per_pod = topo.up[1] if self.levels >= 2 else 0
        self.l2_up_ports = topo.up[2] * topo.parallel[2] if self.levels >= 3 else 0

    def free_per_leaf(self, free: np.ndarray) -> np.ndarray:
        return free.reshape(self.n_leaves, self.nodes_per_leaf).sum(axis=1)

    def first_free(self, free: np.ndarray, leaf: int, count: int) -> np.ndarray:
        base = leaf * self.nodes_per_leaf
        return base + np.flatnonzero(free[base:base + self.nodes_per_leaf])[:count]

    def first_free_many(self, free: np.ndarray, leaves: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """The lowest ``counts[i]`` free nodes of each leaf ``leaves[i]``, sorted."""
        rows = free.reshape(self.n_leaves, self.nodes_per_leaf)[leaves]
        take = rows & (np.cumsum(rows, axis=1) <= np.asarray(counts)[:, None])
        i, j = np.nonzero(take)
        return np.sort(np.asarray(leaves)[i] * self.nodes_per_leaf + j)


def _fattree_levels(alloc: OptionsAllocator, lo: int, hi: int) -> None:
    levels = alloc.topology.levels
    if not lo <= levels <= hi:
        raise UserError(
            f"allocator {alloc.name!r} supports fat-trees of {lo} to {hi} levels; this one has {levels} "
            "(deeper trees share links inside a pod)"
        )


def _best_fit(values: np.ndarray, mask: np.ndarray) -> int:
    """Index of the smallest value where ``mask`` (ties: lowest index); -1 if none."""
    idx = np.flatnonzero(mask)
    if not len(idx):
        return -1
    return int(idx[np.argmin(values[idx])])


# =============================================================================== T1/T2/T3
@dataclass(frozen=True)
class T123Info:
    """A T1/T2/T3 placement: ``kind`` (1, 2 or 3), the leaves it claims (T2/T3) and the
    pods (the T2 job's pod; the T3 job's owned pods)."""

    kind: int
    leaves: tuple[int, ...]
    pods: tuple[int, ...]


class T123State(MemoState):
    """Occupancy plus ``leaf_claim`` (the T2/T3 job on each leaf, -1), ``pod_owner`` (the T3
    job owning each pod, -1) and ``pod_t2_jobs`` (how many T2 jobs each pod holds)."""

    __slots__ = ("leaf_claim", "pod_owner", "pod_t2_jobs")

    def copy(self) -> "T123State":
        c = super().copy()
        c.leaf_claim = self.leaf_claim.copy()
        c.pod_owner = self.pod_owner.copy()
        c.pod_t2_jobs = self.pod_t2_jobs.copy()
        return c  # type: ignore[return-value]


@register_allocator
class T123Allocator(OptionsAllocator):
    """Pollard/Jain T1/T2/T3 interference-free allocation (see the module docstring)."""

    name = "t123"
    count_only = False
    FAMILIES = ("fattree",)
    OPTIONS = ("t3_rule",)
    #: ``algorithm``: Pollard et al.'s Algorithm 1; ``whole-pods``: T2 and T3 jobs never share a pod.
    T3_RULES = ("algorithm", "whole-pods")

    def __init__(self, *, t3_rule: str = "algorithm", **kw: Any):
        super().__init__(**kw)
        _fattree_levels(self, 1, 3)
        self.tree = _TreeShape(self.topology)
        self.t3_rule = check_choice(self.name, "t3_rule", t3_rule, self.T3_RULES)
        self.strict = self.t3_rule == "whole-pods"
        self.memo = SelectMemo()

    def job_type(self, n: int) -> int:
        """1, 2 or 3 for an ``n``-node job."""
        tree = self.tree
        return 1 if n <= tree.nodes_per_leaf else 2 if n <= tree.nodes_per_pod else 3

    def new_state(self) -> T123State:
        st = T123State(self.n_nodes)
        st.leaf_claim = np.full(self.tree.n_leaves, -1, dtype=np.int64)
        st.pod_owner = np.full(self.tree.n_pods, -1, dtype=np.int64)
        st.pod_t2_jobs = np.zeros(self.tree.n_pods, dtype=np.int64)
        return st

    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        n = job.nodes
        if n > state.n_free:
            return None
        st: T123State = state  # type: ignore[assignment]
        entry = st.memo_entry
        if entry is None:
            # select reads only these masks (and n): an answer given before is the answer.
            entry = st.memo_entry = self.memo.entry(st.free, st.leaf_claim == -1, st.pod_owner == -1,
                                                    st.pod_t2_jobs == 0)
        found = entry.by_size.get(n, _UNKNOWN)
        if found is _UNKNOWN:
            view = entry.view
            if view is None:
                view = entry.view = _T123View(self.tree, st.free)
            found = entry.by_size[n] = self._select(n, st, view)
        # A copy, so that no two jobs ever share one placement object.
        return None if found is None else found.copy()

    def _select(self, n: int, st: T123State, view: "_T123View") -> Placement | None:
        """The placement of an ``n``-node job on ``st`` (``view``: what the state gives every size)."""
        tree = self.tree
        free = st.free
        leaf_free = view.leaf_free
        pod_free = view.pod_free
        kind = self.job_type(n)
        if kind == 1:
            if n > view.most_leaf_free:
                return None
            candidates = leaf_free >= n
            pod_has_candidate = candidates.reshape(tree.n_pods, tree.leaves_per_pod).any(axis=1)
            pod = _best_fit(pod_free, pod_has_candidate)
            leaves = np.arange(pod * tree.leaves_per_pod, (pod + 1) * tree.leaves_per_pod)
            leaf = int(leaves[_best_fit(leaf_free[leaves], candidates[leaves])])
            nodes = tree.first_free(free, leaf, n)
            return Placement(nodes, T123Info(1, (), ()))
        if kind == 2:
            if view.t2_free is None:
                eligible = st.leaf_claim == -1
                if self.strict:
                    eligible &= np.repeat(st.pod_owner == -1, tree.leaves_per_pod)
                view.t2_free = np.where(eligible, leaf_free, 0).reshape(tree.n_pods, tree.leaves_per_pod)
                view.t2_pod_free = view.t2_free.sum(axis=1)
                view.t2_most = int(view.t2_pod_free.max())
            if n > view.t2_most:
                return None
            eligible_free = view.t2_free
            fits = view.t2_pod_free >= n
            pod = _best_fit(pod_free, fits)
            pod_eligible_free = eligible_free[pod]
            order = np.lexsort((np.arange(tree.leaves_per_pod), -pod_eligible_free))  # emptiest eligible leaves first
            take = _greedy(pod_eligible_free[order], n)
            parts, used = [], []
            for j, c in zip(order.tolist(), take.tolist()):
                if c:
                    leaf = pod * tree.leaves_per_pod + j
                    parts.append(tree.first_free(free, leaf, c))
                    used.append(leaf)
            return Placement(np.sort(np.concatenate(parts)), T123Info(2, tuple(sorted(used)), (pod,)))
        if view.t3_free is None:
            eligible = st.pod_owner == -1
            if self.strict:
                eligible &= st.pod_t2_jobs == 0
            # A T3 job uses the free nodes of the leaves no T2 job claims (all of them under the
            # whole-pods rule, where its pods hold no T2 job).
            view.t3_leaf_free = np.where(st.leaf_claim == -1, leaf_free, 0)
            view.t3_free = np.where(eligible, view.t3_leaf_free.reshape(tree.n_pods, tree.leaves_per_pod).sum(axis=1), 0)
            view.t3_total = int(view.t3_free.sum())
        if view.t3_total < n:
            return None
        leaf_free = view.t3_leaf_free
        eligible_free = view.t3_free
        porder = np.lexsort((np.arange(tree.n_pods), -eligible_free))  # emptiest pods first
        cum = np.cumsum(eligible_free[porder])
        m = int(np.searchsorted(cum, n)) + 1
        pods = porder[:m]
        parts, used = [], []
        nodes_left = n
        for pod in pods.tolist():
            pod_leaf_free = leaf_free[pod * tree.leaves_per_pod:(pod + 1) * tree.leaves_per_pod]
            order = np.lexsort((np.arange(tree.leaves_per_pod), -pod_leaf_free))
            take = _greedy(pod_leaf_free[order], min(nodes_left, int(pod_leaf_free.sum())))
            for j, c in zip(order.tolist(), take.tolist()):
                if c:
                    leaf = pod * tree.leaves_per_pod + j
                    parts.append(tree.first_free(free, leaf, c))
                    used.append(leaf)
            nodes_left -= int(take.sum())
        return Placement(np.sort(np.concatenate(parts)), T123Info(3, tuple(sorted(used)), tuple(sorted(pods.tolist()))))

    def _info_for(self, job: Job, nodes: np.ndarray) -> T123Info:
        info = placement_info(nodes)
        if isinstance(info, T123Info):
            return info
        tree = self.tree
        kind = self.job_type(len(nodes))
        leaves = tuple(np.unique(np.asarray(nodes) // tree.nodes_per_leaf).tolist())
        pods = tuple(np.unique(np.asarray(leaves) // tree.leaves_per_pod).tolist())
        return T123Info(kind, leaves if kind > 1 else (), pods if kind > 1 else ())

    def commit(self, job: Job, nodes: np.ndarray, state: AllocState) -> None:
        self._check_nodes(job, nodes)
        st: T123State = state  # type: ignore[assignment]
        info = self._info_for(job, nodes)
        tree = self.tree
        leaf_ids = np.asarray(info.leaves, dtype=np.int64)
        pod_ids = np.asarray(info.pods, dtype=np.int64)
        leaves_of_nodes = np.unique(np.asarray(nodes) // tree.nodes_per_leaf)
        if info.kind == 1:
            if len(leaves_of_nodes) != 1:
                raise SchedulerError(f"t123: T1 job {job.job_id} must lie within one leaf")
        elif info.kind == 2:
            if len(pod_ids) != 1 or (leaves_of_nodes // tree.leaves_per_pod != pod_ids[0]).any():
                raise SchedulerError(f"t123: T2 job {job.job_id} must lie within one pod")
            if (st.leaf_claim[leaf_ids] != -1).any() or (self.strict and st.pod_owner[pod_ids[0]] != -1):
                raise SchedulerError(f"t123: T2 job {job.job_id} was placed on a leaf or pod claimed by another T2/T3 job")
        else:
            if (st.pod_owner[pod_ids] != -1).any() or (st.leaf_claim[leaf_ids] != -1).any() or (
                    self.strict and (st.pod_t2_jobs[pod_ids] != 0).any()):
                raise SchedulerError(f"t123: T3 job {job.job_id} was placed in a pod or on a leaf held by another "
                                     "T2/T3 job")
        st.mark_busy(job.job_id, nodes)
        if info.kind == 2:
            st.leaf_claim[leaf_ids] = job.job_id
            st.pod_t2_jobs[pod_ids] += 1
        elif info.kind == 3:
            st.leaf_claim[leaf_ids] = job.job_id
            st.pod_owner[pod_ids] = job.job_id
        st.placements[job.job_id] = info
        st.forget()

    def release(self, job: Job, nodes: np.ndarray, state: AllocState) -> None:
        st: T123State = state  # type: ignore[assignment]
        st.mark_free(job.job_id, nodes)
        info = st.placements.pop(job.job_id, None)
        if info is None:
            raise SchedulerError(f"t123: job {job.job_id} released without a placement")
        leaf_ids = np.asarray(info.leaves, dtype=np.int64)
        pod_ids = np.asarray(info.pods, dtype=np.int64)
        if info.kind == 2:
            st.leaf_claim[leaf_ids] = -1
            st.pod_t2_jobs[pod_ids] -= 1
        elif info.kind == 3:
            st.leaf_claim[leaf_ids] = -1
            st.pod_owner[pod_ids] = -1
        st.forget()

    def block(self, placements: "Sequence[tuple[Job, np.ndarray]]", state: AllocState) -> None:
        """Hold, in ``state``, the nodes and the leaf/pod claims of each placement (a union)."""
        super().block(placements, state)
        st: T123State = state  # type: ignore[assignment]
        for job, nodes in placements:
            info = self._info_for(job, nodes)
            leaf_ids = np.asarray(info.leaves, dtype=np.int64)
            pod_ids = np.asarray(info.pods, dtype=np.int64)
            if info.kind == 2:
                st.leaf_claim[leaf_ids] = np.where(st.leaf_claim[leaf_ids] == -1, job.job_id, st.leaf_claim[leaf_ids])
                st.pod_t2_jobs[pod_ids] += 1
            elif info.kind == 3:
                st.leaf_claim[leaf_ids] = np.where(st.leaf_claim[leaf_ids] == -1, job.job_id, st.leaf_claim[leaf_ids])
                st.pod_owner[pod_ids] = np.where(st.pod_owner[pod_ids] == -1, job.job_id, st.pod_owner[pod_ids])
        st.forget()


_UNKNOWN = object()


class _T123View:
    """What t123's select derives from one state for jobs of any size: free nodes per leaf
    and per pod and the most a T1 job can have; for T2 jobs (on first need) the eligible
    leaves' free nodes, per pod and the most of one pod; for T3 jobs the free nodes of
    unclaimed leaves, of eligible pods and in all."""

    __slots__ = ("leaf_free", "pod_free", "most_leaf_free", "t2_free", "t2_pod_free", "t2_most",
                 "t3_leaf_free", "t3_free", "t3_total")

    def __init__(self, tree: _TreeShape, free: np.ndarray):
        self.leaf_free = tree.free_per_leaf(free)
        self.pod_free = self.leaf_free.reshape(tree.n_pods, tree.leaves_per_pod).sum(axis=1)
        self.most_leaf_free = int(self.leaf_free.max())
        self.t2_free = self.t2_pod_free = self.t3_leaf_free = self.t3_free = None
        self.t2_most = self.t3_total = 0


def _greedy(capacity: np.ndarray, n: int) -> np.ndarray:
    """Take from ``capacity`` in order, each whole, the last partly, ``n`` in all."""
    cum = np.cumsum(capacity)
    take = np.minimum(capacity, np.maximum(0, n - (cum - capacity)))
    return take


# ================================================================================= jigsaw
@dataclass(frozen=True)
class JigsawInfo:
    """A link-reserving placement.

    ``kind``: ``"leaf"`` (one leaf, no links), ``"pod"`` (several leaves of one pod, or of a
    2-level tree) or ``"pods"`` (several pods). ``leaf_ports``: (leaf, up port) pairs
    reserved; ``l2_ports``: (L2 switch index within level 2, up port) pairs reserved.
    ``nodes_per_full_leaf``: nodes on each full leaf (``k``); ``full_leaf_ports``: the port
    indices every full leaf reserves (``Pi``).
    """

    kind: str
    leaf_ports: np.ndarray
    l2_ports: np.ndarray
    nodes_per_full_leaf: int = 0
    full_leaf_ports: tuple[int, ...] = ()


_NO_PAIRS = np.zeros((0, 2), dtype=np.int64)


def _leaves_with_at_least(capacity: np.ndarray, max_per_leaf: int) -> np.ndarray:
    """``out[group, per_leaf]``: leaves of ``group`` whose ``capacity`` is at least ``per_leaf``
    (``per_leaf`` = 0..max_per_leaf)."""
    n_groups, L = capacity.shape
    idx = (np.arange(n_groups)[:, None] * (max_per_leaf + 2) + np.minimum(capacity, max_per_leaf + 1)).reshape(-1)
    hist = np.bincount(idx, minlength=n_groups * (max_per_leaf + 2)).reshape(n_groups, max_per_leaf + 2)
    return np.cumsum(hist[:, ::-1], axis=1)[:, ::-1][:, : max_per_leaf + 1]


def _pairs(rows: np.ndarray, ports: np.ndarray) -> np.ndarray:
    """(row, port) pairs: every port of ``ports`` for every row of ``rows`` (int64, m x 2)."""
    rows = np.asarray(rows, dtype=np.int64)
    ports = np.asarray(ports, dtype=np.int64)
    out = np.empty((len(rows), len(ports), 2), dtype=np.int64)
    out[:, :, 0] = rows[:, None]
    out[:, :, 1] = ports[None, :]
    return out.reshape(-1, 2)


class JigsawState(MemoState):
    """Occupancy plus the owners of leaf up ports (``leaf_port``, n_leaves x ports) and of
    L2 up ports (``l2_port``, n_L2 x ports), -1 when free. Each port stands for the up link
    and its reverse down link, both reserved together.

    :meth:`reserved_links`, :meth:`allowed_links` and :meth:`routes_for` give the network
    model what it needs to restrict a job's routing to its links.
    """

    __slots__ = ("leaf_port", "l2_port", "topology")

    def copy(self) -> "JigsawState":
        c = super().copy()
        c.leaf_port = self.leaf_port.copy()
        c.l2_port = self.l2_port.copy()
        c.topology = self.topology
        return c  # type: ignore[return-value]

    def reserved_links(self, job_id: int) -> np.ndarray:
        """Sorted ids of the switch links reserved by running job ``job_id`` (up and down)."""
        info: JigsawInfo = self.placements[job_id]
        return reserved_link_ids(self.topology, info)

    def allowed_links(self, job_id: int) -> np.ndarray:
        """Bool mask over link ids: the job's reserved links and its nodes' injection and
        ejection links (node ``i``: links ``i`` and ``n_nodes + i``)."""
        topo = self.topology
        mask = np.zeros(topo.n_links, dtype=bool)
        mask[self.reserved_links(job_id)] = True
        nodes = np.flatnonzero(self.owner == job_id)
        mask[nodes] = True
        mask[topo.n_nodes + nodes] = True
        return mask

    def routes_for(self, job_id: int) -> Callable[..., tuple[int, ...]]:
        """``route(src, dst, key=0)`` for running job ``job_id``: a minimal route between two
        of its nodes on its own links only (``FatTree.route_restricted``; ``key`` picks among
        the reserved alternatives as the tree's routing would)."""
        topo = self.topology
        mask = self.allowed_links(job_id)

        def route(src: int, dst: int, key: int = 0) -> tuple[int, ...]:
            remainder_nodes = topo.route_restricted(src, dst, mask, key)
            if remainder_nodes is None:
                raise SchedulerError(f"jigsaw: no reserved route from node {src} to node {dst} for job {job_id}")
            return remainder_nodes

        return route


def reserved_link_ids(topo: Any, info: JigsawInfo) -> np.ndarray:
    """Link ids (up and down) of the ports reserved by ``info`` on fat-tree ``topo``."""
    numbering = topo.link_numbering
    parts = []
    leaf_ports = info.leaf_ports  # leaves are level-1 elements: their up links are level 2's
    if len(leaf_ports):
        parts += [numbering.up_link_ids(2, leaf_ports[:, 0], leaf_ports[:, 1]),
                  numbering.down_link_ids(2, leaf_ports[:, 0], leaf_ports[:, 1])]
    l2_ports = info.l2_ports
    if len(l2_ports):
        parts += [numbering.up_link_ids(3, l2_ports[:, 0], l2_ports[:, 1]),
                  numbering.down_link_ids(3, l2_ports[:, 0], l2_ports[:, 1])]
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return np.sort(np.concatenate(parts)).astype(np.int64)


class _JigsawView:
    """What jigsaw's select derives from one state for jobs of any size: free nodes and free
    up ports per leaf, the bounds that settle most refusals and (on first need) the
    across-pods view."""

    __slots__ = ("leaf_free", "most_leaf_free", "leaf_port_free", "leaf_free_ports", "capacity_total",
                 "most_group_capacity", "pods_capacity", "pods", "l2_port_free")

    def __init__(self, tree: _TreeShape, st: "JigsawState"):
        self.leaf_free = leaf_free = tree.free_per_leaf(st.free)
        self.most_leaf_free = int(leaf_free.max())
        self.pods = None
        self.capacity_total = self.most_group_capacity = self.pods_capacity = 0
        if tree.levels < 2:
            return
        self.leaf_port_free = st.leaf_port == -1
        self.leaf_free_ports = self.leaf_port_free.sum(axis=1)
        capacity = np.minimum(leaf_free, self.leaf_free_ports)
        self.capacity_total = int(capacity.sum())
        n_groups = tree.n_pods if tree.levels >= 3 else 1
        group_capacity = capacity.reshape(n_groups, -1).sum(axis=1)
        self.most_group_capacity = int(group_capacity.max())
        if tree.levels >= 3:
            self.l2_port_free = st.l2_port == -1
            l2_free_per_pod = self.l2_port_free.reshape(tree.n_pods, -1).sum(axis=1)
            self.pods_capacity = int(np.minimum(group_capacity, l2_free_per_pod).sum())


class _PodsView:
    """The across-pods search's state-wide part: L2 up ports free (pods x L2 x ports) and
    per pod, free nodes per pod, the bound on the job nodes each ``per_leaf`` allows, and
    the :class:`_PerLeaf` derived so far."""

    __slots__ = ("l2_port_free", "l2_free_ports", "pod_free", "max_per_leaf", "nodes_bound", "per_leaf")

    def __init__(self, tree: _TreeShape, st: "JigsawState", view: _JigsawView):
        n_pods, leaves_per_pod, leaf_up_ports = tree.n_pods, tree.leaves_per_pod, tree.leaf_up_ports
        self.l2_port_free = view.l2_port_free.reshape(n_pods, tree.l2_per_pod, tree.l2_up_ports)
        self.l2_free_ports = l2_free_ports = self.l2_port_free.sum(axis=2)  # (n_pods, l2_per_pod)
        leaf_free = view.leaf_free
        self.pod_free = leaf_free.reshape(n_pods, leaves_per_pod).sum(axis=1)
        self.max_per_leaf = max_per_leaf = min(tree.nodes_per_leaf, leaf_up_ports)
        # Upper bound on the job nodes each per_leaf allows, before choosing ports: a full pod
        # gives at most (its leaves with per_leaf free nodes and ports) and (its free L2 up
        # ports // per_leaf) full leaves, and a remainder leaf adds fewer than per_leaf nodes.
        leaf_capacity = np.minimum(leaf_free, view.leaf_free_ports).reshape(n_pods, leaves_per_pod)
        leaves_with = _leaves_with_at_least(leaf_capacity, max_per_leaf)  # (n_pods, max_per_leaf + 1)
        per_leaf_choices = np.arange(max_per_leaf + 1)
        full_leaves_bound = np.minimum(
            leaves_with, l2_free_ports.sum(axis=1)[:, None] // np.maximum(per_leaf_choices, 1)[None, :]).sum(axis=0)
        self.nodes_bound = (full_leaves_bound * per_leaf_choices + per_leaf_choices - 1).tolist()
        self.per_leaf: dict[int, _PerLeaf] = {}


class _PerLeaf:
    """The across-pods search for one ``per_leaf`` on one state, derived in stages; ``bound``
    is the most job nodes the stages so far allow (a job of more nodes skips this per_leaf).

    1. the eligible leaves (per_leaf free nodes and up ports);
    2. the chosen ports ``Pi`` (most often free on eligible leaves) and the leaves that can be
       full leaves (``full_ok``);
    3. ports of Pi per L2 switch and the most full leaves each pod can give
       (``full_per_pod_max``), the ``full_per_pod`` values to try and how many pods have
       room for each;
    and, per ``full_per_pod``, Sigma and the pods that fit it, fullest first (``by_full``).
    """

    __slots__ = ("per_leaf", "stage", "bound", "eligible", "chosen_ports", "port_mask", "full_ok", "n_full_ok",
                 "ports_per_l2", "full_per_pod_max", "full_choices", "pods_with_room", "by_full")

    def __init__(self, per_leaf: int):
        self.per_leaf = per_leaf
        self.stage = 0
        self.by_full: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def eligible_stage(self, view: _JigsawView) -> None:
        k = self.per_leaf
        self.eligible = (view.leaf_free >= k) & (view.leaf_free_ports >= k)
        # every eligible leaf full plus a remainder leaf
        self.bound = int(self.eligible.sum()) * k + (k - 1)
        self.stage = 1

    def ports_stage(self, tree: _TreeShape, view: _JigsawView) -> None:
        k = self.per_leaf
        leaf_port_free = view.leaf_port_free
        free_count = (self.eligible[:, None] & leaf_port_free).sum(axis=0)
        self.chosen_ports = np.sort(np.argsort(-free_count, kind="stable")[:k])
        self.port_mask = port_mask = np.zeros(tree.leaf_up_ports, dtype=bool)
        port_mask[self.chosen_ports] = True
        self.full_ok = self.eligible & (leaf_port_free | ~port_mask).all(axis=1)
        self.n_full_ok = self.full_ok.reshape(tree.n_pods, tree.leaves_per_pod).sum(axis=1)
        self.bound = int(self.n_full_ok.sum()) * k + (k - 1)
        self.stage = 2

    def pods_stage(self, tree: _TreeShape, pv: _PodsView) -> None:
        k = self.per_leaf
        l2_per_pod, l2_up_ports, leaves_per_pod = tree.l2_per_pod, tree.l2_up_ports, tree.leaves_per_pod
        self.ports_per_l2 = ports_per_l2 = np.bincount(self.chosen_ports % l2_per_pod, minlength=l2_per_pod)
        l2_used = ports_per_l2 > 0
        max_ports_per_l2 = int(ports_per_l2.max())
        max_full_per_pod = min(leaves_per_pod, l2_up_ports // max_ports_per_l2 if max_ports_per_l2 else leaves_per_pod)
        # The most full leaves a pod can give: eligible leaves, and free L2 up ports
        # (full_per_pod full leaves need full_per_pod * ports_per_l2[x] ports at L2 switch x).
        self.full_per_pod_max = full_per_pod_max = np.minimum(
            self.n_full_ok, (pv.l2_free_ports[:, l2_used] // ports_per_l2[l2_used]).min(axis=1))
        self.bound = int(full_per_pod_max.sum()) * k + (k - 1)
        # full_per_pod values (descending) and the pods with room for each.
        self.full_choices = full_choices = np.arange(max_full_per_pod, 0, -1)
        self.pods_with_room = (full_per_pod_max[None, :] >= full_choices[:, None]).sum(axis=1)
        self.stage = 3

    def full_stage(self, tree: _TreeShape, pv: _PodsView, full_per_pod: int) -> tuple[np.ndarray, np.ndarray]:
        """(Sigma, the pods that can be full pods, fullest first) for ``full_per_pod``."""
        l2_per_pod, l2_up_ports = tree.l2_per_pod, tree.l2_up_ports
        l2_port_free = pv.l2_port_free
        pods_with_room = self.full_per_pod_max >= full_per_pod
        l2_need = full_per_pod * self.ports_per_l2
        l2_port_free_count = l2_port_free[pods_with_room].sum(axis=0)  # (l2_per_pod, l2_up_ports)
        port_rank = np.empty_like(l2_port_free_count)
        np.put_along_axis(port_rank, np.argsort(-l2_port_free_count, axis=1, kind="stable"),
                          np.arange(l2_up_ports)[None, :].repeat(l2_per_pod, 0), axis=1)
        sigma = port_rank < l2_need[:, None]
        full_pod_ok = pods_with_room & (l2_port_free | ~sigma[None, :, :]).all(axis=(1, 2))
        candidates = np.flatnonzero(full_pod_ok)
        pod_free = pv.pod_free
        return sigma, candidates[np.lexsort((candidates, pod_free[candidates]))]


@register_allocator
class JigsawAllocator(OptionsAllocator):
    """Link-reserving interference-free allocation (see the module docstring)."""

    name = "jigsaw"
    count_only = False
    FAMILIES = ("fattree",)

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        _fattree_levels(self, 1, 3)
        self.tree = _TreeShape(self.topology)
        self.memo = SelectMemo()

    def new_state(self) -> JigsawState:
        tree = self.tree
        st = JigsawState(self.n_nodes)
        st.leaf_port = np.full((tree.n_leaves, tree.leaf_up_ports), -1, dtype=np.int64)
        n_l2 = tree.n_pods * tree.l2_per_pod if tree.levels >= 3 else 0
        st.l2_port = np.full((n_l2, tree.l2_up_ports), -1, dtype=np.int64)
        st.topology = self.topology
        return st

    # -------------------------------------------------------------------------- select
    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        n = job.nodes
        if n > state.n_free:
            return None
        st: JigsawState = state  # type: ignore[assignment]
        entry = st.memo_entry
        if entry is None:
            # select reads only these masks (and n): an answer given before is the answer.
            entry = st.memo_entry = self.memo.entry(st.free, st.leaf_port == -1, st.l2_port == -1)
        found = entry.by_size.get(n, _UNKNOWN)
        if found is _UNKNOWN:
            view = entry.view
            if view is None:
                view = entry.view = _JigsawView(self.tree, st)
            found = entry.by_size[n] = self._select(n, st, view)
        # A copy, so that no two jobs ever share one placement object.
        return None if found is None else found.copy()

    def _select(self, n: int, st: JigsawState, view: "_JigsawView") -> Placement | None:
        """The placement of an ``n``-node job on ``st`` (``view``: what the state gives every size)."""
        tree = self.tree
        free = st.free
        leaf_free = view.leaf_free
        if n <= tree.nodes_per_leaf and n <= view.most_leaf_free:
            leaf = _best_fit(leaf_free, leaf_free >= n)
            return Placement(tree.first_free(free, leaf, n), JigsawInfo("leaf", _NO_PAIRS, _NO_PAIRS))
        if tree.levels < 2:
            return None
        # Every node of a multi-leaf job needs a free up port on its leaf (and, across pods,
        # one on an L2 switch of its pod): cheap bounds that settle most refusals.
        if view.capacity_total < n:
            return None
        found = None
        if view.most_group_capacity >= n:
            found = self._in_group(n, free, leaf_free, view.leaf_port_free, view.leaf_free_ports)
        if found is None and tree.levels >= 3 and view.pods_capacity >= n:
            found = self._across_pods(n, st, view)
        return found

    def _in_group(self, n: int, free: np.ndarray, leaf_free: np.ndarray, leaf_port_free: np.ndarray,
                  leaf_free_ports: np.ndarray) -> Placement | None:
        """Several leaves of one pod (of the whole tree when it has 2 levels)."""
        tree = self.tree
        n_groups, leaves_per_group = (tree.n_pods, tree.leaves_per_pod) if tree.levels >= 3 else (1, tree.n_leaves)
        group_leaf_free = leaf_free.reshape(n_groups, leaves_per_group)
        group_leaf_free_ports = leaf_free_ports.reshape(n_groups, leaves_per_group)
        group_port_free = leaf_port_free.reshape(n_groups, leaves_per_group, tree.leaf_up_ports)
        group_free = group_leaf_free.sum(axis=1)
        max_per_leaf = min(tree.nodes_per_leaf, tree.leaf_up_ports, n - 1)
        if max_per_leaf < 1:
            return None
        # leaves_with[group, per_leaf]: leaves of the group with per_leaf free nodes and as many free up ports.
        leaves_with = _leaves_with_at_least(np.minimum(group_leaf_free, group_leaf_free_ports), max_per_leaf)
        most_leaves_with = leaves_with.max(axis=0)
        for per_leaf in range(max_per_leaf, 0, -1):
            n_full_leaves, remainder_nodes = divmod(n, per_leaf)
            if n_full_leaves + (remainder_nodes > 0) > leaves_per_group:
                break  # fewer nodes per leaf need even more leaves
            if most_leaves_with[per_leaf] < n_full_leaves:
                continue  # no group has n_full_leaves leaves with per_leaf free nodes and ports
            eligible = (group_leaf_free >= per_leaf) & (group_leaf_free_ports >= per_leaf)
            free_count = (eligible[:, :, None] & group_port_free).sum(axis=1)  # (n_groups, leaf_up_ports)
            chosen_ports = np.argsort(-free_count, axis=1, kind="stable")[:, :per_leaf]
            port_mask = np.zeros((n_groups, tree.leaf_up_ports), dtype=bool)
            np.put_along_axis(port_mask, chosen_ports, True, axis=1)
            full_ok = eligible & (group_port_free | ~port_mask[:, None, :]).all(axis=2)
            n_full_ok = full_ok.sum(axis=1)
            if remainder_nodes == 0:
                group_ok = n_full_ok >= n_full_leaves
                remainder_ok = None
            else:
                free_chosen = (group_port_free & port_mask[:, None, :]).sum(axis=2)
                remainder_ok = (group_leaf_free >= remainder_nodes) & (free_chosen >= remainder_nodes)
                group_ok = (n_full_ok >= n_full_leaves + 1) | (
                    (n_full_ok >= n_full_leaves) & (remainder_ok & ~full_ok).any(axis=1))
            if not group_ok.any():
                continue
            group = _best_fit(group_free, group_ok)
            base = group * leaves_per_group
            full_leaves = np.flatnonzero(full_ok[group])
            full_leaves = full_leaves[np.lexsort((full_leaves, group_leaf_free[group, full_leaves]))][:n_full_leaves]
            ports = np.sort(chosen_ports[group])
            leaves = base + full_leaves
            counts = np.full(n_full_leaves, per_leaf)
            lp = _pairs(leaves, ports)
            if remainder_nodes:
                remainder_cands = remainder_ok[group].copy()
                remainder_cands[full_leaves] = False
                j = _best_fit(group_leaf_free[group], remainder_cands)
                remainder_ports = np.flatnonzero(group_port_free[group, j] & port_mask[group])[:remainder_nodes]
                lp = np.concatenate((lp, _pairs(np.array([base + j]), remainder_ports)))
                leaves = np.append(leaves, base + j)
                counts = np.append(counts, remainder_nodes)
            info = JigsawInfo("pod", lp, _NO_PAIRS, per_leaf, tuple(ports.tolist()))
            return Placement(tree.first_free_many(free, leaves, counts), info)
        return None

    def _across_pods(self, n: int, st: JigsawState, view: "_JigsawView") -> Placement | None:
        """Full leaves in several full pods and a remainder pod. What does not depend on ``n``
        (per ``per_leaf``: the chosen ports and eligible leaves; per ``full_per_pod``: Sigma
        and the pods that fit it) is derived once per state, in ``view``."""
        tree = self.tree
        pv = view.pods
        if pv is None:
            pv = view.pods = _PodsView(tree, st, view)
        nodes_bound = pv.nodes_bound
        for per_leaf in range(pv.max_per_leaf, 0, -1):
            if nodes_bound[per_leaf] < n:
                continue
            d = pv.per_leaf.get(per_leaf)
            if d is None:
                d = pv.per_leaf[per_leaf] = _PerLeaf(per_leaf)
            # Each bound ends this per_leaf when below n; a stage is derived the first time a
            # query passes the bound before it.
            if d.stage < 1:
                d.eligible_stage(view)
            if d.bound < n:
                continue
            if d.stage < 2:
                d.ports_stage(tree, view)
                if d.bound < n:
                    continue
            if d.stage < 3:
                d.pods_stage(tree, pv)
                if d.bound < n:
                    continue
            full_choices = d.full_choices
            per_pod_nodes = full_choices * per_leaf
            pods_needed = n // per_pod_nodes
            keep = (d.pods_with_room >= pods_needed) & (pods_needed >= 1) & ~(
                (pods_needed == 1) & (n % per_pod_nodes == 0))
            for full_per_pod in full_choices[keep].tolist():
                n_full_pods, nodes_left = divmod(n, full_per_pod * per_leaf)
                f = d.by_full.get(full_per_pod)
                if f is None:
                    f = d.by_full[full_per_pod] = d.full_stage(tree, pv, full_per_pod)
                sigma, candidates = f
                if len(candidates) < n_full_pods:
                    continue
                full_pods = candidates[:n_full_pods]
                remainder = None
                if nodes_left:
                    remainder = self._remainder_pod(nodes_left, per_leaf, full_pods, st.free, view.leaf_free, d.full_ok,
                                                    view.leaf_port_free, d.port_mask, d.ports_per_l2, pv.l2_port_free,
                                                    sigma, pv.pod_free)
                    if remainder is None:
                        continue
                return self._build_pods(per_leaf, full_per_pod, d.chosen_ports, full_pods, d.full_ok, sigma,
                                        d.ports_per_l2, st.free, view.leaf_free, remainder)
        return None

    def _remainder_pod(self, nodes_left: int, per_leaf: int, full_pods: np.ndarray, free: np.ndarray,
                       leaf_free: np.ndarray, full_ok: np.ndarray, leaf_port_free: np.ndarray, port_mask: np.ndarray,
                       ports_per_l2: np.ndarray, l2_port_free: np.ndarray, sigma: np.ndarray,
                       pod_free: np.ndarray) -> tuple | None:
        tree = self.tree
        n_pods, leaves_per_pod, l2_per_pod = tree.n_pods, tree.leaves_per_pod, tree.l2_per_pod
        n_full_leaves, remainder_nodes = divmod(nodes_left, per_leaf)
        is_full_pod = np.zeros(n_pods, dtype=bool)
        is_full_pod[full_pods] = True
        order = np.lexsort((np.arange(n_pods), pod_free))
        for pod in order.tolist():
            if is_full_pod[pod] or pod_free[pod] < nodes_left:
                continue
            leaves = np.arange(pod * leaves_per_pod, (pod + 1) * leaves_per_pod)
            full_leaves = np.flatnonzero(full_ok[leaves])
            if len(full_leaves) < n_full_leaves:
                continue
            full_leaves = full_leaves[np.lexsort((full_leaves, leaf_free[leaves][full_leaves]))][:n_full_leaves]
            remainder_ports = np.zeros(0, dtype=np.int64)
            remainder_leaf = -1
            if remainder_nodes:
                free_chosen = (leaf_port_free[leaves] & port_mask).sum(axis=1)
                remainder_ok = (leaf_free[leaves] >= remainder_nodes) & (free_chosen >= remainder_nodes)
                remainder_ok[full_leaves] = False
                j = _best_fit(leaf_free[leaves], remainder_ok)
                if j < 0:
                    continue
                remainder_leaf = int(leaves[j])
                remainder_ports = np.flatnonzero(leaf_port_free[remainder_leaf] & port_mask)[:remainder_nodes]
            l2_need = n_full_leaves * ports_per_l2 + np.bincount(remainder_ports % l2_per_pod, minlength=l2_per_pod)
            l2_available = l2_port_free[pod] & sigma
            if (l2_available.sum(axis=1) < l2_need).any():
                continue
            return pod, leaves[full_leaves], remainder_leaf, remainder_ports, l2_need, l2_available
        return None

    def _build_pods(self, per_leaf: int, full_per_pod: int, chosen_ports: np.ndarray, full_pods: np.ndarray,
                    full_ok: np.ndarray, sigma: np.ndarray, ports_per_l2: np.ndarray, free: np.ndarray,
                    leaf_free: np.ndarray, remainder: tuple | None) -> Placement:
        tree = self.tree
        leaves_per_pod, l2_per_pod = tree.leaves_per_pod, tree.l2_per_pod
        # full_per_pod best-fitting full-eligible leaves in each full pod.
        full_pod_leaf_free = leaf_free.reshape(tree.n_pods, leaves_per_pod)[full_pods]
        key = np.where(full_ok.reshape(tree.n_pods, leaves_per_pod)[full_pods], full_pod_leaf_free, np.iinfo(np.int64).max)
        pick = np.argsort(key, axis=1, kind="stable")[:, :full_per_pod]
        leaves = (full_pods[:, None] * leaves_per_pod + pick).reshape(-1)
        counts = np.full(len(leaves), per_leaf)
        leaf_pairs = [_pairs(leaves, chosen_ports)]
        # sigma (Sigma_x) at every used L2 switch x of every full pod.
        l2_switches, l2_up_port = np.nonzero(sigma & (ports_per_l2 > 0)[:, None])
        l2_rows = (full_pods[:, None] * l2_per_pod + l2_switches[None, :]).reshape(-1)
        l2_pairs = [np.column_stack((l2_rows, np.tile(l2_up_port, len(full_pods))))]
        if remainder is not None:
            pod, full_leaves, remainder_leaf, remainder_ports, l2_need, l2_available = remainder
            leaf_pairs.append(_pairs(full_leaves, chosen_ports))
            leaves = np.concatenate((leaves, full_leaves))
            counts = np.concatenate((counts, np.full(len(full_leaves), per_leaf)))
            if remainder_leaf >= 0:
                leaf_pairs.append(_pairs(np.array([remainder_leaf]), remainder_ports))
                leaves = np.append(leaves, remainder_leaf)
                counts = np.append(counts, len(remainder_ports))
            for l2_switch in np.flatnonzero(l2_need).tolist():
                # Free in this pod and within Sigma_x, so nested in the full pods' ports.
                l2_pairs.append(_pairs(np.array([pod * l2_per_pod + l2_switch]),
                                       np.flatnonzero(l2_available[l2_switch])[: l2_need[l2_switch]]))
        info = JigsawInfo("pods", np.concatenate(leaf_pairs), np.concatenate(l2_pairs) if l2_pairs else _NO_PAIRS,
                          per_leaf, tuple(chosen_ports.tolist()))
        return Placement(tree.first_free_many(free, leaves, counts), info)

    # -------------------------------------------------------------------------- commit
    def _info_for(self, job: Job, nodes: np.ndarray, st: JigsawState) -> JigsawInfo:
        info = placement_info(nodes)
        if isinstance(info, JigsawInfo):
            return info
        again = self.select(job, st)
        if again is not None and np.array_equal(again, nodes):
            return again.info
        raise SchedulerError(
            f"jigsaw: job {job.job_id} was committed on nodes without their link reservation; "
            "commit the placement that select returned"
        )

    def commit(self, job: Job, nodes: np.ndarray, state: AllocState) -> None:
        self._check_nodes(job, nodes)
        st: JigsawState = state  # type: ignore[assignment]
        info = self._info_for(job, nodes, st)
        lp, l2 = info.leaf_ports, info.l2_ports
        taken = (len(lp) and (st.leaf_port[lp[:, 0], lp[:, 1]] != -1).any()) or (
            len(l2) and (st.l2_port[l2[:, 0], l2[:, 1]] != -1).any())
        if taken:
            raise SchedulerError(f"jigsaw: job {job.job_id} was given links reserved by another job")
        st.mark_busy(job.job_id, nodes)
        if len(lp):
            st.leaf_port[lp[:, 0], lp[:, 1]] = job.job_id
        if len(l2):
            st.l2_port[l2[:, 0], l2[:, 1]] = job.job_id
        st.placements[job.job_id] = info
        st.forget()

    def release(self, job: Job, nodes: np.ndarray, state: AllocState) -> None:
        st: JigsawState = state  # type: ignore[assignment]
        st.mark_free(job.job_id, nodes)
        info: JigsawInfo | None = st.placements.pop(job.job_id, None)
        if info is None:
            raise SchedulerError(f"jigsaw: job {job.job_id} released without a placement")
        lp, l2 = info.leaf_ports, info.l2_ports
        if len(lp):
            st.leaf_port[lp[:, 0], lp[:, 1]] = -1
        if len(l2):
            st.l2_port[l2[:, 0], l2[:, 1]] = -1
        st.forget()

    def block(self, placements: "Sequence[tuple[Job, np.ndarray]]", state: AllocState) -> None:
        """Hold, in ``state``, the nodes and the reserved ports of each placement (a union)."""
        super().block(placements, state)
        st: JigsawState = state  # type: ignore[assignment]
        for job, nodes in placements:
            info = placement_info(nodes)
            if not isinstance(info, JigsawInfo):
                raise SchedulerError(f"jigsaw: reservation of job {job.job_id} carries no link reservation")
            lp, l2 = info.leaf_ports, info.l2_ports
            if len(lp):
                cur = st.leaf_port[lp[:, 0], lp[:, 1]]
                st.leaf_port[lp[:, 0], lp[:, 1]] = np.where(cur == -1, job.job_id, cur)
            if len(l2):
                cur = st.l2_port[l2[:, 0], l2[:, 1]]
                st.l2_port[l2[:, 0], l2[:, 1]] = np.where(cur == -1, job.job_id, cur)
        st.forget()
