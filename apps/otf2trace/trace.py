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
* A non-blocking collective (``NonBlockingCollectiveRequest`` ... ``Complete``) runs as the
  blocking collective where it starts (ranks start a communicator's collectives in the same
  order); its overlap with what follows is not replayed.
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
import re
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
    # Reduce-scatter with counts per rank: the whole buffer over P (the same on every rank, so
    # that all choose the same algorithm).
    "REDUCE_SCATTER": ("reduce_scatter", "sent/p"), "REDUCE_SCATTER_BLOCK": ("reduce_scatter", "recv/p"),
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
        comm_index: dict[int, int] = {}
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
            comm_index[_ref(c)] = len(comms)
            comms.append(ws)
            names.append(str(c.name))
        regions = {_ref(r): (r.paradigm == Paradigm.MPI or str(r.name).startswith("MPI_"), str(r.name))
                   for r in defs.regions}
        builders = {_ref(loc): _Rank(i, str(loc.name), res, compute_scale, comm_index, comms, names, regions, p)
                    for i, loc in enumerate(locs)}
        skipped: dict[str, int] = {}
        try:
            n = _read_records(tr, [_ref(loc) for loc in locs], builders, skipped)
        except _NoFastPath:
            n = _read_events(tr, locs, builders, skipped)
    programs = [b.finish() for b in builders.values()]
    return ReplayTrace(path=p, ranks=len(locs), programs=programs, comms=comms, comm_names=names,
                       skipped=skipped, records=n)


def _ref(d: Any) -> int:
    """The id of an OTF2 definition (the bindings keep it as ``_ref``; event records name
    definitions by it)."""
    return d._ref


#: Records read per call of the library (a batch is handed to the ranks' builders).
_BATCH = 65536


class _NoFastPath(Exception):
    """The installed bindings lack what the callback reader uses (their internals changed)."""


def _read_events(tr: Any, locs: list[Any], builders: dict[int, "_Rank"], skipped: dict[str, int]) -> int:
    """:func:`_read_records` through the bindings' event objects (slower; for bindings whose
    internals the callback reader does not know). Each event's fields, in the order of its
    record, become the args; definitions become their ids."""
    n = 0
    for loc, ev in tr.events(locs):
        n += 1
        args = []
        for name, typ, _ in type(ev)._fields[1:]:
            if name == "attributes":
                continue
            v = getattr(ev, re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower())  # msgTag -> msg_tag
            if typ.endswith("Ref"):
                v = _ref(v)
            args.append(v)
        builders[_ref(loc)].record(type(ev).__name__, ev.time, tuple(args), skipped)
    return n


