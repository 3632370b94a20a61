"""The MPI node entity: hosts the ranks of the jobs running on one compute node.

:class:`MpiNode` is the compute-node entity of a :class:`models.network.Network` built with
``node_cls=MpiNode, node_args=(MpiShared(...),)``. Each rank of a job is a greenlet process
on the node entity of its node; its MPI state is an :class:`~apps.mpi.p2p.Endpoint`. Messages
between ranks go through the node's NIC (or its memory channel for ranks on one node).

Job protocol (used by :class:`apps.manager.JobManager`, and meant for the scheduler)
------------------------------------------------------------------------------------

``launch`` service, data: a :class:`LaunchSpec` with

* ``job`` (int id, unique in the run), ``app`` (registered app name), ``args`` (its keyword
  arguments, already checked with :func:`apps.registry.bind_args`),
* ``size`` (world size), ``rank_nodes`` (node of every world rank), ``node_ranks`` (node ->
  its world ranks, ascending),
* ``options`` (:class:`MpiOptions`: eager threshold, control-message bytes, forced
  collective algorithms, the time of an unsuccessful poll),
* ``report_to`` (entity id) and ``report_service`` (service name) for the end report.

It must be sent to every node in ``node_ranks`` at the same time (delay >= lookahead). The node
spawns one process per local rank, at once. A *job-level* app (registered with
``per_rank=False``, e.g. the timekeeper) is launched on the node of rank 0 only: the node calls
the app once to learn its duration and sets one timer; no rank processes exist.

Report: when all local ranks have returned (or the timer fired) the node sends one
:class:`NodeReport` ``(job, node, status="ok", error="", start, end, ranks, bytes_sent,
messages, ...)`` to ``report_to``/``report_service`` with delay ``sim.lookahead``. When a rank
raises, the node reports at once with ``status="failed"``, the error text, the failed rank,
the time and the traceback; its other ranks keep running until the job is killed (the
manager of the job does that).

``kill`` service, data: the job id. Kills the job's local processes (or its timer); later
messages of the job are discarded and counted in :attr:`MpiNode.discarded`. A kill that
arrives before the launch makes the later launch a no-op. A killed node sends no report.
"""

from __future__ import annotations

import math
import os
import traceback
from dataclasses import dataclass, field
from typing import Any, Mapping

from models.network import NetworkNode
from models.node_model import NodeModel
from models.units import UnitError, parse_bytes, parse_time
from pdes.process import blocked_at

from .errors import AppConfigError
from .mpi.comm import Comm
from .mpi.p2p import Endpoint
from .registry import JobContext, get_app

__all__ = ["LaunchSpec", "MpiNode", "MpiOptions", "MpiShared", "NodeReport", "whole_bytes"]

# The MPI layer's own frames, passed over when a deadlock report names the app line a rank
# blocked at.
_MPI_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi")
_MPI_DIRS = (_MPI_DIR, os.path.join(_MPI_DIR, "collectives"))

DEFAULT_EAGER = 65536
DEFAULT_CTRL = 64
DEFAULT_POLL = 1e-7


def whole_bytes(name: str, value: Any, *, error: type[Exception] = AppConfigError) -> int:
    """A whole number of bytes >= 0 from ``'64KiB'`` or a number, for the MPI options.

    ``name`` is the key as the user wrote it (``"scheduler.eager_threshold"``, ``"--eager"``);
    errors name it and are raised as ``error``.
    """
    try:
        b = parse_bytes(value, what=name)
    except UnitError as exc:
        raise error(f"{name}: {str(exc).split(': ', 1)[-1]}") from None
    if not (b >= 0 and float(b).is_integer()):
        raise error(f"{name} must be a whole number of bytes >= 0, got {value!r}")
    return int(b)


