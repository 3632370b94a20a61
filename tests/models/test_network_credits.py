"""Credit-based flow control of the packet model: finite buffers, virtual channels, back-pressure."""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.network import NetworkConfig, NetworkConfigError
from models.network.credits import vc_plan
from models.presets import get_machine
from models.topology import Dragonfly, FatTree, Torus
from tests_support import run_traffic

MIB = 1 << 20


def all_to_all(n, size):
    return {s: [((s + k) % n, size, 0) for k in range(1, n)] for s in range(n)}


def _stats(net):
    st = net.stats()
    return st.link_bytes.tolist(), st.link_busy.tolist(), st.link_max_queue.tolist()


# -- infinite buffers stay today's model ----------------------------------------------------
@pytest.mark.parametrize("machine", ["tiny-fattree3", "tiny-torus"])
def test_infinite_default_and_huge_credit_buffers_are_bit_identical(machine):
    # buffers="infinite" is the default; credit buffers too large to ever fill follow the
    # very same per-hop rule, so every delivery time and link figure agrees bit for bit.
    topo = get_machine(machine).topology
    msgs = all_to_all(topo.n_nodes, 20_000)
    _, net0, log0, sent0 = run_traffic(topo, msgs)
    _, net1, log1, sent1 = run_traffic(topo, msgs, buffers="infinite")
    _, net2, log2, sent2 = run_traffic(topo, msgs, buffers="credit", buffer_size="1GiB")
    assert log0 == log1 == log2
    assert sent0 == sent1 == sent2
    assert _stats(net0) == _stats(net1) == _stats(net2)
    assert net0.state.credits is None and net2.state.credits.stalls == 0


# -- a single flow: buffer / RTT -------------------------------------------------------------
def _line(L=1e-6, B=4e9):
    # Three routers in a row, every link (NIC links included) with bandwidth B and latency L.
    return Torus(dims=(3,), wrap=False, nodes_per_router=1, link_bw=B, link_lat=L, inject_bw=B, inject_lat=L)


