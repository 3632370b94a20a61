"""Interference-free allocators on fat-trees: Pollard/Jain T1/T2/T3 and link reservation.

Both guarantee that no directed switch link carries the traffic of two jobs.

``t123`` (Pollard, Jain, Herbein, Bhatele, "Evaluation of an Interference-free Node
Allocation Policy on Fat-tree Clusters", SC18). Jobs are typed by size:

* **T1**, ``n <= nodes per leaf``: within one leaf. Its traffic never leaves the leaf, so it
  may share the leaf with anything. Placed in the fullest pod that has a leaf with room,
  on the fullest such leaf in it.
* **T2**, ``n <= nodes per pod``: within one pod, on leaves that hold no other T2 or T3
  job, in a pod that no T3 job owns. Placed in the fullest pod that fits, on its emptiest
  eligible leaves.
* **T3**, larger: on whole pods (a T3 job owns each pod it touches: no T2 job and no other
  T3 job there), sharing leaves only with T1 jobs. Placed on the emptiest eligible pods and,
  in the last one, the emptiest leaves.

Under every minimal route (any ECMP choice of up ports) a leaf's up links then carry one
job's traffic (T1 traffic stays below the leaf), an L2 switch's down link to a leaf carries
traffic to that leaf's one T2/T3 job, and a pod's L2-to-spine links and spine-to-L2 links
carry its one T3 job's traffic. This holds on trees of up to 3 levels (deeper trees share
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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import SchedulerError, UserError
from ..job import Job
from .base import OptionsAllocator, Placement, PlacementState, placement_info
from .interface import AllocState
from .registry import register_allocator

__all__ = [
    "T123Allocator",
    "T123State",
    "T123Info",
    "JigsawAllocator",
    "JigsawState",
    "JigsawInfo",
]


class _Tree:
    """Pod/leaf geometry of a fat-tree as plain ints."""

    def __init__(self, topo: Any):
        self.topo = topo
        self.levels = topo.levels
        self.N = topo.n_nodes
        self.npl = topo.nodes_per_leaf
        self.NL = topo.n_leaves
        self.npp = topo.nodes_per_pod
        self.NP = topo.n_pods
        self.LP = topo.leaves_per_pod
        self.W2 = topo.uplinks_per_leaf
        self.w2 = topo.up[1] if self.levels >= 2 else 0
        self.W3 = topo.up[2] * topo.parallel[2] if self.levels >= 3 else 0

    def leaf_free(self, free: np.ndarray) -> np.ndarray:
        return free.reshape(self.NL, self.npl).sum(axis=1)

    def first_free(self, free: np.ndarray, leaf: int, count: int) -> np.ndarray:
        base = leaf * self.npl
        return base + np.flatnonzero(free[base:base + self.npl])[:count]

    def first_free_many(self, free: np.ndarray, leaves: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """The lowest ``counts[i]`` free nodes of each leaf ``leaves[i]``, sorted."""
        rows = free.reshape(self.NL, self.npl)[leaves]
        take = rows & (np.cumsum(rows, axis=1) <= np.asarray(counts)[:, None])
        i, j = np.nonzero(take)
        return np.sort(np.asarray(leaves)[i] * self.npl + j)


def _fattree_levels(alloc: OptionsAllocator, lo: int, hi: int) -> None:
    lv = alloc.topology.levels
    if not lo <= lv <= hi:
        raise UserError(
            f"allocator {alloc.name!r} supports fat-trees of {lo} to {hi} levels; this one has {lv} "
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


class T123State(PlacementState):
    """Occupancy plus ``leaf_big`` (the T2/T3 job on each leaf, -1), ``pod_t3`` (the T3 job
    owning each pod, -1) and ``pod_t2`` (T2 jobs in each pod)."""

    __slots__ = ("leaf_big", "pod_t3", "pod_t2")

    def copy(self) -> "T123State":
        c = super().copy()
        c.leaf_big = self.leaf_big.copy()
        c.pod_t3 = self.pod_t3.copy()
        c.pod_t2 = self.pod_t2.copy()
        return c  # type: ignore[return-value]


@register_allocator
class T123Allocator(OptionsAllocator):
    """Pollard/Jain T1/T2/T3 interference-free allocation (see the module docstring)."""

    name = "t123"
    count_only = False
    FAMILIES = ("fattree",)

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        _fattree_levels(self, 1, 3)
        self.t = _Tree(self.topology)

    def job_type(self, n: int) -> int:
        """1, 2 or 3 for an ``n``-node job."""
        t = self.t
        return 1 if n <= t.npl else 2 if n <= t.npp else 3

    def new_state(self) -> T123State:
        st = T123State(self.n_nodes)
        st.leaf_big = np.full(self.t.NL, -1, dtype=np.int64)
        st.pod_t3 = np.full(self.t.NP, -1, dtype=np.int64)
        st.pod_t2 = np.zeros(self.t.NP, dtype=np.int64)
        return st

    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        n = job.nodes
        if n > state.n_free:
            return None
        st: T123State = state  # type: ignore[assignment]
        t = self.t
        free = st.free
        fl = t.leaf_free(free)
        fpod = fl.reshape(t.NP, t.LP).sum(axis=1)
        kind = self.job_type(n)
        if kind == 1:
            cand = fl >= n
            if not cand.any():
                return None
            podc = cand.reshape(t.NP, t.LP).any(axis=1)
            p = _best_fit(fpod, podc)
            leaves = np.arange(p * t.LP, (p + 1) * t.LP)
            leaf = int(leaves[_best_fit(fl[leaves], cand[leaves])])
            nodes = t.first_free(free, leaf, n)
            return Placement(nodes, T123Info(1, (), ()))
        if kind == 2:
            elig = (st.leaf_big == -1) & np.repeat(st.pod_t3 == -1, t.LP)
            efree = np.where(elig, fl, 0).reshape(t.NP, t.LP)
            fits = efree.sum(axis=1) >= n
            if not fits.any():
                return None
            p = _best_fit(fpod, fits)
            ef = efree[p]
            order = np.lexsort((np.arange(t.LP), -ef))  # emptiest eligible leaves first
            take = _greedy(ef[order], n)
            parts, used = [], []
            for j, c in zip(order.tolist(), take.tolist()):
                if c:
                    leaf = p * t.LP + j
                    parts.append(t.first_free(free, leaf, c))
                    used.append(leaf)
            return Placement(np.sort(np.concatenate(parts)), T123Info(2, tuple(sorted(used)), (p,)))
        elig = (st.pod_t3 == -1) & (st.pod_t2 == 0)
        efree = np.where(elig, fpod, 0)
        if efree.sum() < n:
            return None
        porder = np.lexsort((np.arange(t.NP), -efree))  # emptiest pods first
        cum = np.cumsum(efree[porder])
        m = int(np.searchsorted(cum, n)) + 1
        pods = porder[:m]
        parts, used = [], []
        rem = n
        for p in pods.tolist():
            lf = fl[p * t.LP:(p + 1) * t.LP]
            order = np.lexsort((np.arange(t.LP), -lf))
            take = _greedy(lf[order], min(rem, int(lf.sum())))
            for j, c in zip(order.tolist(), take.tolist()):
                if c:
                    leaf = p * t.LP + j
                    parts.append(t.first_free(free, leaf, c))
                    used.append(leaf)
            rem -= int(take.sum())
        return Placement(np.sort(np.concatenate(parts)), T123Info(3, tuple(sorted(used)), tuple(sorted(pods.tolist()))))

    def _info_for(self, job: Job, nodes: np.ndarray) -> T123Info:
        info = placement_info(nodes)
        if isinstance(info, T123Info):
            return info
        t = self.t
        kind = self.job_type(len(nodes))
        leaves = tuple(np.unique(np.asarray(nodes) // t.npl).tolist())
        pods = tuple(np.unique(np.asarray(leaves) // t.LP).tolist())
        return T123Info(kind, leaves if kind > 1 else (), pods if kind > 1 else ())

    def commit(self, job: Job, nodes: np.ndarray, state: AllocState) -> None:
        self._check_nodes(job, nodes)
        st: T123State = state  # type: ignore[assignment]
        info = self._info_for(job, nodes)
        t = self.t
        lv = np.asarray(info.leaves, dtype=np.int64)
        pv = np.asarray(info.pods, dtype=np.int64)
        leaves_of_nodes = np.unique(np.asarray(nodes) // t.npl)
        if info.kind == 1:
            if len(leaves_of_nodes) != 1:
                raise SchedulerError(f"t123: T1 job {job.job_id} must lie within one leaf")
        elif info.kind == 2:
            if len(pv) != 1 or (leaves_of_nodes // t.LP != pv[0]).any():
                raise SchedulerError(f"t123: T2 job {job.job_id} must lie within one pod")
            if (st.leaf_big[lv] != -1).any() or st.pod_t3[pv[0]] != -1:
                raise SchedulerError(f"t123: T2 job {job.job_id} was placed on a leaf or pod claimed by another T2/T3 job")
        else:
            if (st.pod_t3[pv] != -1).any() or (st.pod_t2[pv] != 0).any():
                raise SchedulerError(f"t123: T3 job {job.job_id} was placed in a pod holding another T2/T3 job")
        st.mark_busy(job.job_id, nodes)
        if info.kind == 2:
            st.leaf_big[lv] = job.job_id
            st.pod_t2[pv] += 1
        elif info.kind == 3:
            st.leaf_big[lv] = job.job_id
            st.pod_t3[pv] = job.job_id
        st.placements[job.job_id] = info

    def release(self, job: Job, nodes: np.ndarray, state: AllocState) -> None:
        st: T123State = state  # type: ignore[assignment]
        st.mark_free(job.job_id, nodes)
        info = st.placements.pop(job.job_id, None)
        if info is None:
            raise SchedulerError(f"t123: job {job.job_id} released without a placement")
        lv = np.asarray(info.leaves, dtype=np.int64)
        pv = np.asarray(info.pods, dtype=np.int64)
        if info.kind == 2:
            st.leaf_big[lv] = -1
            st.pod_t2[pv] -= 1
        elif info.kind == 3:
            st.leaf_big[lv] = -1
            st.pod_t3[pv] = -1

    def block(self, placements: "Sequence[tuple[Job, np.ndarray]]", state: AllocState) -> None:
        """Hold, in ``state``, the nodes and the leaf/pod claims of each placement (a union)."""
        super().block(placements, state)
        st: T123State = state  # type: ignore[assignment]
        for job, nodes in placements:
            info = self._info_for(job, nodes)
            lv = np.asarray(info.leaves, dtype=np.int64)
            pv = np.asarray(info.pods, dtype=np.int64)
            if info.kind == 2:
                st.leaf_big[lv] = np.where(st.leaf_big[lv] == -1, job.job_id, st.leaf_big[lv])
                st.pod_t2[pv] += 1
            elif info.kind == 3:
                st.leaf_big[lv] = np.where(st.leaf_big[lv] == -1, job.job_id, st.leaf_big[lv])
                st.pod_t3[pv] = np.where(st.pod_t3[pv] == -1, job.job_id, st.pod_t3[pv])


def _greedy(cap: np.ndarray, n: int) -> np.ndarray:
    """Take from ``cap`` in order, each whole, the last partly, ``n`` in all."""
    cum = np.cumsum(cap)
    take = np.minimum(cap, np.maximum(0, n - (cum - cap)))
    return take


# ================================================================================= jigsaw
@dataclass(frozen=True)
class JigsawInfo:
    """A link-reserving placement.

    ``kind``: ``"leaf"`` (one leaf, no links), ``"pod"`` (several leaves of one pod, or of a
    2-level tree) or ``"pods"`` (several pods). ``leaf_ports``: (leaf, up port) pairs
    reserved; ``l2_ports``: (L2 switch index within level 2, up port) pairs reserved.
    ``k``: nodes on each full leaf; ``ports``: the full leaves' port indices (Pi).
    """

    kind: str
    leaf_ports: np.ndarray
    l2_ports: np.ndarray
    k: int = 0
    ports: tuple[int, ...] = ()


_NO_PAIRS = np.zeros((0, 2), dtype=np.int64)


def _leaves_with_at_least(cap: np.ndarray, kmax: int) -> np.ndarray:
    """``out[g, k]``: leaves of group ``g`` whose ``cap`` is at least ``k`` (k = 0..kmax)."""
    G, L = cap.shape
    idx = (np.arange(G)[:, None] * (kmax + 2) + np.minimum(cap, kmax + 1)).reshape(-1)
    hist = np.bincount(idx, minlength=G * (kmax + 2)).reshape(G, kmax + 2)
    return np.cumsum(hist[:, ::-1], axis=1)[:, ::-1][:, : kmax + 1]


def _pairs(rows: np.ndarray, ports: np.ndarray) -> np.ndarray:
    """(row, port) pairs: every port of ``ports`` for every row of ``rows`` (int64, m x 2)."""
    rows = np.asarray(rows, dtype=np.int64)
    ports = np.asarray(ports, dtype=np.int64)
    return np.column_stack((np.repeat(rows, len(ports)), np.tile(ports, len(rows))))


class JigsawState(PlacementState):
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
            r = topo.route_restricted(src, dst, mask, key)
            if r is None:
                raise SchedulerError(f"jigsaw: no reserved route from node {src} to node {dst} for job {job_id}")
            return r

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


@register_allocator
class JigsawAllocator(OptionsAllocator):
    """Link-reserving interference-free allocation (see the module docstring)."""

    name = "jigsaw"
    count_only = False
    FAMILIES = ("fattree",)

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        _fattree_levels(self, 1, 3)
        self.t = _Tree(self.topology)

    def new_state(self) -> JigsawState:
        t = self.t
        st = JigsawState(self.n_nodes)
        st.leaf_port = np.full((t.NL, t.W2), -1, dtype=np.int64)
        n_l2 = t.NP * t.w2 if t.levels >= 3 else 0
        st.l2_port = np.full((n_l2, t.W3), -1, dtype=np.int64)
        st.topology = self.topology
        return st

    # -------------------------------------------------------------------------- select
    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        n = job.nodes
        if n > state.n_free:
            return None
        st: JigsawState = state  # type: ignore[assignment]
        t = self.t
        free = st.free
        fl = t.leaf_free(free)
        if n <= t.npl:
            leaf = _best_fit(fl, fl >= n)
            if leaf >= 0:
                return Placement(t.first_free(free, leaf, n), JigsawInfo("leaf", _NO_PAIRS, _NO_PAIRS))
        if t.levels < 2:
            return None
        LPF = st.leaf_port == -1
        fpc = LPF.sum(axis=1)
        # Every node of a multi-leaf job needs a free up port on its leaf (and, across pods,
        # one on an L2 switch of its pod): cheap bounds that settle most refusals.
        cap = np.minimum(fl, fpc)
        if int(cap.sum()) < n:
            return None
        G = t.NP if t.levels >= 3 else 1
        got = None
        if int(cap.reshape(G, -1).sum(axis=1).max()) >= n:
            got = self._in_group(n, free, fl, LPF, fpc)
        if got is None and t.levels >= 3:
            l2cap = (st.l2_port == -1).reshape(t.NP, -1).sum(axis=1)
            if int(np.minimum(cap.reshape(t.NP, -1).sum(axis=1), l2cap).sum()) >= n:
                got = self._across_pods(n, st, free, fl, LPF, fpc)
        return got

    def _in_group(self, n: int, free: np.ndarray, fl: np.ndarray, LPF: np.ndarray, fpc: np.ndarray) -> Placement | None:
        """Several leaves of one pod (of the whole tree when it has 2 levels)."""
        t = self.t
        G, LG = (t.NP, t.LP) if t.levels >= 3 else (1, t.NL)
        fl3 = fl.reshape(G, LG)
        fpc3 = fpc.reshape(G, LG)
        P3 = LPF.reshape(G, LG, t.W2)
        gfree = fl3.sum(axis=1)
        kmax = min(t.npl, t.W2, n - 1)
        if kmax < 1:
            return None
        # el[g, k]: leaves of group g with k free nodes and k free up ports.
        el = _leaves_with_at_least(np.minimum(fl3, fpc3), kmax)
        elmax = el.max(axis=0)
        for k in range(kmax, 0, -1):
            f, r = divmod(n, k)
            if f + (r > 0) > LG:
                break  # smaller k needs even more leaves
            if elmax[k] < f:
                continue  # no group has f leaves with k free nodes and k free ports
            E = (fl3 >= k) & (fpc3 >= k)
            cnt = (E[:, :, None] & P3).sum(axis=1)  # (G, W2)
            pi = np.argsort(-cnt, axis=1, kind="stable")[:, :k]
            pim = np.zeros((G, t.W2), dtype=bool)
            np.put_along_axis(pim, pi, True, axis=1)
            FL = E & (P3 | ~pim[:, None, :]).all(axis=2)
            nFL = FL.sum(axis=1)
            if r == 0:
                ok = nFL >= f
                RL = None
            else:
                inpi = (P3 & pim[:, None, :]).sum(axis=2)
                RL = (fl3 >= r) & (inpi >= r)
                ok = (nFL >= f + 1) | ((nFL >= f) & (RL & ~FL).any(axis=1))
            if not ok.any():
                continue
            g = _best_fit(gfree, ok)
            base = g * LG
            full = np.flatnonzero(FL[g])
            full = full[np.lexsort((full, fl3[g, full]))][:f]
            ports = np.sort(pi[g])
            leaves = base + full
            counts = np.full(f, k)
            lp = _pairs(leaves, ports)
            if r:
                rl = RL[g].copy()
                rl[full] = False
                j = _best_fit(fl3[g], rl)
                q = np.flatnonzero(P3[g, j] & pim[g])[:r]
                lp = np.concatenate((lp, _pairs(np.array([base + j]), q)))
                leaves = np.append(leaves, base + j)
                counts = np.append(counts, r)
            info = JigsawInfo("pod", lp, _NO_PAIRS, k, tuple(ports.tolist()))
            return Placement(t.first_free_many(free, leaves, counts), info)
        return None

    def _across_pods(self, n: int, st: JigsawState, free: np.ndarray, fl: np.ndarray, LPF: np.ndarray,
                     fpc: np.ndarray) -> Placement | None:
        t = self.t
        NP, LP, W2, w2, W3 = t.NP, t.LP, t.W2, t.w2, t.W3
        SF = (st.l2_port == -1).reshape(NP, w2, W3)
        sfc = SF.sum(axis=2)  # free up ports of each L2 switch (NP, w2)
        pfree = fl.reshape(NP, LP).sum(axis=1)
        kmax = min(t.npl, W2)
        # Upper bound on the job nodes each k allows, before choosing ports: a full pod gives
        # at most (its leaves with k free nodes and ports) and (its free L2 up ports // k)
        # full leaves, and a remainder leaf adds fewer than k nodes.
        el = _leaves_with_at_least(np.minimum(fl, fpc).reshape(NP, LP), kmax)  # (NP, kmax + 1)
        ks = np.arange(kmax + 1)
        ub = (np.minimum(el, sfc.sum(axis=1)[:, None] // np.maximum(ks, 1)[None, :]).sum(axis=0) * ks + ks - 1)
        for k in range(kmax, 0, -1):
            if ub[k] < n:
                continue
            E = (fl >= k) & (fpc >= k)
            if int(E.sum()) * k + (k - 1) < n:
                continue  # every eligible leaf full plus a remainder leaf cannot hold the job
            cnt = (E[:, None] & LPF).sum(axis=0)
            pi = np.sort(np.argsort(-cnt, kind="stable")[:k])
            pim = np.zeros(W2, dtype=bool)
            pim[pi] = True
            FL = E & (LPF | ~pim).all(axis=1)
            nFL = FL.reshape(NP, LP).sum(axis=1)
            if int(nFL.sum()) * k + (k - 1) < n:
                continue
            mult = np.bincount(pi % w2, minlength=w2)
            used = mult > 0
            mmax = int(mult.max())
            Fmax = min(LP, W3 // mmax if mmax else LP)
            # The most full leaves a pod can give: eligible leaves, and free L2 up ports
            # (F full leaves need F * mult[x] ports at each L2 switch x).
            podF = np.minimum(nFL, (sfc[:, used] // mult[used]).min(axis=1))
            if int(podF.sum()) * k + (k - 1) < n:
                continue
            # F values (descending) with enough pods for G = n // (F k) full pods; G == 1
            # without a remainder is a single pod (tried before).
            Fs = np.arange(Fmax, 0, -1)
            Gs = n // (Fs * k)
            enough = (podF[None, :] >= Fs[:, None]).sum(axis=1) >= Gs
            keep = enough & (Gs >= 1) & ~((Gs == 1) & (n % (Fs * k) == 0))
            for F in Fs[keep].tolist():
                G, rem = divmod(n, F * k)
                pods0 = podF >= F
                need = F * mult
                cs = SF[pods0].sum(axis=0)  # (w2, W3)
                rank = np.empty_like(cs)
                np.put_along_axis(rank, np.argsort(-cs, axis=1, kind="stable"), np.arange(W3)[None, :].repeat(w2, 0), axis=1)
                sig = rank < need[:, None]
                fullok = pods0 & (SF | ~sig[None, :, :]).all(axis=(1, 2))
                if int(fullok.sum()) < G:
                    continue
                cand = np.flatnonzero(fullok)
                fulls = cand[np.lexsort((cand, pfree[cand]))][:G]
                remainder = None
                if rem:
                    remainder = self._remainder_pod(rem, k, fulls, free, fl, FL, LPF, pim, mult, SF, sig, pfree)
                    if remainder is None:
                        continue
                return self._build_pods(k, F, pi, fulls, FL, sig, mult, free, fl, remainder)
        return None

    def _remainder_pod(self, rem: int, k: int, fulls: np.ndarray, free: np.ndarray, fl: np.ndarray, FL: np.ndarray,
                       LPF: np.ndarray, pim: np.ndarray, mult: np.ndarray, SF: np.ndarray, sig: np.ndarray,
                       pfree: np.ndarray) -> tuple | None:
        t = self.t
        NP, LP, w2 = t.NP, t.LP, t.w2
        f2, r2 = divmod(rem, k)
        taken = np.zeros(NP, dtype=bool)
        taken[fulls] = True
        order = np.lexsort((np.arange(NP), pfree))
        for p in order.tolist():
            if taken[p] or pfree[p] < rem:
                continue
            leaves = np.arange(p * LP, (p + 1) * LP)
            fll = np.flatnonzero(FL[leaves])
            if len(fll) < f2:
                continue
            fll = fll[np.lexsort((fll, fl[leaves][fll]))][:f2]
            rports = np.zeros(0, dtype=np.int64)
            rleaf = -1
            if r2:
                inpi = (LPF[leaves] & pim).sum(axis=1)
                rl = (fl[leaves] >= r2) & (inpi >= r2)
                rl[fll] = False
                j = _best_fit(fl[leaves], rl)
                if j < 0:
                    continue
                rleaf = int(leaves[j])
                rports = np.flatnonzero(LPF[rleaf] & pim)[:r2]
            need2 = f2 * mult + np.bincount(rports % w2, minlength=w2)
            avail = SF[p] & sig
            if (avail.sum(axis=1) < need2).any():
                continue
            return p, leaves[fll], rleaf, rports, need2, avail
        return None

    def _build_pods(self, k: int, F: int, pi: np.ndarray, fulls: np.ndarray, FL: np.ndarray, sig: np.ndarray,
                    mult: np.ndarray, free: np.ndarray, fl: np.ndarray, remainder: tuple | None) -> Placement:
        t = self.t
        LP, w2 = t.LP, t.w2
        # F best-fitting full-eligible leaves in each full pod.
        fl2 = fl.reshape(t.NP, LP)[fulls]
        key = np.where(FL.reshape(t.NP, LP)[fulls], fl2, np.iinfo(np.int64).max)
        pick = np.argsort(key, axis=1, kind="stable")[:, :F]
        leaves = (fulls[:, None] * LP + pick).reshape(-1)
        counts = np.full(len(leaves), k)
        lp = [_pairs(leaves, pi)]
        # Sigma_x at every used L2 switch x of every full pod.
        xs, ts = np.nonzero(sig & (mult > 0)[:, None])
        l2 = [np.column_stack(((fulls[:, None] * w2 + xs[None, :]).reshape(-1), np.tile(ts, len(fulls))))]
        if remainder is not None:
            p, fll, rleaf, rports, need2, avail = remainder
            lp.append(_pairs(fll, pi))
            leaves = np.concatenate((leaves, fll))
            counts = np.concatenate((counts, np.full(len(fll), k)))
            if rleaf >= 0:
                lp.append(_pairs(np.array([rleaf]), rports))
                leaves = np.append(leaves, rleaf)
                counts = np.append(counts, len(rports))
            for x in np.flatnonzero(need2).tolist():
                # Free in this pod and within Sigma_x, so nested in the full pods' ports.
                l2.append(_pairs(np.array([p * w2 + x]), np.flatnonzero(avail[x])[: need2[x]]))
        info = JigsawInfo("pods", np.concatenate(lp), np.concatenate(l2) if l2 else _NO_PAIRS, k, tuple(pi.tolist()))
        return Placement(t.first_free_many(free, leaves, counts), info)

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
