"""The network transport: closed-form timings, sharing, work conservation, bisection bounds."""

from __future__ import annotations

import math

import pytest

from models.network import Network, NetworkConfig, NetworkConfigError, network_lookahead
from models.presets import get_machine
from models.topology import KIND_GLOBAL, Dragonfly, FatTree, Torus
from pdes import ConfigError, Simulator
from tests_support import Probe, run_traffic


def ideal_time(topo, src, dst, nbytes, o_s, o_r):
    route = topo.route(src, dst)
    return o_s + sum(topo.link_lat[l] for l in route) + nbytes / min(topo.link_bw[l] for l in route) + o_r


TOPOLOGIES = {
    "fattree3": lambda: get_machine("tiny-fattree3").topology,
    "torus": lambda: get_machine("tiny-torus").topology,
    "mesh": lambda: get_machine("tiny-mesh").topology,
    "dragonfly": lambda: get_machine("tiny-dragonfly").topology,
    # Heterogeneous bandwidths: a slow hop in the middle of the path.
    "torus-hetero": lambda: Torus(dims=(4, 3), link_bw=("2GB/s", "0.5GB/s"), inject_bw="4GB/s", link_lat="80ns", inject_lat="20ns"),
}


@pytest.mark.parametrize("model", ["packet", "ideal"])
@pytest.mark.parametrize("chunk", [256, 4096, 1_000_000])
@pytest.mark.parametrize("family", sorted(TOPOLOGIES))
def test_idle_path_time_is_overheads_plus_latencies_plus_size_over_min_bandwidth(family, chunk, model):
    topo = TOPOLOGIES[family]()
    src, dst = 0, topo.n_nodes - 1
    nbytes = 100_000
    _, _, log, sent = run_traffic(topo, {src: [(dst, nbytes, 7)]}, model=model, chunk=chunk, o_s=1.5e-6, o_r=0.7e-6)
    assert len(log) == 1
    t, s, d, nb, payload, job = log[0]
    assert (s, d, nb, payload, job) == (src, dst, nbytes, (src, dst), 7)
    assert t == pytest.approx(ideal_time(topo, src, dst, nbytes, 1.5e-6, 0.7e-6), rel=1e-9)
    # The sender's buffer is free once the last byte left the NIC.
    inj = topo.route(src, dst)[0]
    assert sent[0][0] == pytest.approx(1.5e-6 + nbytes / topo.link_bw[inj], rel=1e-9)


def test_k_messages_sharing_one_link_split_its_bandwidth():
    # Four sources on other leaves send S bytes each to node 0: they share node 0's
    # ejection link (bandwidth B). The port stays busy from the first chunk on, so the
    # last message completes at sum(L) + k*S/B and the others within the last k chunks.
    topo = get_machine("tiny-fattree3").topology
    k, S, C = 4, 64 * 1024, 4096
    srcs = [4, 6, 8, 10]  # other pods: identical route lengths to node 0
    assert len({len(topo.route(s, 0)) for s in srcs}) == 1
    _, net, log, _ = run_traffic(topo, {s: [(0, S, s)] for s in srcs}, chunk=C)
    times = sorted(t for t, *_ in log)
    route = topo.route(srcs[0], 0)
    B = topo.link_bw[route[-1]]
    assert all(topo.link_bw[l] == B for l in route)
    last = sum(topo.link_lat[l] for l in route) + k * S / B
    assert times[-1] == pytest.approx(last, rel=1e-9)
    # Round-robin interleaving at the shared port: completions are one chunk time apart.
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert gaps == pytest.approx([C / B] * (k - 1), rel=1e-6)
    # Each message got ~B/k: its own transfer took ~k*S/B.
    ej = route[-1]
    st = net.stats()
    assert st.link_bytes[ej] == k * S
    assert st.link_busy[ej] == pytest.approx(k * S / B, rel=1e-12)


