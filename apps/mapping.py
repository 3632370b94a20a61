"""Rank-to-node mapping, the scheduler's fourth hook: which of a job's nodes hosts each rank.

``map_ranks(ranks, nodes, ranks_per_node, mapping)`` gives the node id of every rank
``0..ranks-1`` of a job holding ``nodes`` (in allocation order). ``ranks_per_node`` caps the
ranks on one node (default: ``ceil(ranks / len(nodes))``). ``mapping`` is one of:

a registered name (:data:`RANK_MAPPINGS`; :func:`register_mapping` adds one)
    ``block``
        Fill a node with ``ranks_per_node`` ranks, then the next (ranks ``0..k-1`` on the
        first node): MPICH's and Slurm's default.
    ``round_robin`` (aliases ``roundrobin``, ``cyclic``)
        Rank ``r`` on node ``r mod len(nodes)``.
    ``topology``
        For Cartesian applications (``grid``, the process grid, row-major rank order as in
        ``MPI_Cart_create``): when the job holds whole routers forming a box of a torus
        whose extents match the process grid up to a permutation of dimensions and
        per-router blocks, each rank goes to the router at its block's coordinates, so grid
        neighbours are at most one hop apart (exact embedding). Otherwise ranks are ordered
        along a Hilbert curve over the process grid and nodes along a Hilbert curve over
        their torus coordinates (node id order -- switch order -- on fat-trees and
        dragonflies), and consecutive chunks of ranks go to consecutive nodes. Without
        ``grid`` the ranks fill the locality-ordered nodes in order.
a callable ``f(rank, n_nodes, ranks_per_node) -> node index`` (``0..n_nodes-1``)
a sequence of node indices, one per rank.

A registered method is a function ``method(ranks, nodes, ranks_per_node, *, topology, grid)``
of the checked arguments (``nodes`` an int64 array) returning the node *index* of every rank.
Whatever the mapping, no node may get more than ``ranks_per_node`` ranks.

Experiments and studies name a mapping with ``scheduler.mapping`` / ``study.mapping``
(:data:`JOB_MAPPINGS`, the registered names); :func:`job_rank_nodes` applies one to a job,
taking the process grid from the app when it is Cartesian.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Sequence, TypeVar, Union

import numpy as np

from models.topology.curves import hilbert_index
from pdes.validate import check_int

from .errors import AppConfigError

__all__ = [
    "oversubscription",
    "RANK_MAPPINGS",
    "MAPPING_ALIASES",
    "JOB_MAPPINGS",
    "MappingSpec",
    "RankMapping",
    "register_mapping",
    "mapping_names",
    "map_ranks",
    "job_rank_nodes",
    "rank_node_indices",
    "cartesian_neighbors",
]

#: A registered mapping: ``(ranks, nodes, ranks_per_node, *, topology, grid) -> node index per rank``.
RankMapping = Callable[..., Any]

MappingSpec = Union[str, Callable[[int, int, int], int], Sequence[int], np.ndarray]

#: The registered mappings by name (:func:`register_mapping` adds one).
RANK_MAPPINGS: dict[str, RankMapping] = {}

#: Other spellings accepted by :func:`map_ranks` for a registered name.
MAPPING_ALIASES: dict[str, str] = {"roundrobin": "round_robin", "cyclic": "round_robin"}

#: The names an experiment or a study may give (``scheduler.mapping``): the registry itself,
#: so a mapping registered before the file is read is accepted there too.
JOB_MAPPINGS = RANK_MAPPINGS

# Registered mappings that take the app's process grid (job_rank_nodes asks the app for it).
_GRID_MAPPINGS: set[str] = set()

MappingT = TypeVar("MappingT", bound=RankMapping)


def register_mapping(name: str, *, uses_grid: bool = False) -> Callable[[MappingT], MappingT]:
    """Decorator: add ``method`` to :data:`RANK_MAPPINGS` as ``name``.

    ``uses_grid``: the method reads the process grid of Cartesian apps, which
    :func:`job_rank_nodes` then passes it.
    """
    if not isinstance(name, str) or not name:
        raise AppConfigError(f"a rank mapping needs a non-empty name, got {name!r}")
    if name in MAPPING_ALIASES:
        raise AppConfigError(f"rank mapping name {name!r} is an alias of {MAPPING_ALIASES[name]!r}")

    def add(method: MappingT) -> MappingT:
        RANK_MAPPINGS[name] = method
        if uses_grid:
            _GRID_MAPPINGS.add(name)
        else:
            _GRID_MAPPINGS.discard(name)
        return method

    return add


def mapping_names() -> str:
    """The accepted mapping names, as an error message lists them."""
    aliases = ", ".join(f"{a} = {n}" for a, n in MAPPING_ALIASES.items())
    return f"{', '.join(RANK_MAPPINGS)} (aliases: {aliases}), a callable or a sequence of node indices"


# ---------------------------------------------------------------------------- the API
def map_ranks(ranks: int, nodes: Sequence[int], ranks_per_node: int | None = None, mapping: MappingSpec = "block",
              *, topology: Any = None, grid: Sequence[int] | None = None) -> tuple[int, ...]:
    """The node id of every rank ``0..ranks-1`` (see the module docstring).

    ``topology`` and ``grid`` are read by mappings that use them (``topology``). Raises
    :class:`~apps.errors.AppConfigError` for an unknown mapping, ranks that do not fit, or a
    mapping that overloads a node.
    """
    ranks = check_int("rank mapping: ranks", ranks, lo=1, error=AppConfigError)
    node_ids = np.asarray(nodes, dtype=np.int64).reshape(-1)
    n = len(node_ids)
    if n == 0:
        raise AppConfigError("rank mapping needs at least one node")
    if len(np.unique(node_ids)) != n:
        raise AppConfigError("rank mapping: the job's nodes must be distinct")
    rpn = -(-ranks // n) if ranks_per_node is None else check_int(
        "rank mapping: ranks_per_node", ranks_per_node, lo=1, error=AppConfigError)
    if n * rpn < ranks:
        raise AppConfigError(
            f"{ranks} ranks do not fit on {n} nodes with {rpn} ranks per node "
            f"(at most {n * rpn}); give more nodes or a larger ranks_per_node"
        )
    if isinstance(mapping, str):
        method = RANK_MAPPINGS.get(MAPPING_ALIASES.get(mapping, mapping))
        if method is None:
            raise AppConfigError(f"unknown rank mapping {mapping!r}; valid: {mapping_names()}")
        idx = method(ranks, node_ids, rpn, topology=topology, grid=grid)
    elif callable(mapping):
        idx = [mapping(r, n, rpn) for r in range(ranks)]
    else:
        idx = np.asarray(mapping).reshape(-1)
        if len(idx) != ranks:
            raise AppConfigError(f"mapping: expected one node index per rank ({ranks}), got {len(idx)}")
    return tuple(node_ids[_checked_indices(idx, ranks, n, rpn, node_ids)].tolist())


def _checked_indices(idx: Any, ranks: int, n: int, rpn: int, node_ids: np.ndarray) -> np.ndarray:
    """``idx`` as an int64 array after checking every entry is a node index and no node is
    given more than ``rpn`` ranks."""
    arr = np.asarray(idx)
    ok_type = arr.ndim == 1 and len(arr) == ranks and arr.dtype.kind in "iu"
    if ok_type and not isinstance(idx, np.ndarray):
        ok_type = not any(isinstance(i, bool) for i in idx)
    if not ok_type or (ranks and (arr.min() < 0 or arr.max() >= n)):
        for r, i in enumerate(list(idx)):
            if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or not 0 <= i < n:
                shown = i.item() if isinstance(i, np.generic) else i
                raise AppConfigError(f"mapping put rank {r} on node index {shown!r}; valid: 0..{n - 1}")
        raise AppConfigError(f"mapping: expected one node index per rank ({ranks}), got {len(arr)}")
    arr = arr.astype(np.int64, copy=False)
    counts = np.bincount(arr, minlength=n)
    over = np.flatnonzero(counts > rpn)
    if len(over):
        k = int(over[0])
        raise AppConfigError(f"mapping puts {counts[k]} ranks on node {node_ids[k]}, more than ranks_per_node={rpn}")
    return arr


# ------------------------------------------------------------------------ the methods
@register_mapping("block")
def _block(ranks: int, nodes: np.ndarray, rpn: int, **_: Any) -> np.ndarray:
    return np.arange(ranks) // rpn


@register_mapping("round_robin")
def _round_robin(ranks: int, nodes: np.ndarray, rpn: int, **_: Any) -> np.ndarray:
    return np.arange(ranks) % len(nodes)


@register_mapping("topology", uses_grid=True)
def _topology(ranks: int, nodes: np.ndarray, rpn: int, *, topology: Any = None, grid: Any = None, **_: Any) -> np.ndarray:
    ordered = _node_locality_order(nodes, topology) if topology is not None else np.sort(nodes)
    if grid is None:
        ids = ordered[np.arange(ranks) // rpn]
    else:
        g = _grid(grid, ranks)
        exact = _exact_embedding(nodes, ranks, rpn, topology, g) if topology is not None else None
        if exact is not None:
            ids = exact
        else:
            coords = np.array(np.unravel_index(np.arange(ranks), g)).T
            rank_order = np.argsort(_locality_key(coords, g), kind="stable")
            ids = np.empty(ranks, dtype=np.int64)
            ids[rank_order] = ordered[np.arange(ranks) // rpn]
    by_id = np.argsort(nodes)
    return by_id[np.searchsorted(nodes[by_id], ids)]


def _grid(grid: Any, ranks: int) -> tuple[int, ...]:
    try:
        g = tuple(int(x) for x in grid)
    except (TypeError, ValueError):
        raise AppConfigError(f"rank mapping: grid must be a sequence of positive integers, got {grid!r}") from None
    if not g or any(x < 1 for x in g) or math.prod(g) != ranks:
        raise AppConfigError(f"rank mapping: grid {g} must hold exactly the {ranks} ranks (its product)")
    return g


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
    per_router = topology.nodes_per_router
    routers = np.unique(nodes // per_router)
    if len(routers) * per_router != len(nodes):
        return None
    coords = topology.coords_of_router(routers)
    start, extents = [], []
    for d, k in enumerate(topology.dims):
        used = np.unique(coords[:, d])
        present = np.zeros(k, dtype=bool)
        present[used] = True
        if len(used) == k:
            first = 0
        else:
            firsts = [int(v) for v in used if not present[(v - 1) % k]]
            if len(firsts) != 1:
                return None
            first = firsts[0]
        start.append(first)
        extents.append(len(used))
    if math.prod(extents) != len(routers):
        return None
    return np.array(start), tuple(extents)


def _exact_embedding(nodes: np.ndarray, ranks: int, rpn: int, topology: Any, grid: tuple[int, ...]) -> np.ndarray | None:
    """Node id of every rank when the grid embeds exactly in the job's box of routers, else None."""
    if getattr(topology, "name", None) != "torus" or len(grid) != topology.n_dims:
        return None
    box = _box(nodes, topology)
    if box is None:
        return None
    start, extents = box
    nodes_per_router = topology.nodes_per_router
    ranks_per_router = nodes_per_router * rpn
    if ranks != len(nodes) * rpn:
        return None
    n_dims = len(grid)
    for perm in itertools.permutations(range(n_dims)):
        # app dimension a goes to torus dimension perm[a]
        if any(grid[a] % extents[perm[a]] for a in range(n_dims)):
            continue
        block = [grid[a] // extents[perm[a]] for a in range(n_dims)]  # ranks per router along each app dimension
        if math.prod(block) != ranks_per_router:
            continue
        x = np.array(np.unravel_index(np.arange(ranks), grid)).T  # row-major rank order
        router_coords = np.zeros((ranks, n_dims), dtype=np.int64)
        for a in range(n_dims):
            t = perm[a]
            router_coords[:, t] = (start[t] + x[:, a] // block[a]) % topology.dims[t]
        router = np.zeros(ranks, dtype=np.int64)
        for t in reversed(range(n_dims)):
            router = router * topology.dims[t] + router_coords[:, t]
        within = np.ravel_multi_index(tuple((x % np.array(block)).T), block)  # rank within its router's block
        return router * nodes_per_router + within // rpn
    return None


# --------------------------------------------------------------------- jobs and grids
def job_rank_nodes(app: str, args: Any, size: int, nodes: Sequence[int], ranks_per_node: int, mapping: str,
                   topology: Any) -> tuple[int, ...]:
    """The node of every rank of a job running ``app`` with ``args`` on ``nodes``.

    Mappings registered with ``uses_grid`` (``topology``) get the process grid of the app
    when it is Cartesian (``@app(..., grid=...)``: the stencils, sub-a2a), so grid
    neighbours land on nearby nodes. Errors are :class:`~apps.errors.AppConfigError` (the
    job cannot run as configured).
    """
    from .registry import get_app

    grid = None
    if MAPPING_ALIASES.get(mapping, mapping) in _GRID_MAPPINGS:
        try:
            grid = get_app(app).process_grid(size, args)
        except (ValueError, TypeError) as exc:
            raise AppConfigError(f"app {app!r} with {size} ranks: {exc}") from None
    return map_ranks(size, [int(n) for n in nodes], ranks_per_node, mapping, topology=topology, grid=grid)


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


def oversubscription(ranks_per_node: int, cores_per_node: int, *, what: str = "ranks_per_node",
                     warn: bool = True) -> str | None:
    """The warning for more ranks per node than cores (None when they fit), issued as an
    :class:`~apps.errors.OversubscriptionWarning` when ``warn``.

    Such a run is valid: the ranks of a node share its cores, which the node model applies to
    compute given in flops (:meth:`models.node_model.NodeModel.rank_flops`); compute given in
    seconds, and timekeeper jobs, take the time they are given.
    """
    if ranks_per_node <= cores_per_node:
        return None
    msg = (f"{what}={ranks_per_node} exceeds the machine's {cores_per_node} cores per node: ranks share the "
           f"cores, so compute given in flops takes up to {ranks_per_node / cores_per_node:.3g}x as long; "
           f"compute given in seconds is not slowed")
    if warn:
        import warnings

        from .errors import OversubscriptionWarning

        warnings.warn(msg, OversubscriptionWarning, stacklevel=3)
    return msg