@pytest.mark.parametrize("chunks", [1, 2])
def test_single_flow_throughput_is_buffer_over_credit_round_trip(chunks):
    # A chunk's buffer place comes back one RTT = 2L + c/B after it took it (L out, c/B to
    # leave the next router, L back). With n chunks of buffer below the bandwidth-delay
    # product the NIC sends n chunks per RTT: chunk i starts at (i // n) RTT + (i % n) c/B,
    # and the last one then crosses the idle path in sum(L) + c/B.
    L, B, c, S = 1e-6, 4e9, 4096, 256 * 4096
    topo = _line(L, B)
    rtt = 2 * L + c / B
    assert chunks * c < B * rtt
    _, _, log, _ = run_traffic(topo, {0: [(2, S, 0)]}, chunk=c, buffers="credit", buffer_size=chunks * c)
    m = S // c
    t_last = ((m - 1) // chunks) * rtt + ((m - 1) % chunks) * c / B
    hops = len(topo.route(0, 2))
    assert log[0][0] == pytest.approx(t_last + hops * L + c / B, rel=1e-9)
    # Throughput: close to n c / RTT, well below B.
    assert S / log[0][0] == pytest.approx(chunks * c / rtt, rel=0.02)


def test_single_flow_runs_at_full_speed_when_the_buffer_covers_the_bandwidth_delay_product():
    L, B, c, S = 1e-6, 4e9, 4096, 256 * 4096
    topo = _line(L, B)
    need = B * (2 * L + c / B)  # bytes in flight per credit round trip
    buf = c * math.ceil(need / c)
    _, _, ref, _ = run_traffic(topo, {0: [(2, S, 0)]}, chunk=c)
    _, _, log, _ = run_traffic(topo, {0: [(2, S, 0)]}, chunk=c, buffers="credit", buffer_size=buf)
    assert log == ref
    # One chunk less and it slows down.
    _, _, slow, _ = run_traffic(topo, {0: [(2, S, 0)]}, chunk=c, buffers="credit", buffer_size=buf - c)
    assert slow[0][0] > ref[0][0] * 1.05


# -- saturation: adversarial traffic finishes on every topology ------------------------------
def _tornado(topo: Torus, size, rounds):
    # Every node sends to the node (k/2 - 1) further along each dimension of size k (the
    # longest minimal way round every ring, in the same direction): the cyclic pattern that
    # deadlocks a torus without a dateline.
    n = topo.n_nodes
    coords = topo.coords_of_node(np.arange(n))
    msgs = {}
    for s in range(n):
        dst = [(x + max(1, k // 2 - 1 + (k % 2))) % k for x, k in zip(coords[s], topo.dims)]
        d = topo.node_at(dst)
        msgs[s] = [(d, size, 0)] * rounds
    return msgs


def _group_adversarial(topo: Dragonfly, size, rounds):
    n, p, a, g = topo.n_nodes, topo.p, topo.a, topo.n_groups
    per = p * a
    return {s: [(((s // per + 1) % g) * per + s % per, size, 0)] * rounds for s in range(n)}


def _bit_complement(topo: FatTree, size, rounds):
    n = topo.n_nodes
    return {s: [(n - 1 - s, size, 0), ((s + n // 2) % n, size, 0)] * rounds for s in range(n)}


SATURATION = {
    "fattree": (lambda: get_machine("tiny-fattree3").topology, _bit_complement),
    "torus": (lambda: Torus(dims=(5, 4), nodes_per_router=2, link_bw="4GB/s", link_lat="100ns"), _tornado),
    "dragonfly-valiant": (lambda: get_machine("tiny-dragonfly").topology.replace(routing="valiant"), _group_adversarial),
    "dragonfly-ugal": (lambda: get_machine("tiny-dragonfly").topology.replace(routing="ugal"), _group_adversarial),
    "dragonfly-ugal-g": (lambda: get_machine("tiny-dragonfly").topology.replace(routing="ugal-g"), _group_adversarial),
    "fattree-adaptive": (lambda: get_machine("tiny-fattree3").topology.replace(routing="adaptive"), _bit_complement),
    "torus-adaptive": (lambda: Torus(dims=(5, 4), nodes_per_router=2, link_bw="4GB/s", link_lat="100ns",
                                     routing="adaptive"), _tornado),
    "mesh-adaptive": (lambda: Torus.mesh(dims=(4, 4), nodes_per_router=2, routing="adaptive"), _tornado),
}


@pytest.mark.parametrize("case", sorted(SATURATION))
def test_adversarial_traffic_at_saturation_finishes(case):
    make, pattern = SATURATION[case]
    topo = make()
    msgs = pattern(topo, 48 * 1024, 3)
    # One-chunk buffers: the tightest back-pressure (every full buffer stalls its upstream).
    sim, net, log, _ = run_traffic(topo, msgs, buffers="credit", buffer_size=4096)
    cs = net.state.credits
    assert len(log) == sum(len(v) for v in msgs.values())
    assert cs.stalls > 0  # it did saturate
    assert not cs.waitq  # nothing left waiting
    # Every credit came home: each (link, VC) has its whole buffer again.
    assert all(c == 4096 or c == math.inf for c in cs.credit)


def test_torus_without_its_dateline_virtual_channel_deadlocks(monkeypatch):
    # The control for the dateline rule: the same tornado traffic with every hop on VC 0
    # leaves chunks waiting on each other round a ring, and messages are never delivered.
    topo = SATURATION["torus"][0]()
    msgs = _tornado(topo, 48 * 1024, 3)
    import models.network.credits as credits

    real = credits.vc_plan

    def one_vc(t):
        _, _, why = real(t)
        return 1, (lambda route: (0,) * len(route)), why

    monkeypatch.setattr(credits, "vc_plan", one_vc)
    _, net, log, _ = run_traffic(topo, msgs, buffers="credit", buffer_size=4096)
    assert len(log) < sum(len(v) for v in msgs.values())
    assert net.state.credits.waitq


# -- tree saturation -----------------------------------------------------------------------------
def test_hot_spot_slows_a_bystander_through_shared_upstream_buffers():
    # Routers R0 - R1 - R2, four nodes each; router links 4x the NIC bandwidth. Hot spot:
    # node 8 (on R2) receives from node 1 (R0) and nodes 5, 6, 7 (R1). Bystander: node 0
    # (R0) sends to node 4 (R1): it shares only the R0 -> R1 link, which has room for both,
    # and R1's input buffer of that link with the hot traffic.
    topo = Torus(dims=(3,), wrap=False, nodes_per_router=4, link_bw="16GB/s", inject_bw="4GB/s",
                 link_lat="100ns", inject_lat="100ns")
    by = {0: [(4, 256 * 1024, 1)]}
    hot = {s: [(8, 4 * MIB, 2)] for s in (1, 5, 6, 7)}

    def bystander_time(**kw):
        _, _, log, _ = run_traffic(topo, {**by, **hot}, **kw)
        return next(t for t, s, d, *_ in log if (s, d) == (0, 4))

    _, _, alone, _ = run_traffic(topo, by)
    t_alone = alone[0][0]
    t_inf = bystander_time()
    t_credit = bystander_time(buffers="credit")
    # Unbounded queues: the hot spot's backlog sits at R1's port to R2 and never reaches
    # the bystander. Finite buffers: it backs up into R1's input buffer from R0 and the
    # bystander's chunks wait behind it.
    assert t_inf < 1.05 * t_alone
    assert t_credit > 3 * t_alone


# -- virtual channels per routing --------------------------------------------------------------
def test_virtual_channels_needed_per_topology_and_routing():
    df = get_machine("tiny-dragonfly").topology
    assert vc_plan(get_machine("tiny-fattree3").topology)[0] == 1
    assert vc_plan(get_machine("tiny-torus").topology)[0] == 2
    assert vc_plan(get_machine("tiny-mesh").topology)[0] == 1
    assert vc_plan(df)[0] == 2
    assert vc_plan(df.replace(routing="valiant"))[0] == 3
    assert vc_plan(df.replace(routing="ugal"))[0] == 3
    assert vc_plan(df.replace(routing="ugal-g"))[0] == 3
    # Torus adaptive: the escape VCs (dateline) plus one adaptive VC.
    assert vc_plan(get_machine("tiny-torus").topology.replace(routing="adaptive"))[0] == 3
    assert vc_plan(get_machine("tiny-mesh").topology.replace(routing="adaptive"))[0] == 2
    # Dragonfly: the VC is the number of global hops taken so far.
    need, fn, _ = vc_plan(df.replace(routing="valiant"))
    kinds = df.link_kind
    for dst in range(8, df.n_nodes, 7):
        r = df.replace(routing="valiant").route(0, dst, 3)
        v = fn(r)
        glob = np.cumsum([kinds[l] == 5 for l in r])
        assert list(v[:-1]) == [int(x) for x in np.concatenate([[0], glob[:-1]])[:-1]]
        assert max(v) < need
    # Torus: VC 1 from the dateline on, within a dimension.
    t = Torus(dims=(5,), link_bw="4GB/s", link_lat="100ns")
    _, fn, _ = vc_plan(t)
    assert fn(t.route(3, 0)) == (0, 0, 1, 0)  # 3 -> 4 -> 0 (wraps on the second hop)
    assert fn(t.route(1, 3)) == (0, 0, 0, 0)


def test_unused_topology_vcs_default_to_the_routing_needs():
    topo = get_machine("tiny-dragonfly").topology.replace(routing="valiant")
    _, net, _, _ = run_traffic(topo, {0: [(40, 1000, 0)]}, buffers="credit")
    assert net.state.credits.nvc == 3
    _, net, _, _ = run_traffic(topo, {0: [(40, 1000, 0)]}, buffers="credit", vcs=5)
    assert net.state.credits.nvc == 5


# -- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kw, words",
    [
        (dict(buffers="finite"), ["buffers 'finite'", "infinite, credit"]),
        (dict(buffers="credit", buffer_size=1024), ["buffer_size", ">= chunk_size (4096)"]),
        (dict(buffers="credit", buffer_size="lots"), ["buffer_size"]),
        (dict(buffers="credit", vcs=0), ["vcs", "1 to 16"]),
        (dict(buffers="credit", vcs=2.5), ["vcs", "1 to 16"]),
        (dict(buffer_size="64KiB"), ["buffer_size", "buffers='credit'"]),
        (dict(vcs=2), ["vcs", "buffers='credit'"]),
        (dict(model="flow", buffers="credit"), ["packet model only", "'flow'"]),
    ],
)
def test_bad_buffer_options_are_one_line_errors(kw, words):
    with pytest.raises(NetworkConfigError) as ei:
        NetworkConfig(**kw)
    msg = str(ei.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg


@pytest.mark.parametrize(
    "topo, vcs, need",
    [
        (lambda: get_machine("tiny-torus").topology, 1, 2),
        (lambda: get_machine("tiny-dragonfly").topology, 1, 2),
        (lambda: get_machine("tiny-dragonfly").topology.replace(routing="valiant"), 2, 3),
        (lambda: get_machine("tiny-torus").topology.replace(routing="adaptive"), 2, 3),
    ],
)
def test_too_few_virtual_channels_for_the_routing_is_an_error(topo, vcs, need):
    with pytest.raises(NetworkConfigError) as ei:
        run_traffic(topo(), {}, buffers="credit", vcs=vcs)
    msg = str(ei.value)
    assert f"vcs = {vcs}" in msg and f"needs {need}" in msg and f"from {need} to 16" in msg


# -- adaptive routing with credits ---------------------------------------------------------------
def test_torus_adaptive_routing_leaves_dimension_order_under_load_on_minimal_paths():
    topo = Torus(dims=(5, 4), nodes_per_router=2, link_bw="4GB/s", link_lat="100ns")
    msgs = _tornado(topo, 48 * 1024, 3)
    kw = dict(buffers="credit", buffer_size=8192)
    _, net_dor, log_dor, _ = run_traffic(topo, msgs, **kw)
    _, net_ad, log_ad, _ = run_traffic(topo.replace(routing="adaptive"), msgs, **kw)
    s_dor, s_ad = net_dor.stats(), net_ad.stats()
    assert len(log_ad) == len(log_dor)
    # Other links carried the bytes, but every route stayed minimal: the same hop-bytes.
    assert not np.array_equal(s_dor.link_bytes, s_ad.link_bytes)
    assert s_dor.job_hop_bytes == s_ad.job_hop_bytes
    assert sorted((s, d) for _, s, d, *_ in log_ad) == sorted((s, d) for _, s, d, *_ in log_dor)


def test_torus_minimal_ports_are_one_per_dimension_left_in_dimension_order_direction():
    t = Torus(dims=(5, 4), nodes_per_router=1, link_bw="4GB/s", link_lat="100ns", routing="adaptive")
    r, dst = t.router_at((0, 0)), t.router_at((3, 2))  # x: 3 ahead = 2 behind, y: a tie of 2 goes +
    assert t.minimal_ports(r, dst) == (t.link_id(r, 0, -1), t.link_id(r, 1, +1))
    assert t.minimal_ports(dst, dst) == ()
    assert t.route_from_router(r, dst) == t.route(r, dst)[1:]
    # Zero-load routes are dimension order.
    assert t.route(r, dst) == t.replace(routing="dor").route(r, dst)


@pytest.mark.parametrize("kw", [dict(), dict(model="flow")])
def test_torus_adaptive_routing_needs_credit_buffers(kw):
    from pdes import ConfigError

    topo = get_machine("tiny-torus").topology.replace(routing="adaptive")
    with pytest.raises(ConfigError) as ei:
        run_traffic(topo, {0: [(5, 1000, 0)]}, **kw)
    msg = str(ei.value)
    assert "\n" not in msg and "buffers='credit'" in msg and "valid routings otherwise: dor" in msg


# -- deferred credits are exactly credits sent as events -------------------------------------
@pytest.mark.parametrize(
    "machine, routing",
    [("tiny-fattree3", None), ("tiny-torus", None), ("tiny-dragonfly", "valiant"), ("tiny-dragonfly", "ugal"),
     ("tiny-fattree3", "adaptive"), ("tiny-dragonfly", "ugal-g"), ("tiny-torus", "adaptive")],
)
@pytest.mark.parametrize("end_time", [math.inf, 12e-6])
def test_deferred_credits_give_the_results_of_credit_events(machine, routing, end_time, monkeypatch):
    # One-chunk buffers at saturation: chunks and NICs wait for credit all the time, so
    # deferred credits are turned into events (arm) as often as they stay deferred.
    from models.network.credits import CreditState

    topo = get_machine(machine).topology
    if routing is not None:
        topo = topo.replace(routing=routing)
    n = topo.n_nodes
    msgs = {s: [((s * 7 + k) % n, 6000 * k + 64, s % 4) for k in range(1, 4)] for s in range(n)}
    kw = dict(chunk=1024, o_s=2e-7, o_r=3e-7, buffers="credit", buffer_size=1024, end_time=end_time)

    def run():
        sim, net, log, sent = run_traffic(topo, msgs, **kw)
        st = net.stats()
        return (log, sent, sim.stats.events, sim.now, st.credit_stalls, st.link_busy.tolist(),
                st.link_max_queue.tolist()), net.state.credits

    deferred, cs = run()
    assert not cs.pend or end_time < math.inf  # everything was flushed at the end
    monkeypatch.setattr(CreditState, "enable_deferred", lambda self, sim, local: None)
    eager, cs0 = run()
    assert cs0.defer is None and cs.defer is not None
    assert deferred == eager
    assert eager[4] > 0
    if end_time < math.inf:
        assert eager[3] == end_time and len(eager[0]) < 3 * n
