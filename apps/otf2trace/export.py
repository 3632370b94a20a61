"""Writing a simulated run's MPI calls as an OTF2 trace: :func:`write_otf2`.

The archive (``DIR/traces.otf2`` with ``DIR/traces.def`` and ``DIR/traces/``) reads in Vampir,
``otf2-print`` and the ``otf2`` app of this package. Its layout:

* system tree: the machine, one node per job (class ``"simhpc job"``, name ``"job J"``), under
  it the compute nodes the job ran on (class ``"node"``, name ``"node N"``), and under each one
  location group (an MPI process) per rank there, named ``"job J rank R"``, holding one
  location (the rank's thread);
* per rank: ``Enter``/``Leave`` of a region named after the app (``main``'s part: from the
  job's launch to the rank's end), and inside it ``Enter``/``Leave`` of every MPI call at its
  simulated times with the call's message records (``MpiSend``, ``MpiIsend``,
  ``MpiIsendComplete``, ``MpiIrecvRequest``, ``MpiRecv``, ``MpiIrecv``, ``MpiRequestTest``,
  ``MpiCollectiveBegin``/``End``), as Score-P writes them;
* communicators: each job's ``MPI_COMM_WORLD`` and every communicator its ranks derived;
* the timer counts picoseconds (timer resolution 10^12 per second) of simulated time.

Collective sizes follow Score-P's convention (bytes a rank sends and receives in a linear
algorithm, e.g. an allreduce of n bytes on P ranks records P*n sent and P*n received), which
the replay inverts (:mod:`apps.otf2trace.trace`).
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import AppConfigError
from .record import COLL, IRECV, IRECV_REQ, ISEND, ISEND_DONE, RECV, SEND, TEST

__all__ = ["TIMER_RESOLUTION", "JOB_CLASS", "check_output", "coll_bytes", "write_otf2"]

#: Ticks per simulated second of the written traces.
TIMER_RESOLUTION = 10 ** 12
#: The class name of a job's system tree node.
JOB_CLASS = "simhpc job"
_UNDEF32 = 0xFFFFFFFF
#: Chunk size of the written archives' event and definition files (OTF2's smallest).
_CHUNK = 256 * 1024

#: simhpc collective -> (OTF2 CollectiveOp name, region role name).
_COLL_OPS = {
    "barrier": ("BARRIER", "BARRIER"), "bcast": ("BCAST", "COLL_ONE2ALL"), "reduce": ("REDUCE", "COLL_ALL2ONE"),
    "allreduce": ("ALLREDUCE", "COLL_ALL2ALL"), "gather": ("GATHER", "COLL_ALL2ONE"),
    "scatter": ("SCATTER", "COLL_ONE2ALL"), "allgather": ("ALLGATHER", "COLL_ALL2ALL"),
    "alltoall": ("ALLTOALL", "COLL_ALL2ALL"), "alltoallv": ("ALLTOALLV", "COLL_ALL2ALL"),
    "reduce_scatter": ("REDUCE_SCATTER_BLOCK", "COLL_ALL2ALL"), "create": ("CREATE_HANDLE", "COLL_OTHER"),
}


def coll_bytes(op: str, size: Any, root: int, me: int, p: int) -> tuple[int, int]:
    """(sent, received) bytes of one rank's collective as Score-P records them."""
    if op in ("barrier", "create"):
        return 0, 0
    if op == "alltoallv":
        return int(size[0]), int(size[1])
    if op == "reduce_scatter":
        if isinstance(size, list):
            return int(sum(size)), int(size[me] * p)
        return int(size * p), int(size * p)
    n = int(size)
    if op in ("allreduce", "allgather", "alltoall"):
        return p * n, p * n
    if op in ("bcast", "scatter"):
        return (p * n, n) if me == root else (0, n)
    if op in ("reduce", "gather"):
        return (n, p * n) if me == root else (n, 0)
    raise ValueError(f"no OTF2 collective for {op!r}")


def check_output(path: str | os.PathLike, key: str = "otf2") -> None:
    """Refuse, before a run, an output the trace cannot be written to: ``path`` exists and is
    not a directory, or the ``otf2`` package is missing."""
    try:
        import otf2  # noqa: F401
    except ImportError:
        raise AppConfigError(f"{key}: writing OTF2 traces needs the otf2 package: pip install 'simhpc[otf2]'") from None
    p = os.fspath(path)
    if not p:
        raise AppConfigError(f"{key}: give the directory to write the trace into")
    if os.path.exists(p) and not os.path.isdir(p):
        raise AppConfigError(f"{key}: {p!r} exists and is not a directory (the trace is a directory of files)")


def _ticks(t: float) -> int:
    return int(round(t * TIMER_RESOLUTION))


