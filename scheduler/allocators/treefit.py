"""Slurm-like tree best fit (``topology/tree`` with ``select/cons_tres``).

The machine is a hierarchy of switches whose subtrees hold consecutive node ids: on a
fat-tree the subtrees of every level (leaves, then L2 switches' pods, ...), on a dragonfly
routers then groups. For an ``n``-node job:

1. the lowest level at which some switch's subtree has ``n`` free nodes; at that level the
   subtree with the fewest free nodes that still fits (best fit; ties: lowest index);
2. inside it, leaves (routers) best fit: while nodes remain to place, the leaf with the
   fewest free nodes that holds the rest if there is one (it finishes the job), else the
   leaf with the most free nodes, taken whole; in each leaf its lowest free nodes.

The whole machine is the top subtree, so any ``n <= n_free`` nodes fit (``count_only``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..job import Job
from .base import OptionsAllocator
from .interface import AllocState
from .registry import register_allocator

__all__ = ["TreeFitAllocator", "subtree_sizes"]


def subtree_sizes(topology: Any) -> list[int]:
    """Nodes under one switch of each level, lowest level (leaf / router) first."""
    if topology.name == "fattree":
        down = topology.down
        return [int(np.prod(down[:lv])) for lv in range(1, topology.levels)] if topology.levels > 1 else [topology.n_nodes]
    # dragonfly: routers, then groups
    return [topology.p, topology.a * topology.p]


@register_allocator
class TreeFitAllocator(OptionsAllocator):
    """Slurm-like tree best fit (see the module docstring)."""

    name = "treefit"
    count_only = True
    FAMILIES = ("fattree", "dragonfly")

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        sizes = subtree_sizes(self.topology)
        if sizes[-1] != self.n_nodes:
            sizes.append(self.n_nodes)
        self.sizes = sizes
        self.leaf_size = sizes[0]

    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        n = job.nodes
        if n > state.n_free:
            return None
        free = state.free
        free_per_leaf = free.reshape(-1, self.leaf_size).sum(axis=1)
        for size in self.sizes:
            free_per_subtree = free_per_leaf.reshape(-1, size // self.leaf_size).sum(axis=1)
            fits = np.flatnonzero(free_per_subtree >= n)
            if len(fits):
                subtree = int(fits[np.argmin(free_per_subtree[fits])])
                break
        else:  # pragma: no cover - the top level always fits n <= n_free
            return None
        leaves_per_subtree = size // self.leaf_size
        first_leaf = subtree * leaves_per_subtree
        leaf_free = free_per_leaf[first_leaf:first_leaf + leaves_per_subtree].copy()
        take = np.zeros(leaves_per_subtree, dtype=np.int64)
        nodes_left = n
        while nodes_left:
            holds_rest = np.flatnonzero(leaf_free >= nodes_left)
            if len(holds_rest):
                j = int(holds_rest[np.argmin(leaf_free[holds_rest])])
                take[j] = nodes_left
                break
            j = int(np.argmax(leaf_free))
            take[j] = leaf_free[j]
            nodes_left -= int(leaf_free[j])
            leaf_free[j] = 0
        out = []
        for j in np.flatnonzero(take).tolist():
            base = (first_leaf + j) * self.leaf_size
            out.append(base + np.flatnonzero(free[base:base + self.leaf_size])[: take[j]])
        return np.sort(np.concatenate(out))
