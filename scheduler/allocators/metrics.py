"""Placement metrics of allocations: APH, MIND, diameter and span, per job and by job size.

For a job's node set on a topology:

* **APH** and **MIND** -- mean inter-router hops over the distinct pairs of nodes
  (:mod:`models.topology.metrics`; on simhpc's topologies both are the same minimal hop
  count, reported under both names as the fat-tree and torus literatures do);
* **diameter** -- the largest hop count between two of its nodes. Closed form on fat-trees;
  elsewhere exact over the distinct routers when there are at most ``exact_limit`` of them
  (O(routers^2)), else an upper bound (the sum over dimensions of the largest coordinate
  distance on a torus, the machine's diameter otherwise), flagged by ``diameter_exact``;
* **span** -- positions covered in a node ordering, ``max(pos) - min(pos) + 1`` (equal to the
  job size for a contiguous allocation; node id order by default).

An allocation never changes while a job runs, so the metrics are computed from each job's
``assigned_nodes`` after (or during) a run: :func:`allocation_metrics` gives per-job
columns and :func:`allocation_metrics_by_size` the means by job-size bin that ``simhpc
replay --json`` reports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import UserError
from ..job import Job

__all__ = [
    "PlacementMetrics",
    "placement_metrics",
    "allocation_metrics",
    "allocation_metrics_by_size",
    "size_bins",
]

_PAIR_CHUNK = 1 << 20


@dataclass(frozen=True)
class PlacementMetrics:
    """Metrics of one node set (see the module docstring)."""

    nodes: int
    aph: float
    mind: float
    diameter: int
    span: int
    diameter_exact: bool = True


def placement_metrics(topology: Any, nodes: Any, *, positions: np.ndarray | None = None,
                      exact_limit: int = 2048) -> PlacementMetrics:
    """APH, MIND, diameter and span of ``nodes`` on ``topology``.

    ``positions[node]`` gives each node's place in the ordering the span is measured in
    (default: node ids).
    """
    if topology is None:
        raise UserError("placement metrics need the machine's topology (give a machine preset, --machine)")
    a = np.asarray(nodes, dtype=np.int64).reshape(-1)
    n = len(a)
    if n == 0:
        raise UserError("placement metrics need at least one node")
    pos = a if positions is None else np.asarray(positions)[a]
    span = int(pos.max() - pos.min() + 1)
    if n < 2:
        return PlacementMetrics(nodes=n, aph=0.0, mind=0.0, diameter=0, span=span)
    mean = topology.pair_hop_sum(a) / (n * (n - 1) // 2)
    diam, exact = _diameter(topology, a, exact_limit)
    return PlacementMetrics(nodes=n, aph=float(mean), mind=float(mean), diameter=diam, span=span, diameter_exact=exact)


def _diameter(topo: Any, a: np.ndarray, exact_limit: int) -> tuple[int, bool]:
    fam = getattr(topo, "name", "")
    if fam == "fattree":
        M = 1
        for lv in range(1, topo.levels + 1):
            M *= topo.down[lv - 1]
            if (a // M == a[0] // M).all():
                return 2 * (lv - 1), True
        return topo.diameter, True  # pragma: no cover - the top level holds every node
    routers, first = np.unique(topo.node_router[a], return_index=True)
    if len(routers) == 1:
        return 0, True
    if len(routers) <= exact_limit:
        rep = a[first]  # one node per router: hops depend on routers only
        R = len(rep)
        best = 0
        rows = max(1, _PAIR_CHUNK // R)
        for i in range(0, R, rows):
            blk = rep[i:i + rows]
            h = topo.hops_many(np.repeat(blk, R), np.tile(rep, len(blk)))
            best = max(best, int(h.max()))
        return best, True
    if fam == "torus":
        coords = topo.coords_of_router(routers)
        total = 0
        for d, (k, wr) in enumerate(zip(topo.dims, topo.wrap)):
            u = np.unique(coords[:, d])
            delta = np.abs(u[:, None] - u[None, :])
            dist = np.minimum(delta, k - delta) if wr else delta
            total += int(dist.max())
        return total, False
    return int(topo.diameter), False


def allocation_metrics(jobs: Sequence[Job], topology: Any, *, positions: np.ndarray | None = None,
                       exact_limit: int = 2048) -> dict[str, np.ndarray]:
    """Per-job columns ``job_id``, ``nodes``, ``aph``, ``mind``, ``diameter``, ``span``,
    ``diameter_exact`` for the jobs that were allocated nodes (``assigned_nodes`` set)."""
    rows = [(j.job_id, placement_metrics(topology, j.assigned_nodes, positions=positions, exact_limit=exact_limit))
            for j in jobs if j.assigned_nodes is not None]
    return {
        "job_id": np.array([r[0] for r in rows], dtype=np.int64),
        "nodes": np.array([r[1].nodes for r in rows], dtype=np.int64),
        "aph": np.array([r[1].aph for r in rows], dtype=np.float64),
        "mind": np.array([r[1].mind for r in rows], dtype=np.float64),
        "diameter": np.array([r[1].diameter for r in rows], dtype=np.int64),
        "span": np.array([r[1].span for r in rows], dtype=np.int64),
        "diameter_exact": np.array([r[1].diameter_exact for r in rows], dtype=bool),
    }


def size_bins(max_nodes: int) -> list[tuple[int, int, str]]:
    """Power-of-two job-size bins ``(low, high, label)`` up to ``max_nodes``: 1, 2, 3-4, 5-8, ..."""
    bins = [(1, 1, "1")]
    hi = 1
    while hi < max_nodes:
        lo, hi = hi + 1, hi * 2
        bins.append((lo, hi, str(lo) if lo == hi else f"{lo}-{hi}"))
    return bins


def _mean(x: np.ndarray) -> float | None:
    if len(x) == 0:
        return None
    m = float(x.mean())
    return m if math.isfinite(m) else None


def allocation_metrics_by_size(jobs: Sequence[Job], topology: Any, *, positions: np.ndarray | None = None,
                               bins: Sequence[tuple[int, int, str]] | None = None,
                               exact_limit: int = 2048) -> dict[str, Any]:
    """Mean APH, MIND, diameter and span by job-size bin (JSON-ready).

    Returns ``{"bins": [{"nodes": label, "low", "high", "jobs", "mean_aph", "mean_mind",
    "mean_diameter", "mean_span"}, ...], "all": {...}}`` over the allocated jobs; only
    non-empty bins are listed (power-of-two bins by default, see :func:`size_bins`).
    """
    cols = allocation_metrics(jobs, topology, positions=positions, exact_limit=exact_limit)
    n = cols["nodes"]
    if bins is None:
        bins = size_bins(int(n.max()) if len(n) else 1)

    def summary(mask: np.ndarray) -> dict[str, Any]:
        return {
            "jobs": int(mask.sum()),
            "mean_aph": _mean(cols["aph"][mask]),
            "mean_mind": _mean(cols["mind"][mask]),
            "mean_diameter": _mean(cols["diameter"][mask].astype(np.float64)),
            "mean_span": _mean(cols["span"][mask].astype(np.float64)),
        }

    out_bins = []
    for lo, hi, label in bins:
        m = (n >= lo) & (n <= hi)
        if m.any():
            out_bins.append({"nodes": label, "low": int(lo), "high": int(hi), **summary(m)})
    return {"bins": out_bins, "all": summary(np.ones(len(n), dtype=bool))}
