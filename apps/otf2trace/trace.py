"""Reading an OTF2 trace into per-rank replay programs: :func:`load_trace`, :func:`trace_ranks`.

A rank's program is a list of tuples (first field the kind), run by the ``otf2`` app::

    (COMPUTE, seconds)
    (SEND, comm, dest, nbytes, tag)                    blocking send
    (RECV, comm, source, tag)                          blocking receive
    (SENDRECV, comm, dest, nbytes, tag, source, rtag)  MPI_Sendrecv
    (ISEND, comm, dest, nbytes, tag, req)              start a send as request ``req``
    (IRECV, comm, source, tag, req)                    post a receive as request ``req``
    (WAIT, reqs)                                       wait for the requests ``reqs``
    (TEST, req)                                        an unsuccessful test
    (COLL, comm, name, nbytes, root)                   a collective (simhpc's name)

``comm`` indexes the trace's communicators (:attr:`ReplayTrace.comms`: world ranks of each);
``req`` numbers a rank's requests. How records become these:

* MPI calls are the ``Enter``/``Leave`` pairs of regions of the MPI paradigm (or named
  ``MPI_*``). The time between one call's ``Leave`` and the next call's ``Enter`` (from the
  rank's first record on, up to its last) is compute, scaled by ``compute_scale``; the time
  inside calls is what the simulation predicts. Records outside any MPI call are calls of
  their own (a trace without regions).
* In a call, a lone ``MpiSend`` is a blocking send, a lone ``MpiRecv`` a blocking receive, an
  ``MpiSend`` with an ``MpiRecv`` a sendrecv. Otherwise sends and receives become requests that
  the call waits for at its end, with the requests its completion records name.
* ``MpiIrecvRequest`` posts a receive whose source and tag are those of the ``MpiIrecv`` that
  completes it later (a posted receive therefore matches exactly what it matched when traced).
* ``MpiCollectiveEnd`` gives the operation, communicator, root and sizes; sizes follow
  Score-P's convention (:func:`apps.otf2trace.export.coll_bytes`) and are turned back into
  bytes per rank. ``CREATE_HANDLE`` replays what creating a communicator costs in simhpc (an
  allreduce of the context mask, and for ``MPI_Comm_split``/``MPI_Cart_sub`` an allgather
  of (color, key) before it); ``DESTROY_HANDLE`` costs nothing.
* Records that move no MPI message (OpenMP, I/O, metrics, parameters, calling contexts, ...)
  are passed over: their time stays in the compute between calls. They are counted
  (:attr:`ReplayTrace.skipped`).
* One-sided MPI (``Rma*``), cancelled requests, matched probes (``MpiMrecv``, ``MpiImrecv``)
  and the collectives simhpc does not have (scan, exscan, alltoallw, window allocation)
  raise :class:`TraceError` naming the record and the location.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import AppConfigError

__all__ = ["COLL", "COMPUTE", "IRECV", "ISEND", "RECV", "SEND", "SENDRECV", "TEST", "WAIT", "ReplayTrace",
           "TraceError", "load_trace", "trace_ranks"]

COMPUTE, SEND, RECV, SENDRECV, ISEND, IRECV, WAIT, TEST, COLL = range(9)

#: Bytes simhpc's communicator creation moves (apps.mpi.comm: the context-mask allreduce and
#: comm_split's allgather of (color, key)).
_CTX_MASK_BYTES = 256
_SPLIT_BYTES = 8
_SPLITS = ("MPI_Comm_split", "MPI_Comm_split_type", "MPI_Cart_sub")

#: OTF2 CollectiveOp name -> (simhpc collective, how bytes per rank follow from the record).
_COLLS = {
    "BARRIER": ("barrier", None), "BCAST": ("bcast", "recv"), "SCATTER": ("scatter", "recv"),
    "SCATTERV": ("scatter", "recv"), "GATHER": ("gather", "sent"), "GATHERV": ("gather", "sent"),
    "REDUCE": ("reduce", "sent"), "ALLREDUCE": ("allreduce", "recv/p"), "ALLGATHER": ("allgather", "recv/p"),
    "ALLGATHERV": ("allgather", "recv/p"), "ALLTOALL": ("alltoall", "recv/p"), "ALLTOALLV": ("alltoallv", "sent/p"),
    "REDUCE_SCATTER": ("reduce_scatter", "recv/p"), "REDUCE_SCATTER_BLOCK": ("reduce_scatter", "recv/p"),
    "CREATE_HANDLE": ("create", None), "DESTROY_HANDLE": ("destroy", None),
}
_RMA_PREFIX = "Rma"
_UNSUPPORTED = {"MpiRequestCancelled": "a cancelled request", "MpiMrecv": "a matched receive (MPI_Mrecv)",
                "MpiImrecv": "a matched receive (MPI_Imrecv)", "MpiImrecvRequest": "a matched receive (MPI_Imrecv)"}


class TraceError(AppConfigError):
    """An OTF2 trace the ``otf2`` app cannot replay (malformed, or with unsupported records)."""


@dataclass
class ReplayTrace:
    """A trace read for replay.

    Attributes:
        path: the anchor file read.
        ranks: the number of ranks (MPI locations of the chosen job).
        programs: per world rank, its program (see the module docstring).
        comms: per communicator index, the world ranks of its members in communicator order.
        comm_names: per communicator index, its name in the trace.
        skipped: record type -> how many were passed over (no MPI message).
        records: how many records were read.
    """

    path: str
    ranks: int
    programs: list[list[tuple]]
    comms: list[tuple[int, ...]]
    comm_names: list[str]
    skipped: dict[str, int] = field(default_factory=dict)
    records: int = 0


def _anchor(path: str | os.PathLike) -> str:
    p = os.fspath(path)
    if os.path.isdir(p):
        p = os.path.join(p, "traces.otf2")
    if not os.path.isfile(p):
        raise TraceError(f"trace {os.fspath(path)!r}: no such OTF2 archive (give its traces.otf2 or its directory)")
    return p


def _open(path: str) -> Any:
    try:
        import otf2
    except ImportError:
        raise AppConfigError("the otf2 app needs the otf2 package: pip install 'simhpc[otf2]'") from None
    try:
        return otf2.reader.open(path)
    except Exception as exc:  # the library's own error types
        raise TraceError(f"trace {path!r}: cannot be read as OTF2 ({type(exc).__name__}: {exc})") from None


def _job_of(loc: Any) -> str | None:
    """The simhpc job a location belongs to (``"job J"``), or None (a trace from elsewhere)."""
    from .export import JOB_CLASS

    node = loc.group.system_tree_parent if loc.group is not None else None
    while node is not None:
        if node.class_name == JOB_CLASS:
            return node.name
        node = node.parent
    return None


def _mpi_locations(defs: Any, path: str, job: int | None) -> list[Any]:
    """The MPI locations of the chosen job, in rank order."""
    from otf2.enums import GroupType, Paradigm

    group = None
    for g in defs.groups:
        if g.group_type == GroupType.COMM_LOCATIONS and g.paradigm == Paradigm.MPI:
            group = g
    if group is None:
        raise TraceError(f"trace {path!r}: no MPI locations group (a COMM_LOCATIONS group of the MPI paradigm); "
                         "it was not recorded from an MPI program")
    locs = list(group.members)
    jobs: dict[str | None, list[Any]] = {}
    for loc in locs:
        jobs.setdefault(_job_of(loc), []).append(loc)
    names = [j for j in jobs if j is not None]
    if job is not None:
        key = f"job {job}"
        if key not in jobs:
            have = ", ".join(n.split()[-1] for n in names) or "none (not a simhpc trace)"
            raise TraceError(f"trace {path!r} has no job {job}; its jobs: {have}")
        return jobs[key]
    if len(names) > 1:
        raise TraceError(f"trace {path!r} holds {len(names)} jobs ({', '.join(n.split()[-1] for n in names)}); "
                         "choose one with the argument job=J")
    return locs


def trace_ranks(path: str | os.PathLike, job: int | None = None) -> int:
    """How many ranks the trace (or its job ``job``) has, from its definitions alone."""
    p = _anchor(path)
    with _open(p) as tr:
        return len(_mpi_locations(tr.definitions, p, job))


def load_trace(path: str | os.PathLike, *, job: int | None = None, compute_scale: float = 1.0) -> ReplayTrace:
    """Read the trace at ``path`` (its ``traces.otf2`` or its directory) into per-rank
    programs (see the module docstring). ``job`` chooses a job of a trace simhpc wrote of a
    run with several; ``compute_scale`` multiplies the compute between MPI calls."""
    from otf2.enums import Paradigm

    p = _anchor(path)
    with _open(p) as tr:
        defs = tr.definitions
        res = float(defs.clock_properties.timer_resolution)
        locs = _mpi_locations(defs, p, job)
        rank_of = {loc: i for i, loc in enumerate(locs)}
        comm_index: dict[Any, int] = {}
        comms: list[tuple[int, ...]] = []
        names: list[str] = []
        for c in defs.comms:
            group = getattr(c, "group", None)
            members = getattr(group, "members", None)
            if members is None:
                continue
            ws = tuple(rank_of.get(m, -1) for m in members)
            if not ws or any(w < 0 for w in ws):
                continue  # another job's, or not a group of this job's MPI locations
            comm_index[c] = len(comms)
            comms.append(ws)
            names.append(str(c.name))
        builders = [_Rank(i, loc, res, compute_scale, comm_index, comms, p) for i, loc in enumerate(locs)]
        mpi_regions: dict[Any, bool] = {}
        for r in defs.regions:
            mpi_regions[r] = r.paradigm == Paradigm.MPI or str(r.name).startswith("MPI_")
        by_loc = {loc: b for loc, b in zip(locs, builders)}
        skipped: dict[str, int] = {}
        n = 0
        for loc, ev in tr.events(locs):
            n += 1
            by_loc[loc].record(ev, mpi_regions, skipped)
    programs = [b.finish() for b in builders]
    return ReplayTrace(path=p, ranks=len(locs), programs=programs, comms=comms, comm_names=names,
                       skipped=skipped, records=n)


class _Rank:
    """Turns one location's records into its program."""

    def __init__(self, rank: int, loc: Any, res: float, scale: float, comm_index: dict[Any, int],
                 comms: list[tuple[int, ...]], path: str):
        self.rank = rank
        self.loc = loc
        self.res = res
        self.scale = scale
        self.comm_index = comm_index
        self.comms = comms
        self.path = path
        self.ops: list[tuple] = []
        self.first: int | None = None
        self.last_end: int | None = None  # the end of the last MPI call (ticks)
        self.last_time = 0
        self.depth = 0  # MPI regions open
        self.region: Any = None  # the outermost open MPI region
        self.items: list[tuple] = []  # the open call's records
        self.reqs: dict[int, int] = {}  # trace request id -> our request number
        self.irecv_at: dict[int, int] = {}  # trace request id of a posted receive -> its op index
        self.next_req = 0

    # -- errors --------------------------------------------------------------------------------
    def error(self, ev: Any, what: str) -> TraceError:
        t = ev.time / self.res
        return TraceError(f"trace {self.path!r}: location {self.loc.name!r} (rank {self.rank}): record "
                          f"{type(ev).__name__} at t={t:.9g} s: {what}")

    def comm(self, ev: Any, c: Any, peer: int | None = None) -> int:
        i = self.comm_index.get(c)
        if i is None:
            raise self.error(ev, f"communicator {getattr(c, 'name', c)!r} is not a communicator of this job's ranks")
        if peer is not None and not 0 <= peer < len(self.comms[i]):
            raise self.error(ev, f"rank {peer} is not a rank of communicator {getattr(c, 'name', c)!r} "
                                 f"(size {len(self.comms[i])})")
        return i

    # -- records -------------------------------------------------------------------------------
    def record(self, ev: Any, mpi_regions: dict[Any, bool], skipped: dict[str, int]) -> None:
        t = ev.time
        if self.first is None:
            self.first = t
        if t > self.last_time:
            self.last_time = t
        kind = type(ev).__name__
        if kind == "Enter":
            if mpi_regions.get(ev.region, False):
                if self.depth == 0:
                    self.begin_call(t)
                    self.region = ev.region
                self.depth += 1
            return
        if kind == "Leave":
            if mpi_regions.get(ev.region, False):
                if self.depth == 0:
                    raise self.error(ev, f"leaves MPI region {ev.region.name!r}, which it did not enter")
                self.depth -= 1
                if self.depth == 0:
                    self.end_call(t, self.region.name)
            return
        if kind.startswith("Mpi"):
            if kind in _UNSUPPORTED:
                raise self.error(ev, f"{_UNSUPPORTED[kind]}, which the otf2 app does not replay")
            if kind == "MpiCollectiveBegin":
                return
            if kind in ("MpiProbe", "MpiIprobe"):
                skipped[kind] = skipped.get(kind, 0) + 1
                return
            if self.depth == 0:  # a record outside any MPI region is a call of its own
                self.begin_call(t)
                self.items.append(ev)
                self.end_call(t, "")
            else:
                self.items.append(ev)
            return
        if kind.startswith(_RMA_PREFIX):
            raise self.error(ev, "one-sided MPI (RMA), which the otf2 app does not replay")
        skipped[kind] = skipped.get(kind, 0) + 1

    def begin_call(self, t: int) -> None:
        last = self.last_end if self.last_end is not None else self.first
        if t > last:
            dt = (t - last) / self.res * self.scale
            if dt > 0:
                self.ops.append((COMPUTE, dt))
        self.items = []

    def end_call(self, t: int, name: str) -> None:
        self.last_end = t
        items = self.items
        self.items = []
        if not items:
            return
        ops = self.ops
        kinds = [type(e).__name__ for e in items]
        if kinds == ["MpiSend"]:
            e = items[0]
            ops.append((SEND, self.comm(e, e.communicator, e.receiver), e.receiver, e.msg_length, e.msg_tag))
            return
        if kinds == ["MpiRecv"]:
            e = items[0]
            ops.append((RECV, self.comm(e, e.communicator, e.sender), e.sender, e.msg_tag))
            return
        if sorted(kinds) == ["MpiRecv", "MpiSend"]:
            s, r = (items[0], items[1]) if kinds[0] == "MpiSend" else (items[1], items[0])
            cs = self.comm(s, s.communicator, s.receiver)
            cr = self.comm(r, r.communicator, r.sender)
            if cs == cr:
                ops.append((SENDRECV, cs, s.receiver, s.msg_length, s.msg_tag, r.sender, r.msg_tag))
                return
        wait: list[int] = []
        for e in items:
            k = type(e).__name__
            if k == "MpiSend":
                q = self.new_req()
                ops.append((ISEND, self.comm(e, e.communicator, e.receiver), e.receiver, e.msg_length, e.msg_tag, q))
                wait.append(q)
            elif k == "MpiRecv":
                q = self.new_req()
                ops.append((IRECV, self.comm(e, e.communicator, e.sender), e.sender, e.msg_tag, q))
                wait.append(q)
            elif k == "MpiIsend":
                if e.request_id in self.reqs:
                    raise self.error(e, f"starts request {e.request_id}, which is still pending")
                q = self.reqs[e.request_id] = self.new_req()
                ops.append((ISEND, self.comm(e, e.communicator, e.receiver), e.receiver, e.msg_length, e.msg_tag, q))
            elif k == "MpiIrecvRequest":
                if e.request_id in self.reqs:
                    raise self.error(e, f"starts request {e.request_id}, which is still pending")
                q = self.reqs[e.request_id] = self.new_req()
                self.irecv_at[e.request_id] = len(ops)
                ops.append((IRECV, -1, -1, -1, q))  # source and tag come with its completion
            elif k == "MpiIsendComplete":
                q = self.reqs.pop(e.request_id, None)
                if q is None or e.request_id in self.irecv_at:
                    raise self.error(e, f"completes send request {e.request_id}, which no MpiIsend started")
                wait.append(q)
            elif k == "MpiIrecv":
                q = self.reqs.pop(e.request_id, None)
                at = self.irecv_at.pop(e.request_id, None)
                if q is None or at is None:
                    raise self.error(e, f"completes receive request {e.request_id}, which no MpiIrecvRequest started")
                ops[at] = (IRECV, self.comm(e, e.communicator, e.sender), e.sender, e.msg_tag, q)
                wait.append(q)
            elif k == "MpiRequestTest":
                q = self.reqs.get(e.request_id)
                if q is None:
                    raise self.error(e, f"tests request {e.request_id}, which is not pending")
                ops.append((TEST, q))
            elif k == "MpiCollectiveEnd":
                if wait:
                    ops.append((WAIT, tuple(wait)))
                    wait = []
                self.collective(e, name)
            else:
                raise self.error(e, "an MPI record the otf2 app does not replay")
        if wait:
            ops.append((WAIT, tuple(wait)))

    def new_req(self) -> int:
        q = self.next_req
        self.next_req = q + 1
        return q

    def collective(self, e: Any, region: str) -> None:
        opname = str(e.collective_op).rsplit(".", 1)[-1]
        spec = _COLLS.get(opname)
        if spec is None:
            raise self.error(e, f"collective {opname}, which simhpc has no algorithm for (not replayed)")
        name, rule = spec
        ci = self.comm(e, e.communicator)
        p = len(self.comms[ci])
        if name == "destroy":
            return
        if name == "create":
            if region in _SPLITS:
                self.ops.append((COLL, ci, "allgather", _SPLIT_BYTES, -1))
            self.ops.append((COLL, ci, "allreduce", _CTX_MASK_BYTES, -1))
            return
        root = e.root
        if name in ("bcast", "scatter", "gather", "reduce"):
            if not 0 <= root < p:
                raise self.error(e, f"{opname} has root {root}, not a rank of its communicator (size {p})")
        else:
            root = -1
        sent, recvd = e.size_sent, e.size_received
        if rule is None:
            n = 0
        elif rule == "recv":
            n = recvd if recvd else sent / max(p - 1, 1)  # an in-place root records only what it sends
        elif rule == "sent":
            n = sent if sent else recvd / max(p - 1, 1)
        elif rule == "recv/p":
            n = recvd / p
        else:
            n = sent / p
        if isinstance(n, float) and n.is_integer():
            n = int(n)
        if not (n >= 0 and math.isfinite(n)):
            raise self.error(e, f"{opname} with sizes sent={sent}, received={recvd} gives no valid size")
        self.ops.append((COLL, ci, name, n, root))

    def finish(self) -> list[tuple]:
        if self.depth:
            raise TraceError(f"trace {self.path!r}: location {self.loc.name!r} (rank {self.rank}): ends inside MPI "
                             f"region {self.region.name!r} (no Leave)")
        if self.irecv_at:
            rid = next(iter(self.irecv_at))
            raise TraceError(f"trace {self.path!r}: location {self.loc.name!r} (rank {self.rank}): receive request "
                             f"{rid} (MpiIrecvRequest) never completes (no MpiIrecv)")
        last = self.last_end if self.last_end is not None else self.first
        if last is not None and self.last_time > last:
            self.ops.append((COMPUTE, (self.last_time - last) / self.res * self.scale))
        return self.ops
