"""Partitioning of routers over PDES ranks, keeping locality units whole where possible."""

from __future__ import annotations

import numpy as np

from pdes.validate import check_int

from ..errors import TopologyError

#: How far the busiest rank may exceed the mean node count per rank before whole locality
#: units give way to balance: a rank with 2 slabs where the others have 1 runs twice their
#: events while they wait at every window, which costs far more than the remote events of
#: one more cut.
SPLIT_TOLERANCE = 0.05


def _midpoint_blocks(weights: np.ndarray, nblocks: int) -> np.ndarray:
    """Contiguous blocks 0..nblocks-1 over items in order, balanced by weight.

    Item i goes to block floor((prefix before i + w_i / 2) * nblocks / total): a monotone
    assignment whose block loads differ by at most one item's weight.
    """
    w = weights.astype(np.float64)
    total = w.sum()
    if total <= 0:
        n = len(w)
        return ((np.arange(n) * 2 + 1) * nblocks // max(2 * n, 1)).astype(np.int64)
    mid = np.cumsum(w) - w / 2.0
    return np.minimum((mid * nblocks / total).astype(np.int64), nblocks - 1)


def _spread(n: int, nranks: int) -> np.ndarray:
    """n items spread evenly over nranks (item j on rank floor((j + 1/2) * nranks / n))."""
    return ((2 * np.arange(n, dtype=np.int64) + 1) * nranks // max(2 * n, 1)).astype(np.int64)


def partition_routers(units: np.ndarray, router_nodes: np.ndarray, nranks: int) -> np.ndarray:
    """Rank of each router: locality units whole where possible, balanced by node count.

    ``units`` gives a locality unit per router, ``router_nodes`` the number of compute nodes
    attached to each router (a router's nodes live on its rank). Units that hold nodes are
    placed in contiguous blocks of unit ids, balanced by node count; when there are fewer such
    units than ranks, each unit gets a share of the ranks proportional to its nodes and is
    split into contiguous pieces. Whenever that leaves the busiest rank more than
    :data:`SPLIT_TOLERANCE` above the mean node count (24 torus slabs over 16 or 32 ranks),
    the routers of the units with nodes are cut instead, in unit order and router order
    within a unit, into contiguous blocks balanced by node count. Units without nodes
    (fat-tree spines) are spread evenly over all ranks. The result depends only on the arguments.
    """
    nranks = check_int("partition: nranks", nranks, lo=1, error=TopologyError)
    units = np.asarray(units, dtype=np.int64)
    weight = np.asarray(router_nodes, dtype=np.int64)
    n = len(units)
    ranks = np.zeros(n, dtype=np.int64)
    if nranks == 1 or n == 0:
        return ranks.astype(np.int32)
    uid, inv = np.unique(units, return_inverse=True)
    uw = np.bincount(inv, weights=weight, minlength=len(uid)).astype(np.int64)
    heavy = np.flatnonzero(uw > 0)
    light = np.flatnonzero(uw == 0)
    unit_rank = np.full(len(uid), -1, dtype=np.int64)
    if len(heavy) >= nranks:
        unit_rank[heavy] = _midpoint_blocks(uw[heavy], nranks)
        ranks = unit_rank[inv]
    elif len(heavy) > 0:
        # Fewer units than ranks: give each unit a rank count proportional to its nodes
        # (largest remainder, at least one each), then split it into contiguous pieces.
        share = uw[heavy] * nranks / uw[heavy].sum()
        k = np.maximum(np.floor(share).astype(np.int64), 1)
        while k.sum() > nranks:
            k[np.argmax(np.where(k > 1, k - share, -np.inf))] -= 1
        rem = share - k
        order = np.argsort(-rem, kind="stable")
        i = 0
        while k.sum() < nranks:
            k[order[i % len(order)]] += 1
            i += 1
        first = np.concatenate([[0], np.cumsum(k)[:-1]])
        for j, u in enumerate(heavy):
            members = np.flatnonzero(inv == u)
            w = weight[members]
            pos = np.empty(len(members), dtype=np.int64)
            hv = w > 0
            pos[hv] = _midpoint_blocks(w[hv], int(k[j]))
            pos[~hv] = _spread(int((~hv).sum()), int(k[j]))
            ranks[members] = first[j] + pos
    if len(heavy):
        idx = np.flatnonzero(uw[inv] > 0)
        load = np.bincount(ranks[idx], weights=weight[idx], minlength=nranks)
        if load.max() > (1.0 + SPLIT_TOLERANCE) * load.mean():
            # Whole units (or whole shares of them) cannot balance: cut the routers of the
            # units with nodes in unit order, router order within a unit, by node count.
            order = idx[np.lexsort((idx, inv[idx]))]
            ranks[order] = _midpoint_blocks(weight[order], nranks)
    if len(light):
        unit_rank[light] = _spread(len(light), nranks)
        lm = np.isin(inv, light)
        ranks[lm] = unit_rank[inv[lm]]
    return ranks.astype(np.int32)