@dataclass(frozen=True, kw_only=True)
class MpiOptions:
    """Options of the MPI library of one job.

    Attributes:
        eager_threshold: largest message (bytes) sent eagerly; larger ones use rendezvous.
        ctrl_bytes: size of the rendezvous control messages (RTS, CTS).
        algorithms: forced collective algorithms, ``{"allreduce": "rabenseifner", ...}``.
        poll_time: seconds an unsuccessful ``test`` or ``iprobe`` takes (> 0), so that a loop
            polling for a message lets the simulation progress (MPI's progress rule).
    """

    eager_threshold: int | str = DEFAULT_EAGER
    ctrl_bytes: int | str = DEFAULT_CTRL
    algorithms: Mapping[str, str] = field(default_factory=dict)
    poll_time: float | str = DEFAULT_POLL

    def __post_init__(self) -> None:
        from .mpi.collectives import check_forced

        for name in ("eager_threshold", "ctrl_bytes"):
            object.__setattr__(self, name, whole_bytes(name, getattr(self, name)))
        try:
            t = parse_time(self.poll_time, what="poll_time")
        except UnitError as exc:
            raise AppConfigError(f"poll_time: {str(exc).split(': ', 1)[-1]}") from None
        if not (t > 0 and math.isfinite(t)):
            raise AppConfigError(f"poll_time must be a duration > 0 seconds, got {self.poll_time!r}")
        object.__setattr__(self, "poll_time", float(t))
        object.__setattr__(self, "algorithms", check_forced(self.algorithms))


@dataclass(frozen=True, kw_only=True)
class LaunchSpec:
    """Everything a node needs to start its part of a job (see the module docstring)."""

    job: int
    app: str
    args: Mapping[str, Any]
    size: int
    rank_nodes: tuple[int, ...]
    node_ranks: Mapping[int, tuple[int, ...]]
    report_to: int
    report_service: str = "report"
    options: MpiOptions = field(default_factory=MpiOptions)
    #: Link ids the job's messages must stay on (a link-reserving allocator's reservation,
    #: plus its nodes' injection and ejection links); None: the topology's own routing.
    allowed_links: tuple[int, ...] | None = None

    @classmethod
    def build(cls, *, job: int, app: str, args: Mapping[str, Any] | None, rank_nodes: Any, report_to: int,
              report_service: str = "report", options: MpiOptions | None = None,
              allowed_links: Any = None) -> "LaunchSpec":
        """A spec from the node of every rank (``node_ranks`` and ``size`` are derived)."""
        rn = tuple(int(n) for n in rank_nodes)
        if not rn:
            raise AppConfigError(f"job {job}: a job needs at least one rank")
        node_ranks: dict[int, list[int]] = {}
        for r, n in enumerate(rn):
            node_ranks.setdefault(n, []).append(r)
        return cls(job=int(job), app=app, args=dict(args or {}), size=len(rn), rank_nodes=rn,
                   node_ranks={n: tuple(v) for n, v in node_ranks.items()}, report_to=int(report_to),
                   report_service=report_service, options=options or MpiOptions(),
                   allowed_links=None if allowed_links is None else tuple(int(x) for x in allowed_links))

    @property
    def nodes(self) -> tuple[int, ...]:
        """The nodes that host ranks, in order of their first rank."""
        return tuple(self.node_ranks)

    def launch_nodes(self) -> tuple[int, ...]:
        """The nodes the launch goes to: all rank nodes, or rank 0's node for a job-level app."""
        return self.nodes if get_app(self.app).per_rank else (self.rank_nodes[0],)


@dataclass(frozen=True)
class NodeReport:
    """One node's end-of-job report (see the module docstring)."""

    job: int
    node: int
    status: str
    error: str
    start: float
    end: float
    ranks: int
    bytes_sent: float
    messages: int
    failed_rank: int = -1
    fail_time: float = math.nan
    traceback: str = ""

    @classmethod
    def _make(cls, job: int, node: int, status: str, error: str, start: float, end: float, ranks: int,
              bytes_sent: float, messages: int, failed_rank: int, fail_time: float, traceback: str) -> "NodeReport":
        """The report of these fields, as the constructor makes it but without its
        ``object.__setattr__`` per field of a frozen class: a node reports once per job, and
        a job of 8,192 ranks on as many nodes makes 8,192 reports."""
        rep = _new(cls)
        d = rep.__dict__
        d["job"] = job
        d["node"] = node
        d["status"] = status
        d["error"] = error
        d["start"] = start
        d["end"] = end
        d["ranks"] = ranks
        d["bytes_sent"] = bytes_sent
        d["messages"] = messages
        d["failed_rank"] = failed_rank
        d["fail_time"] = fail_time
        d["traceback"] = traceback
        return rep


_new = object.__new__


class MpiShared:
    """State shared by the MPI nodes of one simulation on one rank: the node model and the
    cache of communicator groups (every member of a split computes the same groups; the
    first one computes them, the others look them up)."""

    def __init__(self, node_model: NodeModel):
        self.node_model = node_model
        self.groups: dict[tuple[int, int], dict[Any, tuple[int, ...]]] = {}
        #: key -> a value the ranks of this process share (:meth:`apps.mpi.Comm.shared_cache`).
        self.cache: dict[Any, Any] = {}
        #: The run's trace recorder (:class:`apps.otf2trace.record.Recorder`), None when the
        #: run records no trace: ranks then run on plain communicators, at no cost.
        self.recorder: Any = None


