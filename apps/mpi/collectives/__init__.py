"""Collective operations built from point-to-point messages, with MPICH's algorithm choice.

Every collective is a sequence of real point-to-point messages (see :mod:`.base`), so its
traffic crosses the simulated network and competes with everything else on it.

Algorithm selection (``"auto"``) follows MPICH 3.x (``MPIR_*_intra`` in ``src/mpi/coll``)
with its default control variables (``MPIR_CVAR_*``, listed in :data:`THRESHOLDS`); n is the
message size in bytes per rank (per pair for all-to-all), p the communicator size:

==============  ============================================================================
barrier         dissemination
bcast           binomial if n < 12288 or p < 8; else scatter + recursive-doubling allgather
                if n < 524288 and p is a power of two; else scatter + ring allgather
reduce          reduce_scatter_gather (Rabenseifner) if n > 2048, the op is built in and
                n >= pof2 (the largest power of two <= p); else binomial
allreduce       recursive_doubling if n <= 2048 or the op is user-defined or n < pof2;
                else rabenseifner (reduce-scatter + allgather)
gather          binomial
scatter         binomial
allgather       with total = n * p: recursive_doubling if total < 524288 and p is a power of
                two; else bruck if total < 81920; else ring
alltoall        bruck if n <= 256 and p >= 8; else scattered if n <= 32768; else pairwise
alltoallv       scattered
reduce_scatter  recursive_halving if the total size < 524288; else pairwise
==============  ============================================================================

Sizes are counted in bytes, as with an element type of one byte (MPICH's ``count < pof2``
conditions become ``n < pof2``). An algorithm can be forced per call (``algorithm=``) or for
a whole job (the run option ``algorithms={"allreduce": "rabenseifner", ...}``); a per-call
choice wins. Forcing an algorithm that needs a power-of-two communicator on another size
raises :class:`~apps.errors.MpiError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

from ...errors import AppConfigError, MpiError
from . import allgather, allreduce, alltoall, barrier, bcast, gather, reduce, reduce_scatter
from .base import is_pof2, pof2_floor

if TYPE_CHECKING:  # pragma: no cover
    from ..comm import Comm

#: MPICH 3.x defaults of the control variables that pick the algorithms (bytes, ranks).
THRESHOLDS: dict[str, int] = {
    "BCAST_SHORT_MSG_SIZE": 12288,
    "BCAST_LONG_MSG_SIZE": 524288,
    "BCAST_MIN_PROCS": 8,
    "REDUCE_SHORT_MSG_SIZE": 2048,
    "ALLREDUCE_SHORT_MSG_SIZE": 2048,
    "ALLGATHER_SHORT_MSG_SIZE": 81920,
    "ALLGATHER_LONG_MSG_SIZE": 524288,
    "ALLTOALL_SHORT_MSG_SIZE": 256,
    "ALLTOALL_MEDIUM_MSG_SIZE": 32768,
    "ALLTOALL_THROTTLE": alltoall.THROTTLE,
    "REDSCAT_COMMUTATIVE_LONG_MSG_SIZE": 524288,
}

#: Algorithms of every collective by name.
COLLECTIVES: dict[str, dict[str, Callable[..., Any]]] = {
    "barrier": barrier.ALGORITHMS,
    "bcast": bcast.ALGORITHMS,
    "reduce": reduce.ALGORITHMS,
    "allreduce": allreduce.ALGORITHMS,
    "gather": gather.GATHER_ALGORITHMS,
    "scatter": gather.SCATTER_ALGORITHMS,
    "allgather": allgather.ALGORITHMS,
    "alltoall": alltoall.ALGORITHMS,
    "alltoallv": alltoall.V_ALGORITHMS,
    "reduce_scatter": reduce_scatter.ALGORITHMS,
}


def auto(coll: str, p: int, nbytes: float, builtin_op: bool = True) -> str:
    """The algorithm MPICH picks for collective ``coll`` on p ranks and n bytes."""
    T = THRESHOLDS
    if coll == "bcast":
        if nbytes < T["BCAST_SHORT_MSG_SIZE"] or p < T["BCAST_MIN_PROCS"]:
            return "binomial"
        if nbytes < T["BCAST_LONG_MSG_SIZE"] and is_pof2(p):
            return "scatter_doubling_allgather"
        return "scatter_ring_allgather"
    if coll == "allreduce":
        if nbytes <= T["ALLREDUCE_SHORT_MSG_SIZE"] or not builtin_op or nbytes < pof2_floor(p):
            return "recursive_doubling"
        return "rabenseifner"
    if coll == "reduce":
        if nbytes > T["REDUCE_SHORT_MSG_SIZE"] and builtin_op and nbytes >= pof2_floor(p):
            return "reduce_scatter_gather"
        return "binomial"
    if coll == "allgather":
        total = nbytes * p
        if total < T["ALLGATHER_LONG_MSG_SIZE"] and is_pof2(p):
            return "recursive_doubling"
        if total < T["ALLGATHER_SHORT_MSG_SIZE"]:
            return "bruck"
        return "ring"
    if coll == "alltoall":
        if nbytes <= T["ALLTOALL_SHORT_MSG_SIZE"] and p >= 8:
            return "bruck"
        if nbytes <= T["ALLTOALL_MEDIUM_MSG_SIZE"]:
            return "scattered"
        return "pairwise"
    if coll == "reduce_scatter":
        return "recursive_halving" if nbytes < T["REDSCAT_COMMUTATIVE_LONG_MSG_SIZE"] else "pairwise"
    if coll == "alltoallv":
        return "scattered"
    if coll == "barrier":
        return "dissemination"
    return "binomial"  # gather, scatter


def pick(
    comm: "Comm", coll: str, nbytes: float, algorithm: str | None, builtin_op: bool = True
) -> tuple[str, Callable[..., Any]]:
    """(name, function) of the algorithm to run: per call, else per job, else MPICH's choice."""
    algs = COLLECTIVES[coll]
    name = algorithm
    if name is None:
        forced = comm._ep.js.algorithms
        if forced:
            name = forced.get(coll)
    if name is None or name == "auto":
        name = auto(coll, comm.size, nbytes, builtin_op)
    fn = algs.get(name)
    if fn is None:
        raise MpiError(f"{coll}: unknown algorithm {name!r}; valid: auto, {', '.join(algs)}")
    return name, fn


def check_forced(algorithms: Mapping[str, str] | None) -> dict[str, str]:
    """Validate a job's forced algorithms ``{collective: algorithm}`` (before a run)."""
    if algorithms is None:
        return {}
    if not isinstance(algorithms, Mapping):
        raise AppConfigError(f"algorithms must be a mapping {{collective: algorithm}}, got {algorithms!r}")
    out = {}
    for coll, name in algorithms.items():
        algs = COLLECTIVES.get(coll)
        if algs is None:
            raise AppConfigError(f"algorithms: unknown collective {coll!r}; valid: {', '.join(COLLECTIVES)}")
        if name != "auto" and name not in algs:
            raise AppConfigError(f"algorithms: {coll} has no algorithm {name!r}; valid: auto, {', '.join(algs)}")
        out[str(coll)] = str(name)
    return out


__all__ = ["COLLECTIVES", "THRESHOLDS", "auto", "check_forced", "pick"]