def test_throttled_flow_leaves_the_remaining_bandwidth_to_others():
    # 1-D mesh of 3 routers, 2 nodes each: n0,n1 on r0; n2,n3 on r1; n4,n5 on r2.
    # Flow A: n0 -> n4 crosses r1->r2; n0 also sends 3 local messages to n1, so A gets only a
    # quarter of n0's injection bandwidth. Flow B: n2 -> n4 also crosses r1->r2 and ej(n4).
    # A work-conserving link gives B what A leaves: B finishes far faster than with an
    # equal split of the shared link, and the shared link never idles while both are active.
    topo = Torus.mesh(dims=(3,), nodes_per_router=2, link_bw="1GB/s", inject_bw="1GB/s", link_lat="100ns", inject_lat="100ns")
    S, C = 512 * 1024, 4096
    msgs = {0: [(4, S, 1)] + [(1, S, 9)] * 3, 2: [(4, S, 2)]}
    _, net, log, _ = run_traffic(topo, msgs, chunk=C)
    done = {job: t for t, _, _, _, _, job in log if job in (1, 2)}
    B = 1e9
    equal_split = 2 * S / B
    assert done[2] < 0.7 * equal_split  # B got well over half the shared link
    assert done[1] > done[2]  # A is the throttled one
    shared = [l for l in topo.route(2, 4) if l in set(topo.route(0, 4))]
    st = net.stats()
    for l in shared:
        # Busy (all 2*S bytes at B) for the whole time both flows competed: no idle gaps.
        assert st.link_busy[l] == pytest.approx(2 * S / B, rel=1e-12)
    # While B was active the shared link carried B's bytes plus A's quarter-rate trickle.
    assert done[2] == pytest.approx(S / (B * 0.8), rel=0.05)


def _all_to_all(topo, S):
    n = topo.n_nodes
    msgs = {s: [((s + k) % n, S, 0) for k in range(1, n)] for s in range(n)}
    sim, net, log, _ = run_traffic(topo, msgs, chunk=4096)
    assert len(log) == n * (n - 1)
    return max(t for t, *_ in log), net


def test_all_to_all_on_full_bisection_fat_tree_is_near_its_bound():
    topo = FatTree.from_radix(radix=8, levels=2)  # 32 nodes, full bisection, D-mod-k
    n, S = topo.n_nodes, 16 * 1024
    makespan, _ = _all_to_all(topo, S)
    B = float(topo.link_bw[0])
    bisection_bound = (n / 2) * (n / 2) * S / topo.bisection_bandwidth
    injection_bound = (n - 1) * S / B
    bound = max(bisection_bound, injection_bound)
    # On a full-bisection tree the injection bound is the binding one (twice the bisection bound).
    assert bisection_bound <= injection_bound
    assert makespan >= bound
    assert makespan <= 1.25 * bound


def test_all_to_all_on_tapered_fat_tree_respects_every_cut_bound():
    # 3:1 tapered tree: 8 leaves of 6 nodes with 2 uplinks each. Every cut gives a lower
    # bound: injection, the bisection, and the cut around one leaf (its 2 uplinks carry
    # 6 * (n - 6) * S). Here the leaf cut is the tightest; the makespan must respect all
    # of them and come within 25% of the tightest.
    topo = FatTree.from_radix(radix=8, levels=2, taper=3.0)
    n, S = topo.n_nodes, 16 * 1024
    makespan, _ = _all_to_all(topo, S)
    B = float(topo.link_bw[0])
    npl, up = topo.nodes_per_leaf, topo.uplinks_per_leaf
    bisection_bound = (n / 2) * (n / 2) * S / topo.bisection_bandwidth
    injection_bound = (n - 1) * S / B
    leaf_bound = npl * (n - npl) * S / (up * B)
    assert injection_bound < bisection_bound < leaf_bound
    assert makespan >= leaf_bound
    assert makespan <= 1.25 * leaf_bound


