"""The simulated machine that runs jobs: :func:`build_platform` and :class:`Platform`.

Every run of MPI jobs (one app alone, a scheduled experiment, an interference study) builds
its machine here, in one order: the simulator (lookahead from the topology), the network
with an :class:`~apps.node.MpiNode` per compute node, then the job manager (rank 0)::

    from apps.platform import build_platform
    p = build_platform("cielo", "packet", seed=1)
    p.launch(LaunchSpec.build(job=0, app="ring", args=..., rank_nodes=..., report_to=p.manager_eid))
    p.sim.run()
    rec = p.shared_record(0)

Entity ids follow from that order (they key events and random streams), so every caller
gets the same ids for the same machine; callers add their own entities after it.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from models.network import Network, NetworkConfig, network_lookahead
from models.node_model import NodeModel
from models.presets import Machine, get_machine
from models.topology.base import Topology
from pdes import Simulator

from .errors import AppConfigError
from .manager import JobManager, JobRecord
from .node import LaunchSpec, MpiNode, MpiShared

__all__ = ["MANAGER", "Platform", "build_platform", "network_config"]

#: Entity type name of the job manager.
MANAGER = "job_manager"


def network_config(network: str | NetworkConfig) -> NetworkConfig:
    """A :class:`~models.network.NetworkConfig` from a model name (``"packet"``, ``"flow"``,
    ``"ideal"``) or the config itself."""
    if isinstance(network, NetworkConfig):
        return network
    if isinstance(network, str):
        return NetworkConfig(model=network)
    raise AppConfigError(f"network must be a model name ('packet', 'flow', 'ideal') or a NetworkConfig, got {network!r}")


class Platform:
    """A machine built in a simulator: network, MPI nodes and the job manager.

    Attributes:
        machine: the :class:`~models.presets.Machine`.
        config: the network's :class:`~models.network.NetworkConfig`.
        sim: the :class:`~pdes.Simulator` (not run yet).
        net: the :class:`~models.network.Network` (MPI nodes are its node entities).
        manager: the :class:`~apps.manager.JobManager` on the rank that owns it, else None.
        manager_eid: the manager's entity id (the same on every rank).
    """

    __slots__ = ("machine", "config", "sim", "net", "manager", "manager_eid", "recorder")

    def __init__(self, *, machine: Machine, config: NetworkConfig, sim: Simulator, net: Network,
                 manager: JobManager | None):
        self.machine = machine
        self.config = config
        self.sim = sim
        self.net = net
        self.manager = manager
        self.manager_eid = sim.eid(MANAGER)
        #: The MPI call recorder when built with ``record=True``, else None.
        self.recorder: Any = None

    @property
    def topology(self) -> Topology:
        """The machine's topology."""
        return self.machine.topology

    def launch(self, spec: LaunchSpec, delay: float = 0.0) -> JobRecord | None:
        """Launch ``spec`` through the manager after ``delay`` seconds (set-up or inside an
        event); a no-op returning None on ranks without the manager."""
        mgr = self.manager
        if mgr is None:
            return None
        return mgr.launch_at(delay, spec)

    def shared_record(self, job_id: int) -> JobRecord:
        """The manager's record of ``job_id`` once the run has ended, on every rank."""
        sim = self.sim
        rec = self.manager.records[job_id] if self.manager is not None else None
        if sim.comm is not None and sim.size > 1:
            rec = sim.comm.bcast(rec, root=sim.rank_of(self.manager_eid))
        assert rec is not None
        return rec

    def recorded(self) -> dict[str, Any] | None:
        """The MPI calls the run logged (built with ``record=True``; else None), from all
        ranks, on rank 0 (None elsewhere): ``{"jobs": [...], "ranks": [...]}`` as
        :meth:`apps.otf2trace.record.Recorder.collect` gives them, ranks in (job, rank) order."""
        rec = self.recorder
        if rec is None:
            return None
        sim = self.sim
        mine = rec.collect()
        if sim.comm is not None and sim.size > 1:
            parts = sim.comm.gather(mine, root=0)
            if sim.rank != 0:
                return None
        else:
            parts = [mine]
        jobs = {j["job"]: j for p in parts for j in p["jobs"]}
        ranks = sorted((r for p in parts for r in p["ranks"]), key=lambda r: (r["job"], r["rank"]))
        return {"jobs": [jobs[k] for k in sorted(jobs)], "ranks": ranks}

    def job_states(self, job_id: int) -> list[dict[str, Any]]:
        """Every node's state of ``job_id`` (see :meth:`apps.node.MpiNode.job_state`), from
        all ranks, on every rank."""
        sim = self.sim
        mine = []
        for n in self.net.nodes:
            s = n.job_state(job_id)
            if s is not None:
                mine.append(s)
        if sim.comm is not None and sim.size > 1:
            return [s for part in sim.comm.allgather(mine) for s in part]
        return mine


def build_platform(
    machine: str | Machine,
    network: str | NetworkConfig,
    *,
    seed: int = 0,
    end_time: float = math.inf,
    comm: Any = "auto",
    on_end: Callable[[JobRecord], Any] | None = None,
    predict_ranks: tuple[int, ...] = (),
    record: bool = False,
) -> Platform:
    """Build ``machine`` (a preset name or a Machine) with ``network`` in a new simulator.

    ``seed``, ``end_time`` and ``comm`` go to the :class:`~pdes.Simulator` (``comm``:
    ``"auto"``, None for sequential, or an mpi4py communicator); ``on_end`` is the
    manager's job-end callback (see :class:`~apps.manager.JobManager`); ``predict_ranks``
    turns on the kernel's statistics mode (:mod:`pdes.predict`); ``record`` logs every MPI
    call of the jobs' ranks for an OTF2 trace (:meth:`Platform.recorded`).
    """
    m = machine if isinstance(machine, Machine) else get_machine(machine)
    config = network_config(network)
    topo = m.topology
    sim = Simulator(end_time=end_time, lookahead=network_lookahead(topo), seed=seed, comm=comm,
                    predict_ranks=predict_ranks)
    shared = MpiShared(NodeModel.from_machine(m))
    if record:
        from .otf2trace.record import Recorder

        shared.recorder = Recorder()
    net = Network(sim, topo, config, mem_bw=float(m.mem_bw_per_node), node_cls=MpiNode, node_args=(shared,))
    mgr = sim.add_entity(JobManager, net.node_offset, on_end, name=MANAGER, rank=0)
    plat = Platform(machine=m, config=config, sim=sim, net=net, manager=mgr)
    plat.recorder = shared.recorder
    return plat
