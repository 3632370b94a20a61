"""Placement metrics over a topology: APH, MIND and hop-bytes.

All three count inter-router hops on minimal routes (:meth:`Topology.hops`): links between
routers only, so two nodes on the same router (leaf, Gemini, Aries) are 0 hops apart.

* APH, average pairwise hops (fat-tree allocation studies, e.g. Pollard et al., SC18): the
  mean of the hops over the distinct unordered pairs of a node set.
* MIND, mean inter-node distance (torus allocation studies): the mean, over the distinct pairs
  of a node set, of the hop distance between their routers (the wrap-aware Manhattan distance
  of their coordinates on a torus). On every simhpc topology that is the same minimal hop count
  APH uses, so the two agree; both names are kept because the two literatures report them.
* hop-bytes: the sum over messages of bytes times hops, the volume a traffic pattern puts on
  router-to-router links.

The sums use the topologies' closed forms (subtree, coordinate or router histograms), so they
stay fast for whole-machine node sets.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import TopologyError
from .base import Topology


def _pairs(n: int) -> int:
    return n * (n - 1) // 2


def aph(topo: Topology, nodes: Any) -> float:
    """Average pairwise inter-switch hops over the distinct pairs of ``nodes`` (0.0 for < 2)."""
    a = np.asarray(nodes).reshape(-1)
    if len(a) < 2:
        return 0.0
    return topo.pair_hop_sum(a) / _pairs(len(a))


def mind(topo: Topology, nodes: Any) -> float:
    """Mean inter-node distance: mean router hop distance over the distinct pairs of ``nodes``."""
    a = np.asarray(nodes).reshape(-1)
    if len(a) < 2:
        return 0.0
    return topo.pair_hop_sum(a) / _pairs(len(a))


def hop_bytes(topo: Topology, src: Any, dst: Any, nbytes: Any) -> float:
    """Sum over messages ``i`` of ``nbytes[i] * hops(src[i], dst[i])``.

    ``src``, ``dst`` and ``nbytes`` broadcast against each other (e.g. one size for all).
    """
    s, d, b = np.broadcast_arrays(np.asarray(src), np.asarray(dst), np.asarray(nbytes, dtype=np.float64))
    if (b < 0).any():
        raise TopologyError("hop_bytes: nbytes must be >= 0")
    h = topo.hops_many(s.reshape(-1), d.reshape(-1))
    return float(np.dot(h.astype(np.float64), b.reshape(-1)))


__all__ = ["aph", "hop_bytes", "mind"]
