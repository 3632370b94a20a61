"""The network transport: closed-form timings, sharing, work conservation, bisection bounds."""

from __future__ import annotations

import pytest

from models.network import Network, NetworkConfig, NetworkConfigError
from models.presets import get_machine
from models.topology import FatTree, Torus
from pdes import ConfigError, Simulator
from tests_support import run_traffic


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


def test_bad_configuration_is_named():
    with pytest.raises(NetworkConfigError, match="planned but not implemented"):
        NetworkConfig(model="flow")
    with pytest.raises(NetworkConfigError, match="valid: packet, ideal"):
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
