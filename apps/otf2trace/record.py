"""Recording the MPI calls of a run, for an OTF2 trace of the simulated run.

When a run records (``run_app(..., otf2=DIR)``, ``simhpc run/app --otf2 DIR``) every rank runs
on a :class:`RecComm` (and derives :class:`RecComm` / :class:`RecCartComm` communicators):
each public MPI call an app makes is logged once, as ``(region, t_enter, t_leave, items)``,
where the items are the messages and collectives of the call (the records OTF2 has for them).
Calls made inside a call (the point-to-point messages of a collective, the ``allgather`` of a
``comm_split``) are the call's own business and are not logged. A run that does not record
uses the plain :class:`~apps.mpi.Comm`, so recording costs nothing when it is off.

Items (tuples, first field the kind)::

    (SEND, dest, ctx, tag, nbytes)              blocking send (MpiSend)
    (RECV, source, ctx, tag, nbytes)            blocking receive (MpiRecv)
    (ISEND, dest, ctx, tag, nbytes, rid)        non-blocking send started (MpiIsend)
    (ISEND_DONE, rid)                           ... completed (MpiIsendComplete)
    (IRECV_REQ, rid)                            non-blocking receive posted (MpiIrecvRequest)
    (IRECV, source, ctx, tag, nbytes, rid)      ... completed (MpiIrecv)
    (TEST, rid)                                 an unsuccessful test (MpiRequestTest)
    (COLL, op, ctx, root, size)                 a collective (MpiCollectiveBegin/End)

``ctx`` names the communicator (its context id, the same on every member); each rank's log
keeps ``ctx -> (name, world ranks)`` of the communicators it used. ``op`` is simhpc's name
of the collective (``"allreduce"``, ..., ``"create"`` for a new communicator); ``size`` its
bytes per rank as the call was given them (a list for ``alltoallv``).
"""

from __future__ import annotations

from typing import Any, Sequence

from ..mpi.comm import CartComm, Comm
from ..mpi.p2p import PROC_NULL

__all__ = ["COLL", "IRECV", "IRECV_REQ", "ISEND", "ISEND_DONE", "RECV", "SEND", "TEST",
           "RankLog", "RecCartComm", "RecComm", "Recorder"]

SEND, RECV, ISEND, ISEND_DONE, IRECV_REQ, IRECV, TEST, COLL = range(8)


class RankLog:
    """The logged calls of one rank (see the module docstring)."""

    __slots__ = ("ep", "job", "rank", "node", "start", "depth", "calls", "reqs", "next_rid", "comms")

    def __init__(self, ep: Any, job: int, rank: int, node: int, start: float):
        self.ep = ep
        self.job = job
        self.rank = rank
        self.node = node
        self.start = start
        self.depth = 0
        self.calls: list[tuple] = []
        self.reqs: dict[Any, int] = {}
        self.next_rid = 0
        self.comms: dict[int, tuple[str, tuple[int, ...]]] = {}

    def ctx(self, comm: Comm) -> int:
        """The key of ``comm`` in the items (registered on first use)."""
        c = comm._ctx
        if c not in self.comms:
            self.comms[c] = (comm.name, comm.group)
        return c

    def track(self, req: Any) -> int:
        """A new request id for ``req`` (a started isend or irecv)."""
        rid = self.next_rid
        self.next_rid = rid + 1
        self.reqs[req] = rid
        return rid

    def completions(self, reqs: Sequence[Any]) -> list[tuple]:
        """The completion items of the tracked requests of ``reqs`` that are done now."""
        out = []
        pending = self.reqs
        for r in reqs:
            if r.done and r in pending:
                rid = pending.pop(r)
                if r.kind:  # a receive
                    out.append((IRECV, r.source, self.ctx(r.comm), r.tag, r.nbytes, rid))
                else:
                    out.append((ISEND_DONE, rid))
        return out

    def summary(self) -> dict[str, Any]:
        """The log as plain, picklable data (it crosses ranks under mpirun)."""
        ep = self.ep
        end = ep.end if ep.done else ep.node.sim.now
        return {"job": self.job, "rank": self.rank, "node": self.node, "start": self.start, "end": end,
                "calls": self.calls, "comms": self.comms}


class Recorder:
    """The trace recorder of one simulation process: one :class:`RankLog` per rank of every
    job launched here (set as :attr:`apps.node.MpiShared.recorder`)."""

    world_cls = None  # set below: the world communicator's class when recording

    def __init__(self) -> None:
        self.logs: dict[tuple[int, int], RankLog] = {}
        self.jobs: dict[int, dict[str, Any]] = {}

    def attach(self, ep: Any, spec: Any, now: float) -> None:
        """Start the log of ``ep``'s rank at its launch."""
        log = RankLog(ep, spec.job, ep.w, spec.rank_nodes[ep.w], now)
        ep.rec = log
        self.logs[(spec.job, ep.w)] = log
        if spec.job not in self.jobs:
            self.jobs[spec.job] = {"job": spec.job, "app": spec.app, "size": spec.size,
                                   "args": {k: repr(v) for k, v in spec.args.items()}}

    def collect(self) -> dict[str, Any]:
        """Every logged rank of this process, as plain data: ``{"jobs": [...], "ranks": [...]}``."""
        return {"jobs": list(self.jobs.values()), "ranks": [self.logs[k].summary() for k in sorted(self.logs)]}