class NodeJob:
    """The part of one job that runs on one node."""

    __slots__ = (
        "spec", "job", "fn", "args", "rank_nodes", "eager", "ctrl", "poll", "algorithms", "node_model", "ranks_here",
        "eps", "left", "start", "end", "status", "error", "killed", "reported", "delivered",
        "failed_rank", "fail_time", "tb", "timer", "routed", "results", "one_ep",
    )

    def __init__(self, spec: LaunchSpec, node_model: NodeModel, ranks_here: int, now: float):
        self.spec = spec
        self.job = spec.job
        self.fn = None
        self.args = spec.args
        self.rank_nodes = spec.rank_nodes
        self.eager = spec.options.eager_threshold
        self.ctrl = spec.options.ctrl_bytes
        self.poll = spec.options.poll_time
        self.algorithms = spec.options.algorithms
        self.node_model = node_model
        self.ranks_here = ranks_here
        self.eps: dict[int, Endpoint] = {}
        # The endpoint of the job's only rank on this node (None with several): messages for
        # the job here are all for it, found without a lookup.
        self.one_ep: Endpoint | None = None
        self.left = ranks_here
        self.start = now
        self.end = now
        self.status = "running"
        self.error = ""
        self.killed = False
        self.reported = False
        self.delivered = 0
        self.failed_rank = -1
        self.fail_time = math.nan
        self.tb = ""
        self.timer = False
        self.routed = False
        #: World rank -> what the app function returned there (None returns are not kept).
        self.results: dict[int, Any] = {}


