"""Rank-to-node mapping: which node of a job hosts each rank.

A mapping takes the job's node list (in allocation order) and the ranks per node and gives
the node of every rank:

* ``"block"``: fill a node with ``ranks_per_node`` ranks, then the next (ranks 0..k-1 on the
  first node): MPICH's and Slurm's default;
* ``"round_robin"`` (alias ``"cyclic"``): rank r on node r mod n_nodes;
* a callable ``f(rank, n_nodes, ranks_per_node) -> node index`` (0..n_nodes-1);
* a sequence of node indices, one per rank.

No node may get more than ``ranks_per_node`` ranks.
"""

from __future__ import annotations

from typing import Callable, Sequence, Union

import numpy as np

from .errors import AppConfigError

__all__ = ["MAPPINGS", "MappingSpec", "map_ranks"]

MAPPINGS = ("block", "round_robin", "cyclic")

MappingSpec = Union[str, Callable[[int, int, int], int], Sequence[int], np.ndarray]


def map_ranks(ranks: int, nodes: Sequence[int], ranks_per_node: int, mapping: MappingSpec = "block") -> tuple[int, ...]:
    """The node id of every rank ``0..ranks-1`` (see the module docstring)."""
    n = len(nodes)
    if not (isinstance(ranks, (int, np.integer)) and ranks >= 1):
        raise AppConfigError(f"ranks must be an integer >= 1, got {ranks!r}")
    if not (isinstance(ranks_per_node, (int, np.integer)) and ranks_per_node >= 1):
        raise AppConfigError(f"ranks_per_node must be an integer >= 1, got {ranks_per_node!r}")
    if n * ranks_per_node < ranks:
        raise AppConfigError(
            f"{ranks} ranks do not fit on {n} nodes with {ranks_per_node} ranks per node "
            f"(at most {n * ranks_per_node}); give more nodes or a larger ranks_per_node"
        )
    if isinstance(mapping, str):
        if mapping == "block":
            idx = [r // ranks_per_node for r in range(ranks)]
        elif mapping in ("round_robin", "cyclic"):
            idx = [r % n for r in range(ranks)]
        else:
            raise AppConfigError(f"unknown mapping {mapping!r}; valid: {', '.join(MAPPINGS)}, a callable or a sequence")
    elif callable(mapping):
        idx = [mapping(r, n, ranks_per_node) for r in range(ranks)]
    else:
        idx = list(np.asarray(mapping).reshape(-1))
        if len(idx) != ranks:
            raise AppConfigError(f"mapping: expected one node index per rank ({ranks}), got {len(idx)}")
    counts = [0] * n
    for r, i in enumerate(idx):
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < n:
            raise AppConfigError(f"mapping put rank {r} on node index {i!r}; valid: 0..{n - 1}")
        counts[i] += 1
    over = [k for k, c in enumerate(counts) if c > ranks_per_node]
    if over:
        raise AppConfigError(
            f"mapping puts {counts[over[0]]} ranks on node {nodes[over[0]]}, more than ranks_per_node={ranks_per_node}"
        )
    return tuple(int(nodes[i]) for i in idx)