def test_intra_node_messages_use_memory_and_never_touch_the_network():
    topo = get_machine("tiny-mesh").topology  # two nodes per router
    _, net, log, sent = run_traffic(topo, {0: [(0, 1_000_000, 3), (0, 1_000_000, 3)]}, o_s=1e-6, o_r=2e-6, mem_bw=5e9)
    st = net.stats()
    assert st.link_bytes.sum() == 0 and st.intra_node_messages == 2
    # The memory channel is FIFO: the second copy waits for the first.
    assert [t for t, *_ in log] == pytest.approx([1e-6 + 2e-4 + 2e-6, 1e-6 + 4e-4 + 2e-6], rel=1e-12)


def test_per_job_bytes_and_hop_bytes():
    topo = get_machine("tiny-torus").topology
    msgs = {0: [(1, 1000, 5), (21, 2000, 5)], 3: [(2, 500, 6)]}
    _, net, _, _ = run_traffic(topo, msgs, model="ideal")
    st = net.stats()
    assert st.job_bytes == {5: 3000.0, 6: 500.0}
    assert st.job_hop_bytes[5] == 1000 * topo.hops(0, 1) + 2000 * topo.hops(0, 21)
    assert st.job_messages == {5: 2, 6: 1}


def test_ideal_model_has_no_contention_and_same_route_as_packet():
    topo = get_machine("tiny-fattree3").topology
    srcs = [4, 6, 8, 10]
    _, net_i, log_i, _ = run_traffic(topo, {s: [(0, 65536, s)] for s in srcs}, model="ideal")
    t = [x[0] for x in log_i]
    assert t == pytest.approx([ideal_time(topo, 4, 0, 65536, 0, 0)] * 4)
    _, net_p, _, _ = run_traffic(topo, {s: [(0, 65536, s)] for s in srcs}, model="packet")
    assert (net_i.stats().link_bytes == net_p.stats().link_bytes).all()


def test_hot_links_and_max_queue():
    topo = get_machine("tiny-fattree3").topology
    _, net, _, _ = run_traffic(topo, {s: [(0, 65536, s)] for s in (4, 6, 8, 10)})
    st = net.stats()
    hot = st.hot_links(topo, k=3, network_only=False)
    assert hot[0]["link"] == topo.route(4, 0)[-1] and hot[0]["bytes"] == 4 * 65536
    assert st.max_queue_delay > 0


def test_max_queue_delay_counts_only_waiting_for_a_busy_port():
    # Gemini-like: the router links are faster than injection, so every chunk waits at the
    # first router for its tail. That is serialization, not queueing: an idle path of whole
    # chunks records none.
    gem = Torus(dims=(4, 4), nodes_per_router=2, link_bw="4.68GB/s", link_mult=(2, 2), inject_bw="6GB/s")
    _, net, _, _ = run_traffic(gem, {0: [(gem.n_nodes - 1, 25 * 4096, 1)]}, chunk=4096)
    assert net.stats().max_queue_delay == pytest.approx(0.0, abs=1e-15)
    # Two one-chunk messages meet at one router port: the second waits exactly S/B there.
    topo = Torus.mesh(dims=(2,), nodes_per_router=2, link_bw="1GB/s", inject_bw="1GB/s", link_lat="100ns", inject_lat="100ns")
    S = 4096
    _, net, _, _ = run_traffic(topo, {0: [(2, S, 1)], 1: [(2, S, 2)]}, chunk=S)
    st = net.stats()
    r01 = topo.route(0, 2)[1]
    assert st.link_max_queue[r01] == pytest.approx(S / 1e9, rel=1e-9)
    assert st.max_queue_delay == pytest.approx(S / 1e9, rel=1e-9)
    # Two messages from one node: the second one's chunk waits S/B in the NIC.
    _, net, _, _ = run_traffic(topo, {0: [(2, S, 1), (3, S, 1)]}, chunk=S)
    st = net.stats()
    assert st.link_max_queue[0] == pytest.approx(S / 1e9, rel=1e-9)
    assert st.link_max_queue[r01] == pytest.approx(0.0, abs=1e-15)
    _, net, _, _ = run_traffic(topo, {0: [(2, S, 1)], 1: [(2, S, 2)]}, model="ideal")
    assert net.stats().max_queue_delay == 0.0


