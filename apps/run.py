"""Run one app alone on a machine and predict its runtime: :func:`run_app`.

::

    from apps import run_app
    res = run_app("cielo", "allreduce", 1024, ranks_per_node=1, placement="random",
                  iters=10, nbytes=1024)
    print(res.runtime, res.bytes_sent, res.hot_links[:3])

The same call gives identical results sequentially and under ``mpirun -n P`` (every rank
returns the same :class:`AppResult`). An app that raises makes :func:`run_app` raise
:class:`~apps.errors.AppError`; ranks blocked forever raise
:class:`~apps.errors.DeadlockError` listing each blocked rank and what it waits for; a run
cut by ``end_time`` raises :class:`~apps.errors.AppTimeoutError`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from models.network import NetworkConfig, NetworkStats
from models.presets import Machine, get_machine
from pdes import RunStats, Simulator
from pdes.validate import check_int

from .errors import AppConfigError, AppError, AppTimeoutError, DeadlockError
from .manager import JobRecord
from .mapping import MappingSpec, job_rank_nodes, map_ranks, oversubscription
from .mpi.comm import derive_seed
from .node import DEFAULT_CTRL, DEFAULT_EAGER, DEFAULT_POLL, LaunchSpec, MpiOptions
from .platform import build_platform, network_config
from .registry import bind_args

__all__ = ["AppResult", "PLACEMENTS", "blocked_rank_lines", "choose_nodes", "run_app"]

PLACEMENTS = ("contiguous", "random")
JOB_ID = 0
#: Unfinished ranks listed in a DeadlockError message (the exception keeps them all).
_LIST_MAX = 20


@dataclass
class AppResult:
    """The outcome of :func:`run_app` (identical on every parallel rank).

    ``runtime`` is the last rank's end minus the first rank's start. ``bytes_sent`` counts
    every byte the job's MPI layer sent (data and rendezvous control messages, intra-node
    copies included); ``network_bytes`` and ``hop_bytes`` count what crossed the network.
    ``hot_links`` are the busiest network links (NIC links left out); their utilization, like
    ``net.link_utilization``, is busy time over the app's runtime (``None`` on the ideal
    network, which has no contention). ``rank_results[r]`` is what the app function returned
    on world rank ``r`` (None when it returned nothing): an app reports per-rank figures by
    returning them (picklable values, since under ``mpirun`` they cross processes).
    """

    app: str
    args: dict[str, Any]
    machine: str
    network: str
    ranks: int
    ranks_per_node: int
    nodes: tuple[int, ...]
    rank_nodes: tuple[int, ...]
    start: float
    end: float
    runtime: float
    bytes_sent: float
    messages: int
    network_bytes: float
    hop_bytes: float
    intra_node_messages: int
    hot_links: list[dict[str, Any]]
    events: int
    wall_s: float
    sim_ranks: int
    net: NetworkStats = field(repr=False)
    stats: RunStats = field(repr=False)
    rank_results: tuple[Any, ...] = field(default=(), repr=False)
    #: What the run's OTF2 trace holds when it wrote one (``otf2=DIR``): counts of jobs,
    #: ranks, calls and events, and its ``path``; None otherwise.
    otf2: dict[str, Any] | None = None

    @property
    def events_per_s(self) -> float:
        return self.events / self.wall_s if self.wall_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The figures as plain JSON-able values (no per-rank node list when large)."""
        return {
            "app": self.app, "args": {k: plain_data(v) for k, v in self.args.items()}, "machine": self.machine,
            "network": self.network, "ranks": self.ranks, "ranks_per_node": self.ranks_per_node,
            "nodes": len(self.nodes), "start": self.start, "end": self.end, "runtime": self.runtime,
            "bytes_sent": self.bytes_sent, "messages": self.messages, "network_bytes": self.network_bytes,
            "hop_bytes": self.hop_bytes, "intra_node_messages": self.intra_node_messages,
            "max_queue_delay": self.net.max_queue_delay, "hot_links": self.hot_links, "events": self.events,
            "wall_s": self.wall_s, "events_per_s": self.events_per_s, "sim_ranks": self.sim_ranks,
            **({"otf2": self.otf2} if self.otf2 is not None else {}),
        }


def plain_data(v: Any) -> Any:
    """``v`` as plain JSON/HDF5-ready data: numpy scalars become Python numbers, tuples lists,
    mappings dicts with string keys, anything else its repr."""
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [plain_data(x) for x in v]
    if isinstance(v, Mapping):
        return {str(k): plain_data(x) for k, x in v.items()}
    return repr(v)