class MpiNode(NetworkNode):
    """A compute node that runs MPI ranks (see the module docstring for its services)."""

    def __init__(self, net: Any, shared: MpiShared):
        super().__init__(net)
        self.shared = shared
        self._jobs: dict[int, NodeJob] = {}
        # The job of the last message delivered here (jobs are never removed from _jobs).
        self._last: NodeJob | None = None
        self._early_kills: dict[int, None] = {}
        #: Messages discarded per job (the job was killed, or was never launched here).
        self.discarded: dict[int, int] = {}

    # -- services --------------------------------------------------------------------------------
    def launch(self, spec: LaunchSpec) -> None:
        """Start this node's ranks of a job (or a job-level app's timer)."""
        if spec.job in self._early_kills:
            return
        if spec.job in self._jobs:
            raise AppConfigError(f"job {spec.job} was launched twice on node {self.node}")
        info = get_app(spec.app)
        now = self.sim.now
        if not info.per_rank:
            js = NodeJob(spec, self.shared.node_model, 0, now)
            self._jobs[spec.job] = js
            js.timer = True
            try:
                dur = info.fn(JobContext(job=spec.job, size=spec.size, nodes=spec.nodes, now=now), **spec.args)
                if not (isinstance(dur, (int, float)) and dur >= 0 and math.isfinite(dur)):
                    raise ValueError(f"app {spec.app!r} must return a duration in seconds >= 0, got {dur!r}")
            except Exception as exc:
                self._fail(js, 0, exc)
                return
            self.after(float(dur), self._timer_end, js)
            return
        local = spec.node_ranks.get(self.node, ())
        js = NodeJob(spec, self.shared.node_model, len(local), now)
        js.fn = info.fn
        self._jobs[spec.job] = js
        if spec.allowed_links is not None:
            self.restrict_routes(spec.job, spec.allowed_links)
            js.routed = True
        size = spec.size
        job = spec.job
        recorder = self.shared.recorder
        world_cls = Comm if recorder is None else recorder.world_cls
        for w in local:
            ep = Endpoint(self, js, w)
            ep.world = world_cls(ep, w, size, None, 0, "world")
            if recorder is not None:
                recorder.attach(ep, spec, now)
            js.eps[w] = ep
            ep.proc = self.spawn(self._rank_main, js, ep, name=f"job{job}.rank{w}")
        if len(local) == 1:
            js.one_ep = js.eps[local[0]]

    def kill(self, job: int) -> None:
        """Kill this node's part of ``job``; later messages of the job are discarded."""
        js = self._jobs.get(job)
        if js is None:
            self._early_kills[job] = None
            return
        if js.killed:
            return
        js.killed = True
        if js.status == "running":
            js.status = "killed"
        self._unroute(js)
        for ep in js.eps.values():
            p = ep.proc
            if p is not None and not p.done:
                p.kill()

    # -- network hooks ----------------------------------------------------------------------------
    def on_message(self, src: int, nbytes: int, p: tuple, job: int) -> None:
        self._deliver((src, 0, nbytes, job, p))

    def _deliver(self, msg: tuple) -> None:
        # NetworkNode._deliver and on_message in one call: every message arrives here.
        p = msg[4]
        job = msg[3]
        js = self._last
        if js is None or js.job != job:
            js = self._jobs.get(job)
            if js is None:
                self.discarded[job] = self.discarded.get(job, 0) + 1
                return
            self._last = js
        if js.killed:
            self.discarded[job] = self.discarded.get(job, 0) + 1
            return
        js.delivered += 1
        ep = js.one_ep or js.eps[p[1]]
        k = p[0]
        if k < 2:
            ep.arrive(p)
        elif k == 2:
            ep.on_cts(p)
        else:
            ep.on_data(p)

    def on_sent(self, p: tuple, job: int) -> None:
        js = self._jobs.get(job)
        if js is None or js.killed:
            return
        js.eps[p[4]].on_sent(p)

    # -- ranks ------------------------------------------------------------------------------------
    def _rank_main(self, js: NodeJob, ep: Endpoint) -> None:
        try:
            out = js.fn(ep.world, **js.args)
        except Exception as exc:
            ep.done = True
            ep.end = self.sim.now
            self._fail(js, ep.w, exc)
            return
        if out is not None:
            js.results[ep.w] = out
        ep.done = True
        ep.end = now = self.sim.now
        if now > js.end:
            js.end = now
        js.left -= 1
        if js.left == 0 and js.status == "running":
            js.status = "ok"
            self._report(js)

    def _timer_end(self, js: NodeJob) -> None:
        if js.killed:
            return
        js.end = self.sim.now
        js.status = "ok"
        self._report(js)

    def _fail(self, js: NodeJob, rank: int, exc: BaseException) -> None:
        if js.status != "running":
            return
        js.status = "failed"
        js.failed_rank = rank
        js.fail_time = js.end = self.sim.now
        js.error = f"{type(exc).__name__}: {exc}"
        js.tb = "".join(traceback.format_exception(exc))
        self._report(js)

    def _unroute(self, js: NodeJob) -> None:
        if js.routed:
            js.routed = False
            self.release_routes(js.job)

    def _report(self, js: NodeJob) -> None:
        if js.reported:
            return
        js.reported = True
        self._unroute(js)
        spec = js.spec
        bytes_sent = 0.0
        messages = 0
        for ep in js.eps.values():
            bytes_sent += ep.bytes_sent
            messages += ep.msgs_sent
        rep = NodeReport._make(js.job, self.node, js.status, js.error, js.start, js.end, js.ranks_here, bytes_sent,
                               messages, js.failed_rank, js.fail_time, js.tb)
        self.send(spec.report_to, spec.report_service, rep, self.sim.lookahead)

    # -- after a run --------------------------------------------------------------------------------
    def job_state(self, job: int) -> dict[str, Any] | None:
        """This node's view of ``job`` after a run (picklable): unfinished ranks and what they
        wait for, messages sent and delivered, totals, and what its ranks' app functions
        returned (``results``: world rank -> value, None returns left out)."""
        js = self._jobs.get(job)
        if js is None:
            return None
        unfinished = []
        sent = 0
        notify = 0
        bytes_sent = 0.0
        for w, ep in js.eps.items():
            sent += ep.msgs_sent
            notify += ep.rdv_out
            bytes_sent += ep.bytes_sent
            if not ep.done and not (ep.proc is not None and ep.proc.killed):
                where = blocked_at(ep.proc, depth=1, skip=_MPI_DIRS, with_call=False) if ep.proc is not None else ""
                unfinished.append((w, self.node, ep.blocked_on(), ep.sleeping_until >= 0, where))
        return {
            "node": self.node, "status": js.status, "unfinished": unfinished, "sent": sent, "bytes_sent": bytes_sent,
            "delivered": js.delivered, "notify_pending": notify, "timer_pending": js.timer and js.status == "running",
            "start": js.start, "end": js.end, "discarded": self.discarded.get(job, 0), "results": js.results,
        }
