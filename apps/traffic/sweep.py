"""Offered-load sweeps of the ``traffic`` app: accepted throughput and latency per load.

::

    from apps.traffic.sweep import sweep
    s = sweep("tiny-dragonfly", "uniform", [0.1, 0.3, 0.5], routing="valiant")
    for p in s.points:
        print(p.load, p.accepted, p.latency_mean, p.latency_p99)

One simulation per load, each the ``traffic`` app (:mod:`apps.skeletons.traffic`) on every
node of the machine (an injector and a sink per node), with the same seed, so the loads
differ only in their rates. Throughputs are fractions of the injection bandwidth of the
nodes: ``offered`` is what the injectors created in the measurement window, ``accepted``
what arrived in it; latencies (creation to arrival) are those of the messages created in it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from models.network import NetworkConfig
from models.presets import Machine, get_machine
from models.units import parse_time

from ..errors import AppConfigError
from ..platform import network_config
from ..registry import get_app
from ..run import AppResult, run_app
from .patterns import build_pattern

__all__ = ["TrafficPoint", "TrafficSweep", "check_loads", "sweep", "traffic_point", "with_routing"]

APP = "traffic"


@dataclass(frozen=True, kw_only=True)
class TrafficPoint:
    """One load of a sweep.

    Attributes:
        load: the offered load asked for (fraction of injection bandwidth).
        offered: the load the injectors created in the window (Poisson: close to ``load``;
            below it where a pattern leaves nodes idle, e.g. transpose's diagonal).
        accepted: bytes that arrived in the window / window / sum of injection bandwidths.
        latency_mean, latency_p99: seconds from creation to arrival of the messages created
            in the window (NaN when none was).
        messages: messages created in the window.
        runtime, events, wall_s: the simulation's length, events and wall-clock seconds.
    """

    load: float
    offered: float
    accepted: float
    latency_mean: float
    latency_p99: float
    messages: int
    runtime: float
    events: int
    wall_s: float

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclass(frozen=True, kw_only=True)
class TrafficSweep:
    """A sweep: its settings and one :class:`TrafficPoint` per load, in the order given."""

    machine: str
    pattern: str
    routing: str
    network: str
    nodes: int
    args: dict[str, Any]
    points: tuple[TrafficPoint, ...]
    #: The packet model's buffers: ``"infinite"`` or ``"credit"`` (other models: ``"infinite"``).
    buffers: str = "infinite"

    def to_dict(self) -> dict[str, Any]:
        return {"machine": self.machine, "pattern": self.pattern, "routing": self.routing, "network": self.network,
                "buffers": self.buffers, "nodes": self.nodes, "args": dict(self.args),
                "points": [p.to_dict() for p in self.points]}


def traffic_point(res: AppResult) -> TrafficPoint:
    """The offered and accepted throughput and the latencies of one run of the traffic app
    (from what its ranks returned: :attr:`AppResult.rank_results`)."""
    if res.app != APP:
        raise AppConfigError(f"traffic_point needs a run of the {APP!r} app, got {res.app!r}")
    args = {**{p: d for p, d in get_app(APP).params}, **res.args}
    inj = res.rank_results[0::2]
    sinks = res.rank_results[1::2]
    window = parse_time(args["duration"]) - parse_time(args["warmup"])
    capacity = window * sum(r["inject_bw"] for r in inj)
    lat = np.fromiter((x for r in sinks for x in r["latencies"]), dtype=float)
    return TrafficPoint(
        load=float(args["load"]),
        offered=sum(r["offered_bytes"] for r in inj) / capacity,
        accepted=sum(r["accepted_bytes"] for r in sinks) / capacity,
        latency_mean=float(lat.mean()) if lat.size else math.nan,
        latency_p99=float(np.percentile(lat, 99)) if lat.size else math.nan,
        messages=int(sum(r["messages"] for r in inj)),
        runtime=res.runtime, events=res.events, wall_s=res.wall_s,
    )


def check_loads(loads: Any, key: str = "loads") -> tuple[float, ...]:
    """Offered loads: a non-empty sequence of fractions in (0, 1]."""
    if isinstance(loads, (int, float)) and not isinstance(loads, bool):
        loads = [loads]
    try:
        vals = list(loads)
    except TypeError:
        raise AppConfigError(f"{key} must be a list of fractions of the injection bandwidth in (0, 1], got {loads!r}") from None
    if not vals:
        raise AppConfigError(f"{key} must name at least one load in (0, 1]")
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 < v <= 1.0:
            raise AppConfigError(f"{key}: every load must be a fraction of the injection bandwidth in (0, 1], got {v!r}")
    return tuple(float(v) for v in vals)


def with_routing(machine: Machine, routing: str | None) -> Machine:
    """``machine`` with its topology's routing replaced (None: unchanged)."""
    topo = machine.topology
    if routing is None or routing == topo.routing:
        return machine
    if routing not in topo.ROUTINGS:
        raise AppConfigError(f"routing {routing!r} is not one of the {topo.name} routings of machine "
                             f"{machine.name}: {', '.join(topo.ROUTINGS)}")
    return dataclasses.replace(machine, topology=topo.replace(routing=routing))


def sweep(machine: str | Machine, pattern: str, loads: Sequence[float], *, routing: str | None = None,
          network: str | NetworkConfig = "packet", msg_bytes: Any = 4096, duration: Any = "100us",
          warmup: Any = "20us", seed: int = 0, comm: Any = "auto", shift: int | None = None, hot_nodes: int = 1,
          hot_fraction: float = 0.1) -> TrafficSweep:
    """Run the ``traffic`` app with ``pattern`` at every load of ``loads`` on all nodes of
    ``machine`` (a preset name or a Machine) and return the accepted throughput and latency
    of each (see the module docstring). Bad input (a load outside (0, 1], an unknown
    pattern or routing, a pattern the machine cannot run) raises
    :class:`~apps.errors.AppConfigError` before anything runs."""
    m = machine if isinstance(machine, Machine) else get_machine(machine)
    m = with_routing(m, routing)
    loads = check_loads(loads)
    n = m.n_nodes
    # The pattern on this machine, checked once here so that a pattern the topology cannot
    # run (group-adversarial on a torus, bitcomp on 72 nodes) fails before any simulation.
    build_pattern(pattern, nodes=range(n), topology=m.topology, shift=shift, hot_nodes=hot_nodes,
                  hot_fraction=hot_fraction)
    args = {"pattern": pattern, "msg_bytes": msg_bytes, "duration": duration, "warmup": warmup, "shift": shift,
            "hot_nodes": hot_nodes, "hot_fraction": hot_fraction}
    points = []
    model = None
    config = network_config(network)
    for load in loads:
        res = run_app(m, APP, 2 * n, ranks_per_node=2, placement="contiguous", network=config, seed=seed,
                      comm=comm, hot_links=0, app_args={**args, "load": load})
        model = res.network
        points.append(traffic_point(res))
    buffers = config.buffers if config.model == "packet" else "infinite"
    return TrafficSweep(machine=m.name, pattern=pattern, routing=m.topology.routing, network=str(model), nodes=n,
                        args=args, points=tuple(points), buffers=buffers)