def choose_nodes(machine: Machine, n: int, placement: str | Sequence[int], seed: int = 0) -> tuple[int, ...]:
    """The job's nodes: ``"contiguous"`` (nodes 0..n-1 in the topology's order),
    ``"random"`` (n distinct nodes drawn from the run seed, in increasing order) or an
    explicit sequence of distinct node ids (used as given)."""
    total = machine.n_nodes
    if isinstance(placement, str):
        if n > total:
            raise AppConfigError(f"the job needs {n} nodes; machine {machine.name} has {total}")
        if placement == "contiguous":
            return tuple(range(n))
        if placement == "random":
            rng = np.random.Generator(np.random.PCG64(derive_seed(seed, "placement") % (1 << 128)))
            return tuple(int(x) for x in np.sort(rng.choice(total, size=n, replace=False)))
        raise AppConfigError(f"unknown placement {placement!r}; valid: {', '.join(PLACEMENTS)} or a list of node ids")
    nodes = [int(x) for x in np.asarray(placement).reshape(-1)]
    if len(set(nodes)) != len(nodes):
        raise AppConfigError("placement: the node list has duplicates")
    bad = [x for x in nodes if not 0 <= x < total]
    if bad:
        raise AppConfigError(f"placement: node {bad[0]} does not exist; machine {machine.name} has nodes 0..{total - 1}")
    if len(nodes) < n:
        raise AppConfigError(f"placement lists {len(nodes)} nodes; the job needs at least {n}")
    return tuple(nodes)