def _read_records(tr: Any, locs: list[int], builders: dict[int, "_Rank"], skipped: dict[str, int]) -> int:
    """Read the events of ``locs`` in time order, handing each record to its location's
    builder as ``(kind, time, args)``; returns how many were read.

    The bindings' own event iterator makes an object per record (its event and attribute
    list); replay needs only the fields, so the library calls plain callbacks that append
    ``(location, kind, time, args)`` to a list: about three times faster.
    """
    import ctypes
    import importlib

    try:
        import _otf2
        from _otf2.Config import conf

        gcb = importlib.import_module("_otf2.GlobalEvtReaderCallbacks")
        prefix = "_GlobalEvtReaderCallback_FP_"
        kinds = [n[len(prefix):] for n in dir(gcb) if n.startswith(prefix)]
        if "Enter" not in kinds or not hasattr(gcb, "GlobalEvtReaderCallbacks") or not hasattr(tr, "handle"):
            raise _NoFastPath()
    except (ImportError, AttributeError):
        raise _NoFastPath() from None

    h = tr.handle
    for loc in locs:
        _otf2.Reader_SelectLocation(h, loc)
    defs_open = True
    try:
        _otf2.Reader_OpenDefFiles(h)
    except _otf2.Error:
        defs_open = False  # a trace without local definitions
    try:
        _otf2.Reader_OpenEvtFiles(h)
    except _otf2.Error:
        pass
    for loc in locs:
        if defs_open:
            dr = _otf2.Reader_GetDefReader(h, loc)
            if dr:
                _otf2.Reader_ReadAllLocalDefinitions(h, dr)
                _otf2.Reader_CloseDefReader(h, dr)
        _otf2.Reader_GetEvtReader(h, loc)
    if defs_open:
        _otf2.Reader_CloseDefFiles(h)
    greader = _otf2.Reader_GetGlobalEvtReader(h)
    buf: list[tuple] = []
    app = buf.append
    keep = []  # the callbacks must outlive the reading

    def make(kind: str) -> Any:
        def cb(loc: int, time: int, _ud: Any, _al: Any, *args: Any) -> int:
            app((loc, kind, time, args))
            return 0
        return cb

    cbs = _otf2.GlobalEvtReaderCallbacks_New()
    try:
        for kind in kinds:
            name = prefix + kind
            setter = getattr(conf.lib, f"OTF2_GlobalEvtReaderCallbacks_Set{kind}Callback", None)
            if setter is None:
                continue
            fp_type = getattr(gcb, name)
            setter.argtypes = [ctypes.POINTER(gcb.GlobalEvtReaderCallbacks), fp_type]
            fp = fp_type(make(kind))
            keep.append(fp)
            setter(cbs, fp)
        _otf2.GlobalEvtReader_SetCallbacks(greader, cbs, None)
    finally:
        _otf2.GlobalEvtReaderCallbacks_Delete(cbs)
    n = 0
    try:
        while True:
            got = _otf2.GlobalEvtReader_ReadEvents(greader, _BATCH)
            n += len(buf)
            for loc, kind, time, args in buf:
                builders[loc].record(kind, time, args, skipped)
            buf.clear()
            if got < _BATCH:
                break
    finally:
        _otf2.Reader_CloseGlobalEvtReader(h, greader)
        _otf2.Reader_CloseEvtFiles(h)
    return n