def test_nic_interleaves_concurrent_messages_round_robin():
    # One node sends k messages at once to nodes in other pods: they share its injection link
    # chunk by chunk, so each gets B/k; the last completes at sum(L) + k*S/B and the
    # completions (and buffer releases) are one chunk time apart.
    topo = get_machine("tiny-fattree3").topology
    k, S, C = 4, 16 * 1024, 4096
    dsts = [4, 8, 12, 5]
    assert len({len(topo.route(0, d)) for d in dsts}) == 1
    _, net, log, sent = run_traffic(topo, {0: [(d, S, 1) for d in dsts]}, chunk=C)
    B = float(topo.link_bw[0])
    route = topo.route(0, dsts[0])
    assert all(topo.link_bw[l] == B for l in route)
    times = [t for t, *_ in log]
    assert times[-1] == pytest.approx(sum(topo.link_lat[l] for l in route) + k * S / B, rel=1e-9)
    assert [b - a for a, b in zip(times, times[1:])] == pytest.approx([C / B] * (k - 1), rel=1e-6)
    # Delivered in the order the messages were sent (the round-robin order).
    assert [d for _, _, d, *_ in log] == dsts
    rel = [t for t, *_ in sent]
    assert rel[-1] == pytest.approx(k * S / B, rel=1e-9)
    assert [b - a for a, b in zip(rel, rel[1:])] == pytest.approx([C / B] * (k - 1), rel=1e-6)
    # Round-robin: every chunk after the first round waited for k-1 other chunks.
    assert net.stats().link_max_queue[0] == pytest.approx((k - 1) * C / B, rel=1e-9)


def _late_second_sender(topo, first, second, t1, S, C):
    """``first`` = (src, dst) sends S bytes at t=0, ``second`` at t1 (while the first is
    still injecting); returns the network and the deliveries."""
    sim = Simulator(lookahead=network_lookahead(topo))
    log, sent = [], []
    net = Network(sim, topo, NetworkConfig(chunk_size=C, send_overhead=0, recv_overhead=0), node_cls=Probe, node_args=(log, sent))
    for (s, d), job, t in ((first, 1, 0.0), (second, 2, t1)):
        n = sim.entity("node", s)
        n.send(n.eid, "go", [(d, S, job)], t)
    sim.run()
    return net, sorted(log)


@pytest.mark.parametrize("routing", ["dmodk", "adaptive"])
def test_adaptive_fat_tree_routing_avoids_the_busy_uplink_in_the_transport(routing):
    # Nodes 0 and 1 share leaf 0; D-mod-k sends both 0 -> 2 and 1 -> 4 up the same port.
    # The second message starts mid-transfer; adaptive routing sees that port busy and
    # takes the idle one, so it runs at full speed. D-mod-k shares the port.
    topo = FatTree.from_radix(radix=4, levels=2, routing=routing, link_bw="1GB/s", link_lat="100ns")
    S, C = 256 * 1024, 4096
    t1 = 10.5 * C / 1e9
    net, log = _late_second_sender(topo, (0, 2), (1, 4), t1, S, C)
    done = {job: t for t, _, _, _, _, job in log}
    idle = sum(topo.link_lat[l] for l in topo.route(1, 4)) + S / 1e9
    ups = topo.uplinks(0)
    st = net.stats()
    if routing == "adaptive":
        assert done[2] == pytest.approx(t1 + idle, rel=1e-9)
        assert st.link_bytes[ups].tolist() == [S, S]
    else:
        assert done[2] > t1 + idle + 0.5 * S / 1e9
        assert st.link_bytes[ups].tolist() == [2 * S, 0]