def run_app(
    machine: str | Machine,
    app: str,
    ranks: int,
    *,
    placement: str | Sequence[int] = "contiguous",
    network: str | NetworkConfig = "packet",
    ranks_per_node: int | None = None,
    mapping: MappingSpec = "block",
    seed: int = 0,
    comm: Any = "auto",
    end_time: float = math.inf,
    eager_threshold: int | str = DEFAULT_EAGER,
    ctrl_bytes: int | str = DEFAULT_CTRL,
    algorithms: Mapping[str, str] | None = None,
    poll_time: float | str = DEFAULT_POLL,
    hot_links: int = 10,
    app_args: Mapping[str, Any] | None = None,
    job_id: int = JOB_ID,
    allowed_links: Any = None,
    predict_ranks: tuple[int, ...] = (),
    otf2: str | os.PathLike | None = None,
    **kwargs: Any,
) -> AppResult:
    """Run app ``app`` with ``ranks`` ranks alone on ``machine`` (a preset name or a
    :class:`~models.presets.Machine`) and return its predicted runtime and traffic.

    Args:
        placement: ``"contiguous"``, ``"random"`` or a list of node ids (see
            :func:`choose_nodes`); the job gets ceil(ranks / ranks_per_node) nodes.
        network: ``"packet"``, ``"ideal"`` or a :class:`~models.network.NetworkConfig`.
        ranks_per_node: ranks per node (default: the machine's cores per node).
        mapping: rank-to-node mapping (see :mod:`apps.mapping`).
        seed: the run seed (placement, per-rank and per-job random streams, routing).
        comm: ``"auto"`` (MPI world under mpirun), ``None`` (sequential) or an mpi4py comm.
        end_time: simulated time limit (default: none).
        eager_threshold, ctrl_bytes, algorithms, poll_time: MPI options (see
            :class:`apps.node.MpiOptions`).
        hot_links: how many of the busiest links to report.
        app_args, **kwargs: the app's keyword arguments.
        job_id: the job id the ranks run under (their random streams derive from it), so a
            job of a scheduled run can be repeated alone with the same draws.
        allowed_links: link ids the job's messages must stay on (a link-reserving
            allocator's reservation); None: the topology's routing.
        predict_ranks: rank counts whose parallel figures the run measures on one rank
            (the kernel's statistics mode, :mod:`pdes.predict`; in ``result.stats.predicted``).
        otf2: a directory to write an OTF2 trace of the simulated run into (every MPI call
            of every rank at its simulated times; :mod:`apps.otf2trace.export`).
    """
    m = machine if isinstance(machine, Machine) else get_machine(machine)
    if otf2 is not None:
        from .otf2trace.export import check_output

        check_output(otf2)
    ranks = check_int("ranks", ranks, lo=1, error=AppConfigError)
    args = bind_args(app, {**dict(app_args or {}), **kwargs}, size=ranks)
    options = MpiOptions(eager_threshold=eager_threshold, ctrl_bytes=ctrl_bytes, algorithms=dict(algorithms or {}),
                         poll_time=poll_time)
    config = network_config(network)
    rpn = m.cores_per_node if ranks_per_node is None else ranks_per_node
    rpn = check_int("ranks_per_node", rpn, lo=1, error=AppConfigError)
    oversubscription(rpn, m.cores_per_node)
    nodes = choose_nodes(m, -(-ranks // rpn), placement, seed)
    topo = m.topology
    if isinstance(mapping, str):
        # A named mapping sees the topology and, for grid-aware ones, the app's process grid
        # (as a job of an experiment does).
        rank_nodes = job_rank_nodes(app, args, ranks, nodes, rpn, mapping, topo)
    else:
        rank_nodes = map_ranks(ranks, nodes, rpn, mapping)

    plat = build_platform(m, config, seed=seed, end_time=end_time, comm=comm, predict_ranks=predict_ranks,
                          record=otf2 is not None)
    sim = plat.sim
    spec = LaunchSpec.build(job=job_id, app=app, args=args, rank_nodes=rank_nodes,
                            report_to=plat.manager_eid, options=options, allowed_links=allowed_links)
    plat.launch(spec)
    st = sim.run()
    netstats = plat.net.stats()
    rec = plat.shared_record(job_id)
    states = plat.job_states(job_id)
    _raise_failures(rec, states, sim, end_time)
    written = _write_trace(plat, otf2, m.name) if otf2 is not None else None
    # Utilization is busy time over the app's runtime (every link carries the job's traffic
    # only within it); the same figure on every parallel rank.
    netstats.duration = rec.runtime
    jb = netstats.job_bytes.get(job_id, 0.0)
    results: list[Any] = [None] * ranks
    for s in states:
        for w, v in s["results"].items():
            results[w] = v
    return AppResult(
        app=app, args=args, machine=m.name, network=config.model, ranks=ranks, ranks_per_node=rpn, nodes=nodes,
        rank_nodes=rank_nodes, start=rec.start, end=rec.end, runtime=rec.runtime, bytes_sent=rec.bytes_sent,
        messages=rec.messages, network_bytes=jb, hop_bytes=netstats.job_hop_bytes.get(job_id, 0.0),
        intra_node_messages=netstats.intra_node_messages, hot_links=_hot_links(netstats, topo, hot_links),
        events=st.events, wall_s=st.wall_s, sim_ranks=st.ranks, net=netstats, stats=st,
        rank_results=tuple(results), otf2=written,
    )


def _write_trace(plat: Any, path: str | os.PathLike, machine: str) -> dict[str, Any]:
    """Write the run's recorded MPI calls to ``path`` (on rank 0); the counts, on every rank."""
    from .otf2trace.export import write_otf2

    recorded = plat.recorded()
    sim = plat.sim
    out = None
    if recorded is not None:
        out = {**write_otf2(path, recorded, machine=machine), "path": os.fspath(path)}
    if sim.comm is not None and sim.size > 1:
        out = sim.comm.bcast(out, root=0)
    return out


def _hot_links(netstats: NetworkStats, topo: Any, k: int) -> list[dict[str, Any]]:
    """The k busiest network links, with their endpoints and kind named."""
    from models.topology.base import KIND_NAMES

    n = topo.n_nodes
    out = netstats.hot_links(topo, k)
    for h in out:
        h["from"] = f"node {h['src']}" if h["src"] < n else f"router {h['src'] - n}"
        h["to"] = f"node {h['dst']}" if h["dst"] < n else f"router {h['dst'] - n}"
        h["kind"] = KIND_NAMES[int(topo.link_kind[h["link"]])]
    return out


def blocked_rank_lines(states: list[dict[str, Any]], *, indent: str = "", limit: int = _LIST_MAX) -> list[str]:
    """The unfinished ranks of a job after a run, one line each (the first ``limit``, then a
    count): ``rank R on node N: <the MPI call it waits in> at <the app's line>``.

    ``states`` are the job's node states (:meth:`apps.platform.Platform.job_states`). The
    same lines serve ``run_app``'s :class:`DeadlockError` and an experiment's report of jobs
    that never ended.
    """
    unfinished = sorted((u for s in states for u in s["unfinished"]), key=lambda u: u[0])
    # Each rank's line of app code it blocked at, when known.
    lines = [f"{indent}rank {u[0]} on node {u[1]}: {u[2]}" + (f" at {u[4]}" if u[4] else "")
             for u in unfinished[:limit]]
    if len(unfinished) > limit:
        lines.append(f"{indent}... and {len(unfinished) - limit} more")
    return lines


def _raise_failures(rec: JobRecord, states: list[dict[str, Any]], sim: Simulator, end_time: float) -> None:
    if rec.status == "ok":
        return
    if rec.status == "failed":
        raise AppError(
            f"job {rec.job} (app {rec.app!r}) failed: rank {rec.failed_rank} raised at t={rec.fail_time!r} s: "
            f"{rec.error}\n{rec.traceback}",
            job=rec.job, rank=rec.failed_rank, time=rec.fail_time, error=rec.error, traceback=rec.traceback,
        )
    unfinished = sorted((u for s in states for u in s["unfinished"]), key=lambda u: u[0])
    in_flight = sum(s["sent"] + s["notify_pending"] - s["delivered"] for s in states)
    busy = any(u[3] for u in unfinished) or any(s["timer_pending"] for s in states)
    blocked_all = all(not u[3] and u[2] != "running" for u in unfinished)
    now = sim.stats.end_time
    if math.isfinite(end_time) and (busy or in_flight > 0 or not blocked_all or not unfinished):
        n = len(unfinished) if unfinished else rec.size
        raise AppTimeoutError(
            f"job {rec.job} (app {rec.app!r}) had not finished at end_time={end_time!r} s: {n} ranks still working "
            f"({in_flight} messages in flight)",
            job=rec.job, unfinished=n, time=now,
        )
    blocked = [(u[0], u[1], u[2]) for u in unfinished]
    lines = blocked_rank_lines(states, indent="  ")
    raise DeadlockError(
        f"deadlock in job {rec.job} (app {rec.app!r}): {len(blocked)} of {rec.size} ranks blocked forever "
        f"(the run ended at t={now!r} s with nothing left to happen):\n" + "\n".join(lines),
        job=rec.job, blocked=blocked, time=now,
    )
