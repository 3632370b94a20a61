"""Node orderings: the one-dimensional lists that list-based allocators run on.

An ordering is a permutation of the node ids, ``order[i]`` being the node at position
``i``; nodes of one router are always consecutive. :func:`node_ordering` builds one by name:

``topological`` (alias ``natural``)
    Node id order. On a fat-tree that is switch order (nodes of a leaf, leaves of a pod,
    pods), on a dragonfly router then group order, on a torus router index order (dimension
    0 fastest). The only ordering for machines without a topology.
axis orders (tori)
    A permutation of the axis letters, ``xyz`` style for up to 3 dimensions or ``abcde``
    style (Blue Gene/Q's A..E) for any number: routers sorted by their coordinates with the
    *first letter most significant* (``xyz``: x varies slowest, z fastest; ``zyx`` is the
    topological order of a 3D torus).
``boxes`` (tori)
    Cartesian-split boxes: the torus cut into boxes of shape ``box`` (default: 2 routers per
    dimension where the extent is above 2); boxes in router index order, routers inside a
    box in router index order. A job taking consecutive positions fills box after box.
``bisect`` (tori)
    Recursive Cartesian bisection: the machine is halved across its longest dimension, each
    half again across its own longest one, down to single routers; the ordering visits the
    halves in turn (a k-d traversal that works for any extents).
``hilbert`` (tori)
    A Hilbert space-filling curve (Skilling's transpose algorithm, any dimension) over the
    router grid embedded in the smallest power-of-two cube; consecutive routers are
    neighbours when the extents are equal powers of two.

An explicit permutation (a sequence of all node ids) is accepted as well.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from models.topology.curves import hilbert_index

from ..errors import UserError

__all__ = ["ORDERING_NAMES", "node_ordering", "hilbert_index", "valid_orderings"]

ORDERING_NAMES = ("topological", "natural", "xyz (any axis permutation)", "boxes", "bisect", "hilbert")
_TORUS_ONLY = ("boxes", "bisect", "hilbert")


def valid_orderings(topology: Any) -> list[str]:
    """Names accepted for ``topology`` (axis orders shown as one entry)."""
    fam = getattr(topology, "name", None)
    if fam == "torus":
        D = topology.n_dims
        letters = "xyz"[:D] if D <= 3 else "abcdefgh"[:D]
        return ["topological", "natural", f"{letters} (or any permutation)", *_TORUS_ONLY]
    return ["topological", "natural"]


def _err(alloc: str, msg: str) -> UserError:
    return UserError(f"allocator {alloc!r}: {msg}" if alloc else msg)


def node_ordering(topology: Any, ordering: Any = "topological", *, n_nodes: int, box: Any = None, alloc: str = "") -> np.ndarray:
    """The ordering named ``ordering`` of the ``n_nodes`` nodes of ``topology`` (int64).

    ``box`` shapes the ``boxes`` ordering and is refused with any other. Raises
    :class:`UserError` naming the valid orderings for the machine.
    """
    if not isinstance(ordering, str):
        try:
            arr = np.asarray(ordering)
        except Exception:  # pragma: no cover - defensive
            arr = None
        if arr is None or arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer) or len(arr) != n_nodes \
                or not np.array_equal(np.sort(arr), np.arange(n_nodes)):
            raise _err(alloc, f"option ordering must be a name ({', '.join(valid_orderings(topology))}) "
                              f"or a permutation of the {n_nodes} node ids; got {ordering!r:.60}")
        if box is not None:
            raise _err(alloc, "option box goes with ordering='boxes' only")
        return arr.astype(np.int64)
    name = ordering.lower()
    fam = getattr(topology, "name", None)
    if box is not None and name != "boxes":
        raise _err(alloc, f"option box goes with ordering='boxes' only (ordering is {ordering!r})")
    if name in ("topological", "natural"):
        return np.arange(n_nodes, dtype=np.int64)
    if fam != "torus":
        where = "a machine without a topology" if topology is None else f"a {fam}"
        raise _err(alloc, f"ordering {ordering!r} needs a torus; on {where} valid orderings are: "
                          f"{', '.join(valid_orderings(topology))}")
    D = topology.n_dims
    coords = topology.coords_of_router(np.arange(topology.n_routers))
    if name == "boxes":
        b = _box_shape(topology, box, alloc)
        key = _router_rank_key(coords // np.array(b), topology.dims, b, coords % np.array(b))
        rorder = np.argsort(key, kind="stable")
    elif name == "bisect":
        rorder = np.argsort(_bisect_key(coords, topology.dims), kind="stable")
    elif name == "hilbert":
        bits = max(1, int(np.ceil(np.log2(max(topology.dims)))))
        if bits * D > 62:
            raise _err(alloc, f"ordering 'hilbert' supports up to 62 index bits; this torus needs {bits * D}")
        rorder = np.argsort(hilbert_index(coords, bits), kind="stable")
    else:
        perm = _axis_perm(name, D)
        if perm is None:
            raise _err(alloc, f"unknown ordering {ordering!r} for a {D}D torus; valid: {', '.join(valid_orderings(topology))}")
        # lexsort: the last key is the primary one; perm[0] is the most significant axis.
        rorder = np.lexsort(tuple(coords[:, d] for d in reversed(perm)))
    c = topology.nodes_per_router
    return (rorder[:, None].astype(np.int64) * c + np.arange(c, dtype=np.int64)[None, :]).reshape(-1)


def _axis_perm(name: str, D: int) -> list[int] | None:
    for letters in ("xyz", "abcdefgh"):
        if D > len(letters):
            continue
        alphabet = letters[:D]
        if len(name) == D and sorted(name) == sorted(alphabet):
            return [alphabet.index(ch) for ch in name]
    return None


def _box_shape(topology: Any, box: Any, alloc: str) -> tuple[int, ...]:
    dims = topology.dims
    if box is None:
        return tuple(2 if k > 2 else k for k in dims)
    if isinstance(box, (str, bytes)):
        vals = None
    else:
        try:
            vals = tuple(box)
        except TypeError:
            vals = None
    if vals is None or len(vals) != len(dims) or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 for v in vals):
        raise _err(alloc, f"option box must be {len(dims)} integers >= 1 (routers per box in each dimension); got {box!r}")
    return tuple(min(int(v), k) for v, k in zip(vals, dims))


def _router_rank_key(major: np.ndarray, dims: Sequence[int], box: Sequence[int], minor: np.ndarray) -> np.ndarray:
    """Key ordering by ``major`` coordinates (dimension 0 fastest) then ``minor`` ones."""
    nb = [-(-k // b) for k, b in zip(dims, box)]
    kmaj = np.zeros(len(major), dtype=np.int64)
    for d in reversed(range(len(dims))):
        kmaj = kmaj * nb[d] + major[:, d]
    kmin = np.zeros(len(minor), dtype=np.int64)
    for d in reversed(range(len(dims))):
        kmin = kmin * box[d] + minor[:, d]
    return kmaj * int(np.prod(box)) + kmin


def _bisect_key(coords: np.ndarray, dims: Sequence[int]) -> np.ndarray:
    n, D = coords.shape
    lo = np.zeros((n, D), dtype=np.int64)
    hi = np.tile(np.array(dims, dtype=np.int64), (n, 1))
    key = np.zeros(n, dtype=np.int64)
    rows = np.arange(n)
    while True:
        ext = hi - lo
        if (ext <= 1).all():
            return key
        # The longest dimension of each router's current box (ties: the lowest dimension).
        d = np.argmax(ext, axis=1)
        e = ext[rows, d]
        mid = lo[rows, d] + e // 2
        upper = (coords[rows, d] >= mid) & (e > 1)
        key = key * 2 + upper
        lo[rows, d] = np.where(upper, mid, lo[rows, d])
        hi[rows, d] = np.where(upper | (e <= 1), hi[rows, d], mid)