def test_ugal_detours_when_the_minimal_first_port_is_busy_in_the_transport():
    topo = Dragonfly(a=4, p=2, h=2, routing="ugal")
    s0, s1, d0, d1 = 0, 1, 70, 71  # same source router, same destination router
    assert topo.route(s0, d0)[1] == topo.route(s1, d1)[1]
    S, C = 256 * 1024, 4096
    net, log = _late_second_sender(topo, (s0, d0), (s1, d1), 10.5 * C / float(topo.link_bw[0]), S, C)
    st = net.stats()
    assert len(log) == 2
    assert st.job_hop_bytes[1] == S * topo.hops(s0, d0)  # the first found the ports idle
    # The second took the Valiant path of its message id (0, node 1's first message).
    vr = topo.replace(routing="valiant").route(s1, d1, 0)
    assert len(vr) > len(topo.route(s1, d1))
    assert st.job_hop_bytes[2] == S * (len(vr) - 2)
    assert (st.link_bytes[list(vr)] >= S).all()
    gl = [l for l in range(topo.n_links) if st.link_bytes[l] and topo.link_kind[l] == KIND_GLOBAL]
    assert len(gl) == 1 + 2


@pytest.mark.parametrize("machine, routing", [("tiny-fattree3", "ecmp"), ("tiny-dragonfly", "valiant")])
def test_ideal_model_takes_the_packet_models_route_for_keyed_routings(machine, routing):
    topo = get_machine(machine).topology.replace(routing=routing)
    n = topo.n_nodes
    msgs = {s: [((s * 5 + k) % n, 1000 * k, 0) for k in range(1, 4)] for s in range(0, n, 3)}
    _, net_i, _, _ = run_traffic(topo, msgs, model="ideal")
    _, net_p, _, _ = run_traffic(topo, msgs, model="packet")
    bi, bp = net_i.stats().link_bytes, net_p.stats().link_bytes
    assert (bi == bp).all()
    # The routes differ from the unkeyed ones, so the keys really were used.
    base = topo.replace(routing=topo.ROUTINGS[0])
    _, net_b, _, _ = run_traffic(base, msgs, model="ideal")
    assert not (net_b.stats().link_bytes == bi).all()


def test_bad_configuration_is_named():
    with pytest.raises(NetworkConfigError, match="valid: packet, flow, ideal"):
        NetworkConfig(model="wormhole")
    with pytest.raises(NetworkConfigError, match="chunk_size"):
        NetworkConfig(chunk_size=0)
    with pytest.raises(NetworkConfigError, match="send_overhead"):
        NetworkConfig(send_overhead="fast")
    assert NetworkConfig(chunk_size="2KiB", send_overhead="1us").chunk_size == 2048
    topo = get_machine("tiny-torus").topology
    sim = Simulator(lookahead=1.0)
    with pytest.raises(ConfigError, match="exceeds the network"):
        Network(sim, topo)


def test_deterministic_repeat():
    topo = get_machine("tiny-dragonfly").topology
    msgs = {s: [((s * 5 + k) % 72, 3000 * k, s % 3) for k in range(1, 4)] for s in range(72)}
    a = run_traffic(topo, msgs)
    b = run_traffic(topo, msgs)
    assert a[2] == b[2]
    assert (a[1].stats().link_busy == b[1].stats().link_busy).all()


@pytest.mark.parametrize("bad", [math.inf, math.nan, -1])
def test_a_size_that_is_not_a_finite_byte_count_is_refused_at_the_send(bad):
    topo = get_machine("tiny-torus").topology
    sim = Simulator(lookahead=network_lookahead(topo))
    net = Network(sim, topo)
    with pytest.raises(ValueError, match="nbytes must be a finite number"):
        net.nodes[0].net_send(1, bad)


