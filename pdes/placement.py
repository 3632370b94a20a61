"""Placement of entities on MPI ranks.

A placement maps each index of an entity type to a rank. It is evaluated once, when the
type is added, into a numpy array; results never depend on it (only speed does). Placement
only matters with several ranks, so numpy is imported on first use: a sequential run never
loads it (nor starts its BLAS threads).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Callable, Sequence, Union

from .errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

class ByRanks:
    """A placement computed for the whole type at once from the number of ranks:
    ``ByRanks(fn)`` with ``fn(nranks) -> array of ranks`` (e.g. a topology's partition).
    Unlike a plain array it can be evaluated for any rank count, which is what the kernel's
    parallel prediction (``Simulator(predict_ranks=...)``) needs."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[int], Sequence[int]]):
        self.fn = fn


PlacementSpec = Union[str, int, ByRanks, Callable[[int, int], int], Sequence[int], "np.ndarray"]

PLACEMENTS = ("block", "cyclic", "hash")


def _hash_rank(name: str, index: int, nranks: int) -> int:
    h = hashlib.blake2b(f"{name}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") % nranks


def place(spec: PlacementSpec, name: str, count: int, nranks: int) -> np.ndarray:
    """Return the rank of every index ``0..count-1`` of entity type ``name``.

    ``spec`` is ``"block"`` (contiguous, balanced blocks), ``"cyclic"`` (index mod P),
    ``"hash"`` (a stable hash of name and index), an ``int`` (every entity on that rank,
    reduced mod P), a sequence or array of ranks, or a callable ``f(index, nranks) -> rank``.
    """
    import numpy as np

    if nranks < 1:
        raise ConfigError(f"nranks must be >= 1, got {nranks}")
    idx = np.arange(count, dtype=np.int64)
    if isinstance(spec, str):
        if spec == "block":
            ranks = (idx * nranks) // max(count, 1)
        elif spec == "cyclic":
            ranks = idx % nranks
        elif spec == "hash":
            ranks = np.array([_hash_rank(name, i, nranks) for i in range(count)], dtype=np.int64)
        else:
            raise ConfigError(
                f"placement of {name!r}: unknown placement {spec!r}; valid: {', '.join(PLACEMENTS)}, "
                "an int rank, a sequence of ranks or a callable(index, nranks)"
            )
    elif isinstance(spec, ByRanks):
        ranks = np.asarray(spec.fn(nranks), dtype=np.int64)
        if ranks.shape != (count,):
            raise ConfigError(f"placement of {name!r}: expected {count} ranks, got shape {ranks.shape}")
    elif isinstance(spec, (int, np.integer)):
        ranks = np.full(count, int(spec) % nranks, dtype=np.int64)
    elif callable(spec):
        ranks = np.fromiter((spec(i, nranks) for i in range(count)), dtype=np.int64, count=count)
    else:
        ranks = np.asarray(spec, dtype=np.int64)
        if ranks.shape != (count,):
            raise ConfigError(f"placement of {name!r}: expected {count} ranks, got shape {ranks.shape}")
    if count and (ranks.min() < 0 or ranks.max() >= nranks):
        raise ConfigError(
            f"placement of {name!r} maps an entity to rank {int(ranks.max()) if ranks.max() >= nranks else int(ranks.min())}; "
            f"valid ranks are 0..{nranks - 1}"
        )
    return ranks.astype(np.int32)