def write_otf2(path: str | os.PathLike, recorded: dict[str, Any], *, machine: str = "simhpc") -> dict[str, int]:
    """Write ``recorded`` (:meth:`apps.platform.Platform.recorded`) as an OTF2 archive in the
    directory ``path`` (created; an existing archive there is replaced). Returns counts:
    ``{"jobs", "ranks", "calls", "events"}``."""
    check_output(path)
    import otf2
    from otf2.enums import CollectiveOp, GroupType, LocationGroupType, Paradigm, RegionRole

    path = os.fspath(path)
    os.makedirs(path, exist_ok=True)
    _clear_archive(path)
    ranks = recorded["ranks"]
    jobs = {j["job"]: j for j in recorded["jobs"]}
    n_calls = n_events = 0
    # Small chunks: a reader allocates one chunk per location for its events and one for its
    # (here empty) local definitions; with the defaults (1 and 4 MiB) that dominated reading
    # a trace of many ranks.
    with otf2.writer.open(path, timer_resolution=TIMER_RESOLUTION, chunk_size_events=_CHUNK,
                          chunk_size_definitions=_CHUNK) as trace:
        trace.creator = "simhpc"
        trace.description = f"simulated run on {machine}"
        d = trace.definitions
        root = d.system_tree_node(machine, class_name="machine")
        job_nodes = {j: d.system_tree_node(f"job {j}", class_name=JOB_CLASS, parent=root) for j in sorted(jobs)}
        locs: dict[tuple[int, int], Any] = {}
        hosts: dict[tuple[int, int], Any] = {}
        for r in ranks:
            j, w = r["job"], r["rank"]
            host = hosts.get((j, r["node"]))
            if host is None:
                host = hosts[(j, r["node"])] = d.system_tree_node(f"node {r['node']}", class_name="node",
                                                                  parent=job_nodes[j])
            lg = d.location_group(f"job {j} rank {w}", location_group_type=LocationGroupType.PROCESS,
                                  system_tree_parent=host)
            locs[(j, w)] = d.location(f"job {j} rank {w}", group=lg)
        if not locs:
            return {"jobs": 0, "ranks": 0, "calls": 0, "events": 0}
        d.group("MPI locations", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI,
                members=tuple(locs.values()))
        # Communicators: each job's world, then the others by context id, as the ranks saw them.
        comms: dict[tuple[int, int], Any] = {}
        members_of: dict[tuple[int, int], tuple[str, tuple[int, ...]]] = {}
        for r in ranks:
            for c, (name, group) in r["comms"].items():
                members_of.setdefault((r["job"], c), (name, tuple(group)))
        for j in sorted(jobs):
            members_of.setdefault((j, 0), ("world", tuple(range(jobs[j]["size"]))))
        for (j, c), (name, group) in sorted(members_of.items()):
            present = [locs[(j, w)] for w in group if (j, w) in locs]
            if len(present) != len(group):
                continue  # a rank of it was not recorded (never launched)
            label = "MPI_COMM_WORLD" if c == 0 else name
            g = d.group(f"job {j} {label}", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI,
                        members=tuple(present))
            comms[(j, c)] = d.comm(f"job {j} {label}" if len(jobs) > 1 else label, group=g)
        regions: dict[str, Any] = {}

        def region(name: str, role: Any, paradigm: Any = Paradigm.MPI) -> Any:
            reg = regions.get(name)
            if reg is None:
                reg = regions[name] = d.region(name, paradigm=paradigm, region_role=role)
            return reg

        for r in ranks:
            j, w = r["job"], r["rank"]
            info = jobs[j]
            p_world = info["size"]
            wr = trace.event_writer_from_location(locs[(j, w)])
            main = region(info["app"], RegionRole.FUNCTION, Paradigm.USER)
            wr.enter(_ticks(r["start"]), main)
            n_events += 2
            for name, t0, t1, items in r["calls"]:
                a, b = _ticks(t0), _ticks(t1)
                coll = next((it for it in items if it[0] == COLL), None)
                role = RegionRole.POINT2POINT if coll is None else getattr(RegionRole, _COLL_OPS[coll[1]][1])
                reg = region(name, role)
                wr.enter(a, reg)
                n_events += 2
                n_calls += 1
                late = []
                for it in items:
                    k = it[0]
                    cm = comms.get((j, it[2])) if k in (SEND, RECV, ISEND, IRECV, COLL) else None
                    if k == SEND:
                        wr.mpi_send(a, it[1], cm, it[3], int(it[4]))
                    elif k == ISEND:
                        wr.mpi_isend(a, it[1], cm, it[3], int(it[4]), it[5])
                    elif k == IRECV_REQ:
                        wr.mpi_irecv_request(a, it[1])
                    elif k == RECV:
                        late.append((wr.mpi_recv, (it[1], cm, it[3], int(it[4]))))
                        continue
                    elif k == IRECV:
                        late.append((wr.mpi_irecv, (it[1], cm, it[3], int(it[4]), it[5])))
                        continue
                    elif k == ISEND_DONE:
                        late.append((wr.mpi_isend_complete, (it[1],)))
                        continue
                    elif k == TEST:
                        late.append((wr.mpi_request_test, (it[1],)))
                        continue
                    else:  # COLL
                        group = r["comms"].get(it[2], (None, range(p_world)))[1]
                        me = list(group).index(w)
                        sent, recvd = coll_bytes(it[1], it[4], it[3], me, len(group))
                        opname = _COLL_OPS[it[1]][0]
                        if it[1] == "reduce_scatter" and isinstance(it[4], list):
                            opname = "REDUCE_SCATTER"  # counts per rank
                        wr.mpi_collective_begin(a)
                        late.append((wr.mpi_collective_end,
                                     (getattr(CollectiveOp, opname), cm,
                                      _UNDEF32 if it[3] < 0 else it[3], sent, recvd)))
                    n_events += 1
                for fn, args in late:
                    fn(b, *args)
                    n_events += 1
                wr.leave(b, reg)
            wr.leave(_ticks(r["end"]), main)
    return {"jobs": len(jobs), "ranks": len(locs), "calls": n_calls, "events": n_events}


def _clear_archive(path: str) -> None:
    """Remove an earlier archive's files in ``path`` (the OTF2 library refuses to overwrite)."""
    import shutil

    for name in ("traces.otf2", "traces.def"):
        f = os.path.join(path, name)
        if os.path.isfile(f):
            os.remove(f)
    sub = os.path.join(path, "traces")
    if os.path.isdir(sub):
        shutil.rmtree(sub)
