"""The packet, flow and ideal models give identical deliveries and link statistics for any P."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.mpi

CFG = dict(chunk=1024, o_s=2e-7, o_r=3e-7)


def _cfg(model):
    # The flow model has no chunks: it takes only the default chunk size.
    if model == "flow-quantum":
        return dict(CFG, chunk=4096, flow_quantum=3e-7)
    return dict(CFG, chunk=4096) if model == "flow" else CFG


def _traffic(n):
    # Every node sends three messages of different sizes to scattered destinations.
    return {s: [((s * 7 + k) % n, 1500 * k + 64, s % 4) for k in range(1, 4)] for s in range(n)}


def _run_staggered(topo, msgs, model, comm):
    """Like run_traffic, but node s starts sending at (s % 4) microseconds, so that later
    senders find ports busy (adaptive routings then leave their zero-load choice)."""
    from tests_support import Probe

    from models.network import Network, NetworkConfig, network_lookahead
    from pdes import Simulator

    sim = Simulator(lookahead=network_lookahead(topo), comm=comm)
    log, sent = [], []
    c = _cfg(model)
    cfg = NetworkConfig(model=model, chunk_size=c["chunk"], send_overhead=c["o_s"], recv_overhead=c["o_r"])
    net = Network(sim, topo, cfg, node_cls=Probe, node_args=(log, sent))
    for src, m in msgs.items():
        if sim.is_local(net.node_eid(src)):
            n = sim.entity("node", src)
            n.send(n.eid, "go", m, (src % 4) * 1e-6)
    sim.run()
    return sim, net, sorted(log)


@pytest.mark.parametrize(
    "machine, routing",
    [
        ("tiny-fattree3", None),
        ("tiny-torus", None),
        ("tiny-dragonfly", None),
        # Keyed and adaptive routings: adaptive ones read the source router's port state.
        ("tiny-fattree3", "ecmp"),
        ("tiny-fattree3", "adaptive"),
        ("tiny-dragonfly", "valiant"),
        ("tiny-dragonfly", "ugal"),
    ],
)
@pytest.mark.parametrize("model", ["packet", "flow", "flow-quantum", "ideal"])
def test_deliveries_and_link_stats_identical_to_sequential(machine, routing, model):
    from mpi4py import MPI

    from models.presets import get_machine
    from tests_support import run_traffic

    comm = MPI.COMM_WORLD
    topo = get_machine(machine).topology
    if routing is not None:
        topo = topo.replace(routing=routing)
    msgs = _traffic(topo.n_nodes)
    name = model.split("-")[0]
    sim, net, log, sent = run_traffic(topo, msgs, model=name, comm=comm, **_cfg(model))
    st = net.stats()
    logs = comm.gather(log, root=0)
    if comm.rank == 0:
        par = sorted(x for part in logs for x in part)
        _, net1, log1, _ = run_traffic(topo, msgs, model=name, comm=None, **_cfg(model))
        st1 = net1.stats()
        assert par == log1
        assert np.array_equal(st.link_bytes, st1.link_bytes)
        assert np.array_equal(st.link_busy, st1.link_busy)
        assert np.array_equal(st.link_max_queue, st1.link_max_queue)
        assert st.job_bytes == st1.job_bytes and st.job_hop_bytes == st1.job_hop_bytes
        assert st.chunks == st1.chunks
        assert (st.flows, st.flow_recomputes, st.flow_touched) == (st1.flows, st1.flow_recomputes, st1.flow_touched)
        if comm.size > 1:
            assert sim.stats.remote_events > 0


@pytest.mark.parametrize("model", ["packet", "flow"])
@pytest.mark.parametrize(
    "machine, routing", [("tiny-fattree3", "adaptive"), ("tiny-dragonfly", "ugal"), ("tiny-dragonfly", "ugal-g")]
)
def test_adaptive_routing_under_load_is_identical_to_sequential(machine, routing, model):
    from mpi4py import MPI

    from models.presets import get_machine

    comm = MPI.COMM_WORLD
    topo = get_machine(machine).topology.replace(routing=routing)
    msgs = {s: [((s * 7 + k) % topo.n_nodes, 20_000 * k, s % 4) for k in range(1, 4)] for s in range(topo.n_nodes)}
    _, net, log = _run_staggered(topo, msgs, model, comm)
    st = net.stats()
    logs = comm.gather(log, root=0)
    if comm.rank == 0:
        par = sorted(x for part in logs for x in part)
        _, net1, log1 = _run_staggered(topo, msgs, model, None)
        st1 = net1.stats()
        assert par == log1
        assert np.array_equal(st.link_bytes, st1.link_bytes)
        assert np.array_equal(st.link_busy, st1.link_busy)
        assert np.array_equal(st.link_max_queue, st1.link_max_queue)
        assert st.job_hop_bytes == st1.job_hop_bytes
        # The load made some messages leave the zero-load route. (The flow model's fat-tree
        # choice counts flows per uplink, and this traffic never leaves one with fewer flows
        # than the D-mod-k port: tests/models/test_network_flow.py covers it.)
        if model == "packet" or routing.startswith("ugal"):
            _, net0, _ = _run_staggered(topo.replace(routing=topo.ROUTINGS[0]), msgs, model, None)
            assert not np.array_equal(net0.stats().link_bytes, st1.link_bytes)


@pytest.mark.parametrize(
    "machine, routing",
    [("tiny-fattree3", None), ("tiny-torus", None), ("tiny-dragonfly", "valiant"), ("tiny-dragonfly", "ugal"),
     ("tiny-fattree3", "adaptive"), ("tiny-dragonfly", "ugal-g"), ("tiny-torus", "adaptive")],
)
def test_credit_flow_control_at_saturation_is_identical_to_sequential(machine, routing):
    # One-chunk buffers: credits cross ranks back over router-to-router links, and chunks
    # wait for them in routers and NICs; every tie goes by the kernel's key.
    from mpi4py import MPI

    from models.presets import get_machine
    from tests_support import run_traffic

    comm = MPI.COMM_WORLD
    topo = get_machine(machine).topology
    if routing is not None:
        topo = topo.replace(routing=routing)
    n = topo.n_nodes
    msgs = {s: [((s * 7 + k) % n, 6000 * k + 64, s % 4) for k in range(1, 4)] for s in range(n)}
    kw = dict(CFG, buffers="credit", buffer_size=1024)
    sim, net, log, sent = run_traffic(topo, msgs, comm=comm, **kw)
    st = net.stats()
    logs = comm.gather(log, root=0)
    if comm.rank == 0:
        par = sorted(x for part in logs for x in part)
        _, net1, log1, _ = run_traffic(topo, msgs, comm=None, **kw)
        st1 = net1.stats()
        assert len(par) == 3 * n
        assert par == log1
        assert np.array_equal(st.link_busy, st1.link_busy)
        assert np.array_equal(st.link_max_queue, st1.link_max_queue)
        assert st.credit_stalls == st1.credit_stalls > 0
        assert st.job_hop_bytes == st1.job_hop_bytes
        # ugal-g keeps the whole network on rank 0 (it reads every global link).
        if comm.size > 1 and routing != "ugal-g":
            assert sim.stats.remote_events > 0
        if topo.is_adaptive:
            # The source routers read their credits and left the zero-load route.
            _, net0, _, _ = run_traffic(topo.replace(routing=topo.ROUTINGS[0]), msgs, comm=None, **kw)
            assert not np.array_equal(net0.stats().link_bytes, st1.link_bytes)
