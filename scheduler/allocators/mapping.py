"""Rank mapping, the scheduler's fourth hook: which of a job's nodes runs each MPI rank.

``map_ranks(nodes, n_ranks, method=...)`` returns ``mapping`` with ``mapping[r]`` the node
of rank ``r``. ``ranks_per_node`` (default: ``ceil(n_ranks / len(nodes))``) caps the ranks
on one node.

``block``
    Ranks fill the nodes in order: ranks ``0..c-1`` on the first node, and so on.
``roundrobin``
    Rank ``r`` on node ``r mod len(nodes)`` (cyclic).
``topology``
    For Cartesian applications (``grid``, the process grid, row-major rank order as in
    ``MPI_Cart_create``): when the job holds whole routers forming a box of a torus whose
    extents match the process grid up to a permutation of dimensions and per-router
    blocks, each rank goes to the router at its block's coordinates, so grid neighbours are
    at most one hop apart (exact embedding). Otherwise ranks are ordered along a Hilbert
    curve over the process grid and nodes along a Hilbert curve over their torus
    coordinates (node id order -- switch order -- on fat-trees and dragonflies), and
    consecutive chunks of ranks go to consecutive nodes: compact groups of neighbouring
    ranks share a node and neighbouring groups sit on nearby nodes. Without ``grid`` the
    ranks fill the locality-ordered nodes in order.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import UserError
from .orderings import hilbert_index

__all__ = ["JOB_MAPPINGS", "RANK_MAPPINGS", "job_rank_nodes", "rank_node_indices", "map_ranks", "cartesian_neighbors"]


def _nodes(nodes: Any) -> np.ndarray:
    a = np.asarray(nodes, dtype=np.int64).reshape(-1)
    if len(a) == 0:
        raise UserError("rank mapping needs at least one node")
    if len(np.unique(a)) != len(a):
        raise UserError("rank mapping: the job's nodes must be distinct")
    return a


def _grid(grid: Any, n_ranks: int) -> tuple[int, ...]:
    try:
        g = tuple(int(x) for x in grid)
    except (TypeError, ValueError):
        raise UserError(f"rank mapping: grid must be a sequence of positive integers, got {grid!r}") from None
    if not g or any(x < 1 for x in g) or math.prod(g) != n_ranks:
        raise UserError(f"rank mapping: grid {g} must hold exactly the {n_ranks} ranks (its product)")
    return g


def _block(nodes: np.ndarray, n_ranks: int, rpn: int, **_: Any) -> np.ndarray:
    return nodes[np.arange(n_ranks) // rpn]


def _roundrobin(nodes: np.ndarray, n_ranks: int, rpn: int, **_: Any) -> np.ndarray:
    return nodes[np.arange(n_ranks) % len(nodes)]


def _locality_key(coords: np.ndarray, extents: Sequence[int]) -> np.ndarray:
    """A Hilbert curve key of grid points (row-major when the index would need > 62 bits)."""
    bits = max(1, int(math.ceil(math.log2(max(max(extents), 2)))))
    if bits * coords.shape[1] <= 62:
        return hilbert_index(coords, bits)
    key = np.zeros(len(coords), dtype=np.int64)
    for d, k in enumerate(extents):
        key = key * int(k) + coords[:, d]
    return key


def _node_locality_order(nodes: np.ndarray, topology: Any) -> np.ndarray:
    if getattr(topology, "name", None) != "torus":
        return np.sort(nodes)
    key = _locality_key(topology.coords_of_node(nodes), topology.dims)
    return nodes[np.lexsort((nodes, key))]  # a router's nodes share a key: kept together, in id order


def _box(nodes: np.ndarray, topology: Any) -> tuple[np.ndarray, tuple[int, ...]] | None:
    """(start coordinates, extents) when ``nodes`` are all nodes of a box of routers."""
    c = topology.nodes_per_router
    routers = np.unique(nodes // c)
    if len(routers) * c != len(nodes):
        return None
    coords = topology.coords_of_router(routers)
    start, ext = [], []
    for d, k in enumerate(topology.dims):
        u = np.unique(coords[:, d])
        present = np.zeros(k, dtype=bool)
        present[u] = True
        if len(u) == k:
            s = 0
        else:
            firsts = [int(v) for v in u if not present[(v - 1) % k]]
            if len(firsts) != 1:
                return None
            s = firsts[0]
        start.append(s)
        ext.append(len(u))
    if math.prod(ext) != len(routers):
        return None
    return np.array(start), tuple(ext)


def _exact_embedding(nodes: np.ndarray, n_ranks: int, rpn: int, topology: Any, grid: tuple[int, ...]) -> np.ndarray | None:
    if getattr(topology, "name", None) != "torus" or len(grid) != topology.n_dims:
        return None
    box = _box(nodes, topology)
    if box is None:
        return None
    start, ext = box
    c = topology.nodes_per_router
    per_router = c * rpn
    if n_ranks != len(nodes) * rpn:
        return None
    D = len(grid)
    for perm in itertools.permutations(range(D)):
        # app dimension a goes to torus dimension perm[a]
        if any(grid[a] % ext[perm[a]] for a in range(D)):
            continue
        f = [grid[a] // ext[perm[a]] for a in range(D)]
        if math.prod(f) != per_router:
            continue
        ranks = np.arange(n_ranks)
        x = np.array(np.unravel_index(ranks, grid)).T  # row-major rank order
        rc = np.zeros((n_ranks, D), dtype=np.int64)
        for a in range(D):
            t = perm[a]
            rc[:, t] = (start[t] + x[:, a] // f[a]) % topology.dims[t]
        router = np.zeros(n_ranks, dtype=np.int64)
        for t in reversed(range(D)):
            router = router * topology.dims[t] + rc[:, t]
        sub = np.ravel_multi_index(tuple((x % np.array(f)).T), f)  # rank within its router's block
        return router * c + sub // rpn
    return None


def _topology(nodes: np.ndarray, n_ranks: int, rpn: int, *, topology: Any = None, grid: Any = None, **_: Any) -> np.ndarray:
    ordered = _node_locality_order(nodes, topology) if topology is not None else np.sort(nodes)
    if grid is None:
        return ordered[np.arange(n_ranks) // rpn]
    g = _grid(grid, n_ranks)
    exact = _exact_embedding(nodes, n_ranks, rpn, topology, g) if topology is not None else None
    if exact is not None:
        return exact
    coords = np.array(np.unravel_index(np.arange(n_ranks), g)).T
    rank_order = np.argsort(_locality_key(coords, g), kind="stable")
    out = np.empty(n_ranks, dtype=np.int64)
    out[rank_order] = ordered[np.arange(n_ranks) // rpn]
    return out


RANK_MAPPINGS: dict[str, Callable[..., np.ndarray]] = {
    "block": _block,
    "roundrobin": _roundrobin,
    "topology": _topology,
}


def map_ranks(nodes: Any, n_ranks: int, *, method: str = "block", ranks_per_node: int | None = None,
              topology: Any = None, grid: Any = None) -> np.ndarray:
    """The node of each of ``n_ranks`` ranks on the job's ``nodes`` (see the module docstring)."""
    fn = RANK_MAPPINGS.get(method) if isinstance(method, str) else None
    if fn is None:
        raise UserError(f"unknown rank mapping {method!r}; valid: {', '.join(RANK_MAPPINGS)}")
    a = _nodes(nodes)
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, (int, np.integer)) or n_ranks < 1:
        raise UserError(f"rank mapping: n_ranks must be an int >= 1, got {n_ranks!r}")
    n_ranks = int(n_ranks)
    rpn = -(-n_ranks // len(a)) if ranks_per_node is None else ranks_per_node
    if isinstance(rpn, bool) or not isinstance(rpn, (int, np.integer)) or rpn < 1:
        raise UserError(f"rank mapping: ranks_per_node must be an int >= 1, got {ranks_per_node!r}")
    if int(rpn) * len(a) < n_ranks:
        raise UserError(f"rank mapping: {n_ranks} ranks do not fit {len(a)} nodes at {rpn} ranks per node")
    return fn(a, n_ranks, int(rpn), topology=topology, grid=grid).astype(np.int64)


#: The mappings a job of an experiment or a study can name (``scheduler.mapping``).
JOB_MAPPINGS = ("block", "round_robin", "topology")


def job_rank_nodes(app: str, args: Any, size: int, nodes: Sequence[int], ranks_per_node: int, mapping: str,
                   topology: Any) -> tuple[int, ...]:
    """The node of every rank of a job running ``app`` with ``args`` on ``nodes``.

    ``block`` and ``round_robin`` are the MPI launcher's mappings (:func:`apps.mapping.map_ranks`);
    ``topology`` is :func:`map_ranks` with ``method="topology"``, the process grid taken from
    the app when it is Cartesian (``@app(..., grid=...)``: the stencils, sub-a2a), so grid
    neighbours land on nearby nodes. Errors are :class:`apps.errors.AppConfigError` (the
    job cannot run as configured).
    """
    from apps.errors import AppConfigError
    from apps.mapping import map_ranks as launcher_map
    from apps.registry import get_app

    if mapping != "topology":
        return launcher_map(size, [int(n) for n in nodes], ranks_per_node, mapping)
    try:
        grid = get_app(app).process_grid(size, args)
    except (ValueError, TypeError) as exc:
        raise AppConfigError(f"app {app!r} with {size} ranks: {exc}") from None
    try:
        out = map_ranks(nodes, size, method="topology", ranks_per_node=ranks_per_node, topology=topology, grid=grid)
    except UserError as exc:
        raise AppConfigError(str(exc)) from None
    return tuple(int(x) for x in out)


def rank_node_indices(nodes: Sequence[int], rank_nodes: Sequence[int]) -> list[int]:
    """Each rank's node as an index into ``nodes``: a mapping that ``apps.run.run_app`` (with
    ``placement=nodes``) takes to repeat a job's rank placement."""
    pos = {int(n): i for i, n in enumerate(nodes)}
    return [pos[int(n)] for n in rank_nodes]


def cartesian_neighbors(grid: Sequence[int], periods: bool | Sequence[bool] = True) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) rank pairs of the + neighbour in every dimension of a row-major Cartesian
    grid (both directions of a halo exchange are these pairs and their reverses)."""
    g = tuple(int(x) for x in grid)
    per = (bool(periods),) * len(g) if isinstance(periods, (bool, np.bool_)) else tuple(bool(p) for p in periods)
    n = math.prod(g)
    x = np.array(np.unravel_index(np.arange(n), g))
    src, dst = [], []
    for d, k in enumerate(g):
        if k == 1:
            continue
        y = x.copy()
        y[d] = x[d] + 1
        ok = y[d] < k if not per[d] else np.ones(n, dtype=bool)
        y[d] %= k
        src.append(np.arange(n)[ok])
        dst.append(np.ravel_multi_index(tuple(y[:, ok]), g))
    if not src:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(src), np.concatenate(dst)
