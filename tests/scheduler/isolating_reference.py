"""The t123 and jigsaw searches as they stood before select was memoized and derived per
state: the reference the tests hold the allocators to (same placements, same link
reservations). Verbatim copies of the methods of that version, on subclasses that change
nothing else; not registered."""

from __future__ import annotations

from typing import Any

import numpy as np

from scheduler.allocators.base import Placement
from scheduler.allocators.interface import AllocState
from scheduler.allocators.isolating import (JigsawAllocator, JigsawInfo, JigsawState, T123Allocator, T123Info,
                                            T123State)
from scheduler.job import Job

_NO_PAIRS = np.zeros((0, 2), dtype=np.int64)


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


def _best_fit(values: np.ndarray, mask: np.ndarray) -> int:
    """Index of the smallest value where ``mask`` (ties: lowest index); -1 if none."""
    idx = np.flatnonzero(mask)
    if not len(idx):
        return -1
    return int(idx[np.argmin(values[idx])])




def _greedy(capacity: np.ndarray, n: int) -> np.ndarray:
    """Take from ``capacity`` in order, each whole, the last partly, ``n`` in all."""
    cum = np.cumsum(capacity)
    take = np.minimum(capacity, np.maximum(0, n - (cum - capacity)))
    return take




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
    return np.column_stack((np.repeat(rows, len(ports)), np.tile(ports, len(rows))))



class ReferenceT123(T123Allocator):
    """t123 with the select of the reference version."""

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        self.tree = _TreeShape(self.topology)

    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        n = job.nodes
        if n > state.n_free:
            return None
        st: T123State = state  # type: ignore[assignment]
        tree = self.tree
        free = st.free
        leaf_free = tree.free_per_leaf(free)
        pod_free = leaf_free.reshape(tree.n_pods, tree.leaves_per_pod).sum(axis=1)
        kind = self.job_type(n)
        if kind == 1:
            candidates = leaf_free >= n
            if not candidates.any():
                return None
            pod_has_candidate = candidates.reshape(tree.n_pods, tree.leaves_per_pod).any(axis=1)
            pod = _best_fit(pod_free, pod_has_candidate)
            leaves = np.arange(pod * tree.leaves_per_pod, (pod + 1) * tree.leaves_per_pod)
            leaf = int(leaves[_best_fit(leaf_free[leaves], candidates[leaves])])
            nodes = tree.first_free(free, leaf, n)
            return Placement(nodes, T123Info(1, (), ()))
        if kind == 2:
            eligible = st.leaf_claim == -1
            if self.strict:
                eligible &= np.repeat(st.pod_owner == -1, tree.leaves_per_pod)
            eligible_free = np.where(eligible, leaf_free, 0).reshape(tree.n_pods, tree.leaves_per_pod)
            fits = eligible_free.sum(axis=1) >= n
            if not fits.any():
                return None
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
        eligible = st.pod_owner == -1
        if self.strict:
            eligible &= st.pod_t2_jobs == 0
        # A T3 job uses the free nodes of the leaves no T2 job claims (all of them under the
        # whole-pods rule, where its pods hold no T2 job).
        leaf_free = np.where(st.leaf_claim == -1, leaf_free, 0)
        pod_free = leaf_free.reshape(tree.n_pods, tree.leaves_per_pod).sum(axis=1)
        eligible_free = np.where(eligible, pod_free, 0)
        if eligible_free.sum() < n:
            return None
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


