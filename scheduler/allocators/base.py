"""Pieces shared by the allocators of this package.

:class:`Placement`
    What ``select`` returns when an allocator decides more than the node set (the links a
    job reserves, the partition it occupies): the sorted int64 node ids, as an ndarray
    subclass, with the decision in ``info``. The scheduler passes the object it got from
    ``select`` unchanged to ``commit`` (and stores it as ``job.assigned_nodes``, which
    ``release`` receives), so ``commit`` applies exactly what ``select`` chose, also when a
    reservation chosen on one state is committed on another (conservative backfilling).
    Arithmetic on a placement gives plain arrays; slicing drops ``info``.

:class:`PlacementState`
    An :class:`~scheduler.allocators.interface.AllocState` that also keeps, per running job, the
    ``info`` its placement carried (``placements``), so that ``release`` can undo it.

Determinism
    :func:`job_rng` gives the generator of one job: seeded from the allocator's seed, the
    job id and a salt naming the use. A select is then a pure function of (job, state):
    trial selects made by backfilling on copied states draw nothing from a shared stream and
    change no later choice.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from ..errors import SchedulerError, UserError
from ..job import Job
from .interface import Allocator, AllocState

__all__ = [
    "Placement",
    "PlacementState",
    "OptionsAllocator",
    "job_rng",
    "check_choice",
    "check_int_option",
    "check_float_option",
    "check_bool_option",
    "check_shape_option",
]


class Placement(np.ndarray):
    """Sorted int64 node ids plus the allocator's decision beyond them (``info``)."""

    info: Any

    def __new__(cls, nodes: Any, info: Any = None) -> "Placement":
        obj = np.asarray(nodes, dtype=np.int64).reshape(-1).view(cls)
        obj.info = info
        return obj

    def __array_finalize__(self, obj: Any) -> None:
        # Views of the whole array (copies, same-shape views) keep the decision; slices and
        # reshapes describe other node sets and drop it.
        src = getattr(obj, "info", None)
        self.info = src if obj is not None and getattr(obj, "shape", None) == self.shape else None

    def __array_wrap__(self, arr: Any, context: Any = None, return_scalar: bool = False) -> Any:
        if return_scalar:
            return arr[()]
        return np.asarray(arr).view(np.ndarray)

    def __reduce__(self) -> Any:
        return (Placement, (np.asarray(self).view(np.ndarray).copy(), self.info))


def placement_info(nodes: Any) -> Any:
    """The ``info`` a :class:`Placement` carries (None for a plain array)."""
    return getattr(nodes, "info", None) if isinstance(nodes, Placement) else None


class PlacementState(AllocState):
    """Occupancy plus ``placements``: job id -> the info its placement carried."""

    __slots__ = ("placements",)

    def __init__(self, n_nodes: int):
        super().__init__(n_nodes)
        self.placements: dict[int, Any] = {}

    def copy(self) -> "PlacementState":
        c = super().copy()
        c.placements = dict(self.placements)
        return c  # type: ignore[return-value]

    def placement_of(self, job_id: int) -> Any:
        """The info of running job ``job_id``'s placement (KeyError if it holds none)."""
        return self.placements[job_id]


_SALT_MASK = (1 << 64) - 1


def _zigzag(v: int) -> int:
    return 2 * v if v >= 0 else -2 * v - 1


def job_rng(seed: int, job_id: int, salt: int) -> np.random.Generator:
    """The generator of one job: a function of (seed, job id, salt) only."""
    return np.random.default_rng([_zigzag(int(seed)), _zigzag(int(job_id)), int(salt) & _SALT_MASK])


# ----------------------------------------------------------------------------- option checks
def check_choice(alloc: str, name: str, value: Any, choices: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise UserError(f"allocator {alloc!r}: option {name} must be one of {', '.join(choices)}; got {value!r}")
    return value


def check_int_option(alloc: str, name: str, value: Any, lo: int, hi: int | None = None) -> int:
    rng = f">= {lo}" if hi is None else f"in {lo}..{hi}"
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo or (hi is not None and value > hi):
        raise UserError(f"allocator {alloc!r}: option {name} must be an integer {rng}; got {value!r}")
    return int(value)


def check_float_option(alloc: str, name: str, value: Any, lo: float, hi: float | None = None) -> float:
    rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise UserError(f"allocator {alloc!r}: option {name} must be a number {rng}; got {value!r}")
    v = float(value)
    if not (v >= lo) or (hi is not None and v > hi) or v != v or v == float("inf"):
        raise UserError(f"allocator {alloc!r}: option {name} must be a finite number {rng}; got {value!r}")
    return v


def check_bool_option(alloc: str, name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise UserError(f"allocator {alloc!r}: option {name} must be true or false; got {value!r}")
    return bool(value)


def check_shape_option(alloc: str, name: str, value: Any, dims: Sequence[int]) -> tuple[int, ...]:
    """A tuple of one positive int per dimension, each dividing the machine's extent."""
    D = len(dims)
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise UserError(f"allocator {alloc!r}: option {name} must be {D} integers (one per torus dimension); got {value!r}")
    vals = tuple(value)
    if len(vals) != D or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 for v in vals):
        raise UserError(f"allocator {alloc!r}: option {name} must be {D} integers >= 1 (one per torus dimension); got {value!r}")
    out = tuple(int(v) for v in vals)
    bad = [i for i, (b, k) in enumerate(zip(out, dims)) if k % b]
    if bad:
        i = bad[0]
        valid = [b for b in range(1, dims[i] + 1) if dims[i] % b == 0]
        raise UserError(
            f"allocator {alloc!r}: option {name}[{i}] = {out[i]} does not divide the machine's extent {dims[i]} "
            f"in dimension {i}; valid: {', '.join(map(str, valid))}"
        )
    return out


class OptionsAllocator(Allocator):
    """Base of this package's allocators: names its valid options in errors and checks
    the topology family and size.

    Subclasses list their options in ``OPTIONS`` and their topology families in
    ``FAMILIES`` (empty: any machine, with or without a topology).
    """

    OPTIONS: tuple[str, ...] = ()
    FAMILIES: tuple[str, ...] = ()

    def __init__(self, *, n_nodes: int, topology: Any = None, seed: int = 0, **options: Any):
        if options:
            valid = ", ".join(self.OPTIONS) if self.OPTIONS else "none"
            raise UserError(
                f"allocator {self.name!r} has no option(s) {', '.join(sorted(options))}; valid options: {valid}"
            )
        super().__init__(n_nodes=n_nodes, topology=topology, seed=seed)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise UserError(f"allocator {self.name!r}: seed must be an integer, got {seed!r}")
        if topology is not None:
            tn = getattr(topology, "n_nodes", None)
            if tn != self.n_nodes:
                raise UserError(
                    f"allocator {self.name!r}: the topology has {tn} nodes but n_nodes is {self.n_nodes}; "
                    "give the topology's node count"
                )
        if self.FAMILIES:
            fam = getattr(topology, "name", None)
            if topology is None or fam not in self.FAMILIES:
                got = "no topology" if topology is None else f"a {fam}"
                raise UserError(
                    f"allocator {self.name!r} needs a {' or '.join(self.FAMILIES)} topology, got {got}; "
                    "run it on a machine preset of that family (--machine)"
                )

    def _check_nodes(self, job: Job, nodes: np.ndarray) -> None:
        if len(nodes) != job.nodes:
            raise SchedulerError(f"allocator {self.name!r}: job {job.job_id} needs {job.nodes} nodes, given {len(nodes)}")