class _Rank:
    """Turns one location's records ``(kind, time, args)`` into its program."""

    def __init__(self, rank: int, name: str, res: float, scale: float, comm_index: dict[int, int],
                 comms: list[tuple[int, ...]], names: list[str], regions: dict[int, tuple[bool, str]], path: str):
        self.rank = rank
        self.names = names
        self.name = name
        self.res = res
        self.scale = scale
        self.comm_index = comm_index
        self.comms = comms
        self.regions = regions
        self.path = path
        self.ops: list[tuple] = []
        self.first: int | None = None
        self.last_end: int | None = None  # the end of the last MPI call (ticks)
        self.last_time = 0
        self.depth = 0  # MPI regions open
        self.region = ""  # the outermost open MPI region
        self.items: list[tuple] = []  # the open call's records
        self.reqs: dict[int, int] = {}  # trace request id -> our request number
        self.irecv_at: dict[int, int] = {}  # trace request id of a posted receive -> its op index
        self.nbc_at: dict[int, int] = {}  # trace request id of a non-blocking collective -> its op index
        self.next_req = 0

    # -- errors --------------------------------------------------------------------------------
    def error(self, kind: str, time: int, what: str) -> TraceError:
        return TraceError(f"trace {self.path!r}: location {self.name!r} (rank {self.rank}): record "
                          f"{kind} at t={time / self.res:.9g} s: {what}")

    def comm(self, e: tuple, c: int, peer: int | None = None) -> int:
        i = self.comm_index.get(c)
        if i is None:
            raise self.error(e[0], e[1], f"communicator #{c} is not a communicator of this job's ranks")
        if peer is not None and not 0 <= peer < len(self.comms[i]):
            raise self.error(e[0], e[1], f"rank {peer} is not a rank of communicator {self.comm_name(i)!r} "
                                         f"(size {len(self.comms[i])})")
        return i

    def comm_name(self, i: int) -> str:
        return self.names[i]

    # -- records -------------------------------------------------------------------------------
    def record(self, kind: str, t: int, args: tuple, skipped: dict[str, int]) -> None:
        if self.first is None:
            self.first = t
        if t > self.last_time:
            self.last_time = t
        if kind == "Enter" or kind == "Leave":
            is_mpi, name = self.regions.get(args[0], (False, ""))
            if not is_mpi:
                return
            if kind == "Enter":
                if self.depth == 0:
                    self.begin_call(t)
                    self.region = name
                self.depth += 1
                return
            if self.depth == 0:
                raise self.error(kind, t, f"leaves MPI region {name!r}, which it did not enter")
            self.depth -= 1
            if self.depth == 0:
                self.end_call(t, self.region)
            return
        if kind.startswith("Mpi") or kind.startswith("NonBlockingCollective"):
            if kind in _UNSUPPORTED:
                raise self.error(kind, t, f"{_UNSUPPORTED[kind]}, which the otf2 app does not replay")
            if kind == "MpiCollectiveBegin":
                return
            if kind == "MpiProbe" or kind == "MpiIprobe":
                skipped[kind] = skipped.get(kind, 0) + 1
                return
            if self.depth == 0:  # a record outside any MPI region is a call of its own
                self.begin_call(t)
                self.items.append((kind, t, args))
                self.end_call(t, "")
            else:
                self.items.append((kind, t, args))
            return
        if kind.startswith(_RMA_PREFIX):
            raise self.error(kind, t, "one-sided MPI (RMA), which the otf2 app does not replay")
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
        comm = self.comm
        if len(items) <= 2:
            kinds = [e[0] for e in items]
            if kinds == ["MpiSend"]:
                e = items[0]
                a = e[2]
                ops.append((SEND, comm(e, a[1], a[0]), a[0], a[3], a[2]))
                return
            if kinds == ["MpiRecv"]:
                e = items[0]
                a = e[2]
                ops.append((RECV, comm(e, a[1], a[0]), a[0], a[2]))
                return
            if sorted(kinds) == ["MpiRecv", "MpiSend"]:
                s, r = (items[0], items[1]) if kinds[0] == "MpiSend" else (items[1], items[0])
                sa, ra = s[2], r[2]
                cs = comm(s, sa[1], sa[0])
                cr = comm(r, ra[1], ra[0])
                if cs == cr:
                    ops.append((SENDRECV, cs, sa[0], sa[3], sa[2], ra[0], ra[2]))
                    return
        wait: list[int] = []
        reqs = self.reqs
        for e in items:
            k, a = e[0], e[2]
            if k == "MpiIsend":
                if a[4] in reqs:
                    raise self.error(k, e[1], f"starts request {a[4]}, which is still pending")
                q = reqs[a[4]] = self.new_req()
                ops.append((ISEND, comm(e, a[1], a[0]), a[0], a[3], a[2], q))
            elif k == "MpiIrecvRequest":
                if a[0] in reqs:
                    raise self.error(k, e[1], f"starts request {a[0]}, which is still pending")
                q = reqs[a[0]] = self.new_req()
                self.irecv_at[a[0]] = len(ops)
                ops.append((IRECV, -1, -1, -1, q))  # source and tag come with its completion
            elif k == "MpiIsendComplete":
                q = reqs.pop(a[0], None)
                if q is None or a[0] in self.irecv_at:
                    raise self.error(k, e[1], f"completes send request {a[0]}, which no MpiIsend started")
                wait.append(q)
            elif k == "MpiIrecv":
                q = reqs.pop(a[4], None)
                at = self.irecv_at.pop(a[4], None)
                if q is None or at is None:
                    raise self.error(k, e[1], f"completes receive request {a[4]}, which no MpiIrecvRequest started")
                ops[at] = (IRECV, comm(e, a[1], a[0]), a[0], a[2], q)
                wait.append(q)
            elif k == "MpiSend":
                q = self.new_req()
                ops.append((ISEND, comm(e, a[1], a[0]), a[0], a[3], a[2], q))
                wait.append(q)
            elif k == "MpiRecv":
                q = self.new_req()
                ops.append((IRECV, comm(e, a[1], a[0]), a[0], a[2], q))
                wait.append(q)
            elif k == "MpiRequestTest":
                q = reqs.get(a[0])
                if q is None:
                    raise self.error(k, e[1], f"tests request {a[0]}, which is not pending")
                ops.append((TEST, q))
            elif k == "MpiCollectiveEnd":
                if wait:
                    ops.append((WAIT, tuple(wait)))
                    wait = []
                ops.extend(self.collective(e, name))
            elif k == "NonBlockingCollectiveRequest":
                if a[0] in self.nbc_at:
                    raise self.error(k, e[1], f"starts request {a[0]}, which is still pending")
                self.nbc_at[a[0]] = len(ops)
                ops.append((COMPUTE, 0.0))  # the collective, once its completion names it
            elif k == "NonBlockingCollectiveComplete":
                at = self.nbc_at.pop(a[5], None)
                if at is None:
                    raise self.error(k, e[1], f"completes collective request {a[5]}, which no "
                                              "NonBlockingCollectiveRequest started")
                # Run where it started: every rank starts a communicator's collectives in the same
                # order (MPI's rule), while they may complete them in different orders.
                new = self.collective((k, e[1], a[:5]), "")
                if len(new) > 1:
                    raise self.error(k, e[1], "a non-blocking creation of a communicator, which the otf2 app "
                                              "does not replay")
                if new:
                    ops[at] = new[0]
            else:
                raise self.error(k, e[1], "an MPI record the otf2 app does not replay")
        if wait:
            ops.append((WAIT, tuple(wait)))

    def new_req(self) -> int:
        q = self.next_req
        self.next_req = q + 1
        return q

    def collective(self, e: tuple, region: str) -> list[tuple]:
        """The ops of the collective record ``e`` (in the MPI call ``region``)."""
        op, c, root, sent, recvd = e[2]
        opname = str(getattr(op, "name", "") or op).rsplit(".", 1)[-1]
        spec = _COLLS.get(opname)
        if spec is None:
            raise self.error(e[0], e[1], f"collective {opname}, which simhpc has no algorithm for (not replayed)")
        name, rule = spec
        ci = self.comm(e, c)
        p = len(self.comms[ci])
        if name == "destroy":
            return []
        if name == "create":
            out = [(COLL, ci, "allgather", _SPLIT_BYTES, -1)] if region in _SPLITS else []
            return out + [(COLL, ci, "allreduce", _CTX_MASK_BYTES, -1)]
        if name in ("bcast", "scatter", "gather", "reduce"):
            if not 0 <= root < p:
                raise self.error(e[0], e[1], f"{opname} has root {root}, not a rank of its communicator (size {p})")
        else:
            root = -1
        if rule is None:
            n: Any = 0
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
        return [(COLL, ci, name, n, root)]

    def finish(self) -> list[tuple]:
        where = f"trace {self.path!r}: location {self.name!r} (rank {self.rank})"
        if self.depth:
            raise TraceError(f"{where}: ends inside MPI region {self.region!r} (no Leave)")
        if self.irecv_at:
            rid = next(iter(self.irecv_at))
            raise TraceError(f"{where}: receive request {rid} (MpiIrecvRequest) never completes (no MpiIrecv)")
        if self.nbc_at:
            rid = next(iter(self.nbc_at))
            raise TraceError(f"{where}: collective request {rid} (NonBlockingCollectiveRequest) never completes")
        last = self.last_end if self.last_end is not None else self.first
        if last is not None and self.last_time > last:
            self.ops.append((COMPUTE, (self.last_time - last) / self.res * self.scale))
        return self.ops