def _done(log: RankLog, name: str, t0: float, comm: Comm, items: Any) -> None:
    log.depth = 0
    log.calls.append((name, t0, comm.now, tuple(items)))


class RecComm(Comm):
    """A communicator that logs its rank's MPI calls (see the module docstring)."""

    __slots__ = ()

    # -- point-to-point ---------------------------------------------------------------------------
    def send(self, dest: int, nbytes: float = 0, tag: int = 0, data: Any = None) -> None:
        log = self._ep.rec
        if log.depth:
            return Comm.send(self, dest, nbytes, tag, data)
        t0 = self.now
        log.depth = 1
        try:
            Comm.send(self, dest, nbytes, tag, data)
        finally:
            _done(log, "MPI_Send", t0, self, () if dest == PROC_NULL else ((SEND, dest, log.ctx(self), tag, nbytes),))

    def recv(self, source: int = -1, tag: int = -1) -> Any:
        log = self._ep.rec
        if log.depth:
            return Comm.recv(self, source, tag)
        t0 = self.now
        log.depth = 1
        req = None
        try:
            req = Comm.recv(self, source, tag)
        finally:
            items = () if req is None or req.source == PROC_NULL else (
                (RECV, req.source, log.ctx(self), req.tag, req.nbytes),)
            _done(log, "MPI_Recv", t0, self, items)
        return req

    def isend(self, dest: int, nbytes: float = 0, tag: int = 0, data: Any = None) -> Any:
        log = self._ep.rec
        req = Comm.isend(self, dest, nbytes, tag, data)
        if log.depth:
            return req
        items = () if dest == PROC_NULL else ((ISEND, dest, log.ctx(self), tag, nbytes, log.track(req)),)
        log.calls.append(("MPI_Isend", self.now, self.now, items))
        return req

    def irecv(self, source: int = -1, tag: int = -1) -> Any:
        log = self._ep.rec
        req = Comm.irecv(self, source, tag)
        if log.depth:
            return req
        items = () if source == PROC_NULL else ((IRECV_REQ, log.track(req)),)
        log.calls.append(("MPI_Irecv", self.now, self.now, items))
        return req

    def _waiting(self, name: str, fn: Any, reqs: Sequence[Any], *args: Any) -> Any:
        log = self._ep.rec
        if log.depth:
            return fn(self, *args)
        t0 = self.now
        log.depth = 1
        try:
            out = fn(self, *args)
        finally:
            log.depth = 0
        log.calls.append((name, t0, self.now, tuple(log.completions(reqs))))
        return out

    def wait(self, req: Any) -> Any:
        return self._waiting("MPI_Wait", Comm.wait, (req,), req)

    def waitall(self, reqs: Sequence[Any]) -> list:
        reqs = list(reqs)
        return self._waiting("MPI_Waitall", Comm.waitall, reqs, reqs)

    def waitany(self, reqs: Sequence[Any]) -> tuple[int, Any]:
        log = self._ep.rec
        if log.depth:
            return Comm.waitany(self, reqs)
        t0 = self.now
        log.depth = 1
        try:
            i, r = Comm.waitany(self, reqs)
        finally:
            log.depth = 0
        log.calls.append(("MPI_Waitany", t0, self.now, tuple(log.completions((r,)))))
        return i, r

    def test(self, req: Any) -> bool:
        log = self._ep.rec
        if log.depth:
            return Comm.test(self, req)
        t0 = self.now
        log.depth = 1
        try:
            ok = Comm.test(self, req)
        finally:
            log.depth = 0
        if ok:
            items = tuple(log.completions((req,)))
        else:
            rid = log.reqs.get(req)
            items = () if rid is None else ((TEST, rid),)
        log.calls.append(("MPI_Test", t0, self.now, items))
        return ok

    def sendrecv(self, dest: int, nbytes: float = 0, *, source: int | None = None, tag: int = 0,
                 recvtag: int | None = None, data: Any = None) -> Any:
        log = self._ep.rec
        if log.depth:
            return Comm.sendrecv(self, dest, nbytes, source=source, tag=tag, recvtag=recvtag, data=data)
        t0 = self.now
        log.depth = 1
        req = None
        try:
            req = Comm.sendrecv(self, dest, nbytes, source=source, tag=tag, recvtag=recvtag, data=data)
        finally:
            c = log.ctx(self)
            items = []
            if dest != PROC_NULL:
                items.append((SEND, dest, c, tag, nbytes))
            if req is not None and req.source != PROC_NULL:
                items.append((RECV, req.source, c, req.tag, req.nbytes))
            _done(log, "MPI_Sendrecv", t0, self, items)
        return req

    def probe(self, source: int = -1, tag: int = -1) -> Any:
        return self._region("MPI_Probe", Comm.probe, source, tag)

    def iprobe(self, source: int = -1, tag: int = -1) -> Any:
        return self._region("MPI_Iprobe", Comm.iprobe, source, tag)

    def _region(self, name: str, fn: Any, *args: Any, item: tuple | None = None, **kw: Any) -> Any:
        """Run ``fn`` as one logged call ``name`` with the one item ``item`` (or none)."""
        log = self._ep.rec
        if log.depth:
            return fn(self, *args, **kw)
        t0 = self.now
        log.depth = 1
        try:
            out = fn(self, *args, **kw)
        finally:
            log.depth = 0
        log.calls.append((name, t0, self.now, () if item is None else (item,)))
        return out

    # -- collectives --------------------------------------------------------------------------------
    def _coll(self, name: str, op: str, root: int, size: Any, fn: Any, *args: Any, **kw: Any) -> Any:
        log = self._ep.rec
        if log.depth:
            return fn(self, *args, **kw)
        return self._region(name, fn, *args, item=(COLL, op, log.ctx(self), root, size), **kw)

    def barrier(self, *, algorithm: str | None = None) -> None:
        return self._coll("MPI_Barrier", "barrier", -1, 0, Comm.barrier, algorithm=algorithm)

    def bcast(self, nbytes: float, root: int = 0, data: Any = None, *, algorithm: str | None = None) -> Any:
        return self._coll("MPI_Bcast", "bcast", root, nbytes, Comm.bcast, nbytes, root, data, algorithm=algorithm)

    def reduce(self, nbytes: float, root: int = 0, data: Any = None, op: Any = "sum", *,
               algorithm: str | None = None) -> Any:
        return self._coll("MPI_Reduce", "reduce", root, nbytes, Comm.reduce, nbytes, root, data, op,
                          algorithm=algorithm)

    def allreduce(self, nbytes: float, data: Any = None, op: Any = "sum", *, algorithm: str | None = None) -> Any:
        return self._coll("MPI_Allreduce", "allreduce", -1, nbytes, Comm.allreduce, nbytes, data, op,
                          algorithm=algorithm)

    def gather(self, nbytes: float, root: int = 0, data: Any = None, *, algorithm: str | None = None) -> Any:
        return self._coll("MPI_Gather", "gather", root, nbytes, Comm.gather, nbytes, root, data, algorithm=algorithm)

    def scatter(self, nbytes: float, root: int = 0, data: Sequence[Any] | None = None, *,
                algorithm: str | None = None) -> Any:
        return self._coll("MPI_Scatter", "scatter", root, nbytes, Comm.scatter, nbytes, root, data,
                          algorithm=algorithm)

    def allgather(self, nbytes: float, data: Any = None, *, algorithm: str | None = None) -> list:
        return self._coll("MPI_Allgather", "allgather", -1, nbytes, Comm.allgather, nbytes, data, algorithm=algorithm)

    def alltoall(self, nbytes: float, data: Sequence[Any] | None = None, *, algorithm: str | None = None) -> list:
        return self._coll("MPI_Alltoall", "alltoall", -1, nbytes, Comm.alltoall, nbytes, data, algorithm=algorithm)

    def alltoallv(self, send_bytes: Sequence[float], data: Sequence[Any] | None = None, *,
                  recv_bytes: Sequence[float] | None = None, algorithm: str | None = None) -> list:
        sizes = (sum(send_bytes), sum(recv_bytes) if recv_bytes is not None else sum(send_bytes))
        return self._coll("MPI_Alltoallv", "alltoallv", -1, sizes, Comm.alltoallv, send_bytes, data,
                          recv_bytes=recv_bytes, algorithm=algorithm)

    def reduce_scatter(self, counts: Any, data: Sequence[Any] | None = None, op: Any = "sum", *,
                       algorithm: str | None = None) -> Any:
        size = counts if isinstance(counts, (int, float)) else list(counts)
        return self._coll("MPI_Reduce_scatter", "reduce_scatter", -1, size, Comm.reduce_scatter, counts, data, op,
                          algorithm=algorithm)

    # -- communicators --------------------------------------------------------------------------------
    def comm_split(self, color: int | None, key: int = 0) -> Any:
        return self._coll("MPI_Comm_split", "create", -1, 0, Comm.comm_split, color, key)

    def dup(self) -> Any:
        return self._coll("MPI_Comm_dup", "create", -1, 0, Comm.dup)

    def cart_create(self, dims: Sequence[int], periods: Sequence[bool] | bool = True, reorder: bool = False) -> Any:
        return self._coll("MPI_Cart_create", "create", -1, 0, Comm.cart_create, dims, periods, reorder)


class RecCartComm(RecComm, CartComm):
    """A Cartesian communicator that logs its rank's MPI calls."""

    __slots__ = ()

    def cart_sub(self, remain_dims: Sequence[bool]) -> Any:
        return self._coll("MPI_Cart_sub", "create", -1, 0, CartComm.cart_sub, remain_dims)


RecComm._comm_cls = RecComm
RecComm._cart_cls = RecCartComm
Recorder.world_cls = RecComm
