"""The ``otf2`` app: replay an OTF2 trace (e.g. Score-P's) on simhpc's MPI layer.

::

    [[apps]]
    name = "otf2"
    args = { trace = "runs/lulesh/traces.otf2", compute_scale = 0.5 }

Every rank runs its location's program (:mod:`apps.otf2trace.trace`): compute from the
trace's timestamps times ``compute_scale``, and its MPI calls on simhpc's point-to-point
layer and collective algorithms, so the job's runtime emerges from the network like any
skeleton's. The trace's rank count must equal the job's.
"""

from __future__ import annotations

import math
import os
from typing import Any

from ..registry import app
from .trace import COLL, COMPUTE, IRECV, ISEND, RECV, SEND, SENDRECV, TEST, WAIT, load_trace, trace_ranks

__all__ = ["otf2_app"]


def _trace(value: Any, key: str) -> str:
    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise ValueError(f"{key} must be the path of an OTF2 archive (its traces.otf2 or directory), got {value!r}")
    p = os.fspath(value)
    anchor = os.path.join(p, "traces.otf2") if os.path.isdir(p) else p
    if not os.path.isfile(anchor):
        raise ValueError(f"{key}: no OTF2 archive at {p!r}")
    return p


def _scale(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{key} must be a number > 0 (compute time multiplier), got {value!r}")
    return float(value)


def _job(value: Any, key: str) -> Any:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"{key} must be a job id >= 0 or None, got {value!r}")
    return value


def _validate(size: int, *, trace: Any, job: Any = None, **_: Any) -> None:
    n = trace_ranks(trace, job)
    if n != size:
        raise ValueError(f"the trace {os.fspath(trace)!r} has {n} ranks, the job {size}: "
                         f"run it on {n} ranks (e.g. --ranks {n})")


@app("otf2", checks={"trace": _trace, "compute_scale": _scale, "job": _job}, validate=_validate)
def otf2_app(mpi: Any, *, trace: Any, compute_scale: Any = 1.0, job: Any = None) -> Any:
    """Replay an OTF2 trace (Score-P's, or one simhpc wrote with --otf2): each rank runs its
    location's MPI calls on the simulated network, with the compute between them from the
    trace's timestamps times ``compute_scale``; ``job`` picks a job of a simhpc trace."""
    path = os.path.abspath(os.fspath(trace))
    scale = float(compute_scale)
    # Read once per simulation process: every rank of every job replaying this trace shares it.
    tr = mpi.shared_cache(("otf2", path, job, scale), lambda: load_trace(path, job=job, compute_scale=scale))
    if tr.ranks != mpi.size:
        raise ValueError(f"the trace {path!r} has {tr.ranks} ranks, the job {mpi.size}")
    w = mpi.world_rank
    comms = [mpi.group_comm(m, ("otf2", i), name) for i, (m, name) in enumerate(zip(tr.comms, tr.comm_names))]
    reqs: dict[int, Any] = {}
    compute = mpi.compute
    for op in tr.programs[w]:
        k = op[0]
        if k == COMPUTE:
            compute(op[1])
        elif k == ISEND:
            reqs[op[5]] = comms[op[1]].isend(op[2], op[3], op[4])
        elif k == IRECV:
            reqs[op[4]] = comms[op[1]].irecv(op[2], op[3])
        elif k == WAIT:
            ids = op[1]
            if len(ids) == 1:
                mpi.wait(reqs.pop(ids[0]))
            else:
                mpi.waitall([reqs.pop(i) for i in ids])
        elif k == SEND:
            comms[op[1]].send(op[2], op[3], op[4])
        elif k == RECV:
            comms[op[1]].recv(op[2], op[3])
        elif k == SENDRECV:
            comms[op[1]].sendrecv(op[2], op[3], tag=op[4], source=op[5], recvtag=op[6])
        elif k == COLL:
            _collective(comms[op[1]], op[2], op[3], op[4])
        else:  # TEST
            mpi.test(reqs[op[1]])
    if w == 0:
        return {"ranks": tr.ranks, "records": tr.records, "skipped": dict(tr.skipped)}
    return None


def _collective(comm: Any, name: str, n: Any, root: int) -> None:
    if name == "allreduce":
        comm.allreduce(n)
    elif name == "barrier":
        comm.barrier()
    elif name == "bcast":
        comm.bcast(n, root)
    elif name == "reduce":
        comm.reduce(n, root)
    elif name == "allgather":
        comm.allgather(n)
    elif name == "alltoall":
        comm.alltoall(n)
    elif name == "gather":
        comm.gather(n, root)
    elif name == "scatter":
        comm.scatter(n, root)
    elif name == "alltoallv":
        comm.alltoallv([n] * comm.size)
    else:  # reduce_scatter
        comm.reduce_scatter(n)