@pytest.mark.parametrize("cache_size", [1, 3, 1 << 17])
def test_ideal_path_cache_gives_the_same_times_and_link_bytes_at_any_size(cache_size):
    # Repeated messages take the cached-path fast path, whose bytes reach the links only when
    # the totals are read, and a full cache is flushed and emptied: neither may change a
    # delivery time or a byte count (the packet model counts the same bytes per link).
    topo = Torus(dims=(4, 3), nodes_per_router=2, cache_size=cache_size)
    msgs = {s: [((s * 5 + 3 + i) % topo.n_nodes, 1000 * (i + 1), s % 3) for i in range(4)] * 3 for s in range(0, topo.n_nodes, 3)}
    _, net, log, sent = run_traffic(topo, msgs, model="ideal", o_s=1e-6, o_r=5e-7)
    ref = Torus(dims=(4, 3), nodes_per_router=2)
    _, net_ref, log_ref, sent_ref = run_traffic(ref, msgs, model="ideal", o_s=1e-6, o_r=5e-7)
    assert sorted(log) == sorted(log_ref) and sorted(sent) == sorted(sent_ref)
    for t, s, d, nb, _, _ in log:
        assert t == pytest.approx(ideal_time(topo, s, d, nb, 1e-6, 5e-7), rel=1e-12)
    _, net_p, _, _ = run_traffic(ref, msgs, model="packet")
    b = net.stats().link_bytes
    assert b.sum() > 0 and (b == net_ref.stats().link_bytes).all() and (b == net_p.stats().link_bytes).all()


@pytest.mark.parametrize("cache_size", [1, 1 << 17])
@pytest.mark.parametrize("make", [
    lambda c: Torus(dims=(5, 4), wrap=(True, False), nodes_per_router=2, link_bw=(2e9, 3e9), cache_size=c),
    lambda c: FatTree(levels=3, down=(4, 5, 2), up=(1, 2, 2), inject_bw="8GB/s", cache_size=c),
], ids=["torus", "fattree"])
def test_ideal_paths_made_without_routes_give_the_same_times_and_link_bytes(make, cache_size, monkeypatch):
    # On a torus or fat-tree the ideal model makes its paths from the topology's route
    # summary and the routes only when the bytes are counted (vectorized): fractional sizes,
    # a cache that fills, and notified sends (which need the first link) must match paths
    # built from routes.
    msgs = {s: [((s * 7 + 1 + i) % 40, 1000.25 * (i + 1), s % 2, s % 4 == 0) for i in range(3)] * 2 for s in range(0, 40, 3)}
    topo = make(cache_size)
    _, net, log, sent = run_traffic(topo, msgs, model="ideal", o_s=1e-6, o_r=5e-7)
    assert net.nodes[0]._summary is not None and any(p[0] is None for p in net.state.ideal_paths)
    monkeypatch.setattr(type(topo), "route_summary", lambda self, s, d: None)
    ref = make(cache_size)
    _, net_ref, log_ref, sent_ref = run_traffic(ref, msgs, model="ideal", o_s=1e-6, o_r=5e-7)
    assert all(p[0] is not None for p in net_ref.state.ideal_paths)
    assert log == log_ref and sent == sent_ref
    a, b = net.stats(), net_ref.stats()
    assert a.link_bytes.sum() > 0 and a.link_bytes.tolist() == b.link_bytes.tolist()
    assert a.job_hop_bytes == b.job_hop_bytes and a.job_bytes == b.job_bytes


def test_ideal_paths_from_summaries_refuse_a_bad_node_and_keep_numpy_ids_as_before():
    # A destination out of range is named by the topology, as a route lookup names it; a
    # numpy integer destination takes the route (hop-bytes stay Python floats).
    import numpy as np

    topo = Torus(dims=(4, 3), nodes_per_router=2)
    for bad in (topo.n_nodes + 5, -3):
        with pytest.raises(Exception, match=f"dst {bad} is not a node"):
            run_traffic(topo, {0: [(bad, 100, 0)]}, model="ideal")
    _, net, _, _ = run_traffic(topo, {0: [(np.int64(5), 100, 0, False)], 1: [(7, 100.5, 0, False)]}, model="ideal")
    hb = net.stats().job_hop_bytes
    assert type(hb[0]) is float and hb[0] == 100 * (topo.hops(0, 5)) + 100.5 * topo.hops(1, 7)