class ReferenceJigsaw(JigsawAllocator):
    """jigsaw with the select (and its search) of the reference version."""

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        self.tree = _TreeShape(self.topology)

    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        n = job.nodes
        if n > state.n_free:
            return None
        st: JigsawState = state  # type: ignore[assignment]
        tree = self.tree
        free = st.free
        leaf_free = tree.free_per_leaf(free)
        if n <= tree.nodes_per_leaf:
            leaf = _best_fit(leaf_free, leaf_free >= n)
            if leaf >= 0:
                return Placement(tree.first_free(free, leaf, n), JigsawInfo("leaf", _NO_PAIRS, _NO_PAIRS))
        if tree.levels < 2:
            return None
        leaf_port_free = st.leaf_port == -1
        leaf_free_ports = leaf_port_free.sum(axis=1)
        # Every node of a multi-leaf job needs a free up port on its leaf (and, across pods,
        # one on an L2 switch of its pod): cheap bounds that settle most refusals.
        capacity = np.minimum(leaf_free, leaf_free_ports)
        if int(capacity.sum()) < n:
            return None
        n_groups = tree.n_pods if tree.levels >= 3 else 1
        found = None
        if int(capacity.reshape(n_groups, -1).sum(axis=1).max()) >= n:
            found = self._in_group(n, free, leaf_free, leaf_port_free, leaf_free_ports)
        if found is None and tree.levels >= 3:
            l2_free_per_pod = (st.l2_port == -1).reshape(tree.n_pods, -1).sum(axis=1)
            if int(np.minimum(capacity.reshape(tree.n_pods, -1).sum(axis=1), l2_free_per_pod).sum()) >= n:
                found = self._across_pods(n, st, free, leaf_free, leaf_port_free, leaf_free_ports)
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

    def _across_pods(self, n: int, st: JigsawState, free: np.ndarray, leaf_free: np.ndarray, leaf_port_free: np.ndarray,
                     leaf_free_ports: np.ndarray) -> Placement | None:
        tree = self.tree
        n_pods, leaves_per_pod, leaf_up_ports = tree.n_pods, tree.leaves_per_pod, tree.leaf_up_ports
        l2_per_pod, l2_up_ports = tree.l2_per_pod, tree.l2_up_ports
        l2_port_free = (st.l2_port == -1).reshape(n_pods, l2_per_pod, l2_up_ports)
        l2_free_ports = l2_port_free.sum(axis=2)  # free up ports of each L2 switch (n_pods, l2_per_pod)
        pod_free = leaf_free.reshape(n_pods, leaves_per_pod).sum(axis=1)
        max_per_leaf = min(tree.nodes_per_leaf, leaf_up_ports)
        # Upper bound on the job nodes each per_leaf allows, before choosing ports: a full pod
        # gives at most (its leaves with per_leaf free nodes and ports) and (its free L2 up
        # ports // per_leaf) full leaves, and a remainder leaf adds fewer than per_leaf nodes.
        leaf_capacity = np.minimum(leaf_free, leaf_free_ports).reshape(n_pods, leaves_per_pod)
        leaves_with = _leaves_with_at_least(leaf_capacity, max_per_leaf)  # (n_pods, max_per_leaf + 1)
        per_leaf_choices = np.arange(max_per_leaf + 1)
        full_leaves_bound = np.minimum(
            leaves_with, l2_free_ports.sum(axis=1)[:, None] // np.maximum(per_leaf_choices, 1)[None, :]).sum(axis=0)
        nodes_bound = (full_leaves_bound * per_leaf_choices + per_leaf_choices - 1)
        for per_leaf in range(max_per_leaf, 0, -1):
            if nodes_bound[per_leaf] < n:
                continue
            eligible = (leaf_free >= per_leaf) & (leaf_free_ports >= per_leaf)
            if int(eligible.sum()) * per_leaf + (per_leaf - 1) < n:
                continue  # every eligible leaf full plus a remainder leaf cannot hold the job
            free_count = (eligible[:, None] & leaf_port_free).sum(axis=0)
            chosen_ports = np.sort(np.argsort(-free_count, kind="stable")[:per_leaf])
            port_mask = np.zeros(leaf_up_ports, dtype=bool)
            port_mask[chosen_ports] = True
            full_ok = eligible & (leaf_port_free | ~port_mask).all(axis=1)
            n_full_ok = full_ok.reshape(n_pods, leaves_per_pod).sum(axis=1)
            if int(n_full_ok.sum()) * per_leaf + (per_leaf - 1) < n:
                continue
            ports_per_l2 = np.bincount(chosen_ports % l2_per_pod, minlength=l2_per_pod)
            l2_used = ports_per_l2 > 0
            max_ports_per_l2 = int(ports_per_l2.max())
            max_full_per_pod = min(leaves_per_pod, l2_up_ports // max_ports_per_l2 if max_ports_per_l2 else leaves_per_pod)
            # The most full leaves a pod can give: eligible leaves, and free L2 up ports
            # (full_per_pod full leaves need full_per_pod * ports_per_l2[x] ports at L2 switch x).
            full_per_pod_max = np.minimum(n_full_ok, (l2_free_ports[:, l2_used] // ports_per_l2[l2_used]).min(axis=1))
            if int(full_per_pod_max.sum()) * per_leaf + (per_leaf - 1) < n:
                continue
            # full_per_pod values (descending) with enough pods for n // (full_per_pod * per_leaf)
            # full pods; one full pod without a remainder is a single pod (tried before).
            full_choices = np.arange(max_full_per_pod, 0, -1)
            pods_needed = n // (full_choices * per_leaf)
            enough = (full_per_pod_max[None, :] >= full_choices[:, None]).sum(axis=1) >= pods_needed
            keep = enough & (pods_needed >= 1) & ~((pods_needed == 1) & (n % (full_choices * per_leaf) == 0))
            for full_per_pod in full_choices[keep].tolist():
                n_full_pods, nodes_left = divmod(n, full_per_pod * per_leaf)
                pods_with_room = full_per_pod_max >= full_per_pod
                l2_need = full_per_pod * ports_per_l2
                l2_port_free_count = l2_port_free[pods_with_room].sum(axis=0)  # (l2_per_pod, l2_up_ports)
                port_rank = np.empty_like(l2_port_free_count)
                np.put_along_axis(port_rank, np.argsort(-l2_port_free_count, axis=1, kind="stable"),
                                  np.arange(l2_up_ports)[None, :].repeat(l2_per_pod, 0), axis=1)
                sigma = port_rank < l2_need[:, None]
                full_pod_ok = pods_with_room & (l2_port_free | ~sigma[None, :, :]).all(axis=(1, 2))
                if int(full_pod_ok.sum()) < n_full_pods:
                    continue
                candidates = np.flatnonzero(full_pod_ok)
                full_pods = candidates[np.lexsort((candidates, pod_free[candidates]))][:n_full_pods]
                remainder = None
                if nodes_left:
                    remainder = self._remainder_pod(nodes_left, per_leaf, full_pods, free, leaf_free, full_ok,
                                                    leaf_port_free, port_mask, ports_per_l2, l2_port_free, sigma,
                                                    pod_free)
                    if remainder is None:
                        continue
                return self._build_pods(per_leaf, full_per_pod, chosen_ports, full_pods, full_ok, sigma, ports_per_l2,
                                        free, leaf_free, remainder)
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

