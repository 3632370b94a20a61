"""The flow model: max-min fair rates (against a reference solver and by their defining
properties), closed-form timings, statistics, segments, adaptive routing and apps on it."""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps import run_app
from models.network import Network, NetworkConfig, NetworkConfigError, network_lookahead
import models.network.flow as flow_module
from models.network.flow import FlowSolver
from models.network.maxmin import maxmin_local, maxmin_rates, maxmin_small
from models.presets import Machine, get_machine
from models.topology import Dragonfly, FatTree, Torus
from pdes import Simulator
from tests_support import Probe, run_traffic

O_S, O_R = 1e-6, 0.7e-6


# -- a reference solver, written for clarity (exact fractions, one flow set at a time) -------
def reference_maxmin(routes: list[list[int]], cap: list[int]) -> list[Fraction]:
    """Progressive filling: raise every unfrozen flow together; freeze the flows of each link
    that fills up."""
    rate = [Fraction(0)] * len(routes)
    left = {l: Fraction(c) for l, c in enumerate(cap)}
    active = set(range(len(routes)))
    while active:
        count = {l: sum(1 for f in active if l in routes[f]) for l in left}
        inc = min(left[l] / n for l, n in count.items() if n)
        for f in active:
            rate[f] += inc
        for l, n in count.items():
            left[l] -= n * inc
        full = {l for l, n in count.items() if n and left[l] == 0}
        active = {f for f in active if not full & set(routes[f])}
    return rate


def _csr(routes):
    ptr = np.zeros(len(routes) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in routes], out=ptr[1:])
    idx = np.array([l for r in routes for l in r], dtype=np.int64)
    return ptr, idx


@st.composite
def instances(draw):
    n_links = draw(st.integers(1, 6))
    cap = draw(st.lists(st.integers(1, 12), min_size=n_links, max_size=n_links))
    routes = draw(st.lists(
        st.lists(st.integers(0, n_links - 1), min_size=1, max_size=n_links, unique=True), min_size=1, max_size=9))
    return routes, cap


@settings(max_examples=300, deadline=None)
@given(instances())
def test_rates_match_the_reference_solver(inst):
    routes, cap = inst
    got = maxmin_rates(*_csr(routes), np.array(cap, dtype=float))
    want = reference_maxmin(routes, cap)
    np.testing.assert_allclose(got, [float(x) for x in want], rtol=1e-9)


@settings(max_examples=300, deadline=None)
@given(instances())
def test_no_link_over_capacity_and_every_flow_bottlenecked_where_it_is_largest(inst):
    routes, cap = inst
    rate = maxmin_rates(*_csr(routes), np.array(cap, dtype=float))
    load = np.zeros(len(cap))
    for f, r in enumerate(routes):
        load[r] += rate[f]
    assert (load <= np.array(cap) * (1 + 1e-9)).all()
    for f, r in enumerate(routes):
        assert rate[f] > 0
        # Some link of its route is saturated and no flow on it gets more than this one.
        assert any(load[l] >= cap[l] * (1 - 1e-9)
                   and all(rate[g] <= rate[f] * (1 + 1e-9) for g, rg in enumerate(routes) if l in rg)
                   for l in r)


@settings(max_examples=200, deadline=None)
@given(instances(), st.randoms(use_true_random=False))
def test_the_order_of_the_flows_changes_nothing_bit_for_bit(inst, rnd):
    routes, cap = inst
    rate = maxmin_rates(*_csr(routes), np.array(cap, dtype=float))
    order = list(range(len(routes)))
    rnd.shuffle(order)
    shuffled = maxmin_rates(*_csr([routes[i] for i in order]), np.array(cap, dtype=float))
    assert shuffled.tolist() == rate[order].tolist()


@settings(max_examples=300, deadline=None)
@given(instances())
def test_the_python_solver_of_small_components_gives_the_same_rates_bit_for_bit(inst):
    routes, cap = inst
    rate = maxmin_rates(*_csr(routes), np.array(cap, dtype=float))
    assert maxmin_small(routes, [float(c) for c in cap]) == rate.tolist()


@settings(max_examples=300, deadline=None)
@given(instances())
def test_the_solver_over_local_link_numbers_gives_the_same_rates_bit_for_bit(inst):
    routes, cap = inst
    links = sorted({l for r in routes for l in r}, reverse=True)  # any numbering will do
    local = {l: i for i, l in enumerate(links)}
    n = [sum(l in r for r in routes) for l in links]
    got = maxmin_local([[local[l] for l in r] for r in routes], n, [float(cap[l]) for l in links])
    assert got == maxmin_small(routes, [float(c) for c in cap])


def test_empty_and_single_flow():
    assert maxmin_rates(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.ones(3)).size == 0
    assert maxmin_rates(np.array([0, 3]), np.array([0, 1, 2]), np.array([5.0, 2.0, 7.0])).tolist() == [2.0]


# -- closed forms through the network --------------------------------------------------------
TOPOLOGIES = {
    "fattree3": lambda: get_machine("tiny-fattree3").topology,
    "torus": lambda: get_machine("tiny-torus").topology,
    "dragonfly": lambda: get_machine("tiny-dragonfly").topology,
    "torus-hetero": lambda: Torus(dims=(4, 3), link_bw=("2GB/s", "0.5GB/s"), inject_bw="4GB/s", link_lat="80ns",
                                  inject_lat="20ns"),
}


def _path(topo, src, dst):
    r = topo.route(src, dst)
    return sum(topo.link_lat[l] for l in r), min(topo.link_bw[l] for l in r)


@pytest.mark.parametrize("family", sorted(TOPOLOGIES))
def test_one_flow_takes_overheads_plus_latency_plus_size_over_bandwidth(family):
    topo = TOPOLOGIES[family]()
    src, dst, S = 0, topo.n_nodes - 1, 100_000
    _, net, log, sent = run_traffic(topo, {src: [(dst, S, 7)]}, model="flow", o_s=O_S, o_r=O_R)
    lat, bw = _path(topo, src, dst)
    assert log[0][0] == pytest.approx(O_S + lat + S / bw + O_R, rel=1e-12)
    assert log[0][1:] == (src, dst, S, (src, dst), 7)
    # The buffer is free one lookahead after the last byte.
    assert sent[0][0] == pytest.approx(O_S + lat + S / bw + net.sim.lookahead, rel=1e-12)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_k_flows_sharing_a_link_finish_together_at_latency_plus_k_s_over_b(k):
    topo = get_machine("tiny-fattree3").topology
    S, dst = 200_000, topo.n_nodes - 1
    lat, bw = _path(topo, 0, dst)
    # k sources into one destination: its ejection link is shared.
    _, _, log, _ = run_traffic(topo, {s: [(dst, S, 0)] for s in range(k)}, model="flow", o_s=O_S, o_r=O_R)
    assert [t for t, *_ in log] == pytest.approx([O_S + lat + k * S / bw + O_R] * k, rel=1e-12)
    # One source to k destinations: its injection link is shared.
    _, _, log, _ = run_traffic(topo, {0: [(dst - d, S, 0) for d in range(k)]}, model="flow", o_s=O_S, o_r=O_R)
    assert [t for t, *_ in log] == pytest.approx([O_S + lat + k * S / bw + O_R] * k, rel=1e-12)


def test_rates_are_recomputed_when_a_flow_ends():
    # Two flows into one node, one twice the size of the other: both at B/2 until the small
    # one ends at 2S/B, then the large one alone at B for its remaining S.
    topo = get_machine("tiny-fattree3").topology
    S, dst = 100_000, 15
    lat, bw = _path(topo, 0, dst)
    _, _, log, _ = run_traffic(topo, {0: [(dst, S, 0)], 1: [(dst, 2 * S, 0)]}, model="flow", o_s=O_S, o_r=O_R)
    assert [t for t, *_ in log] == pytest.approx([O_S + lat + 2 * S / bw + O_R, O_S + lat + 3 * S / bw + O_R], rel=1e-12)


def test_a_flow_throttled_elsewhere_leaves_the_rest_to_the_others():
    # Node 0 sends to 14 and 15; node 1 to 15. Node 15's ejection is shared by two flows,
    # node 0's injection by two: each gets B/2, whatever the other link leaves unused.
    topo = FatTree.from_radix(radix=8, levels=2)
    S = 100_000
    lat, bw = _path(topo, 0, 15)
    _, _, log, _ = run_traffic(topo, {0: [(14, S, 0), (15, S, 0)], 1: [(15, S, 0)]}, model="flow", o_s=O_S, o_r=O_R)
    assert [t for t, *_ in log] == pytest.approx([O_S + lat + 2 * S / bw + O_R] * 3, rel=1e-12)


def test_all_to_all_is_bounded_by_the_most_loaded_link():
    topo = FatTree.from_radix(radix=8, levels=2, taper=3.0)  # the leaf uplinks are the bottleneck
    n, S = topo.n_nodes, 16 * 1024
    msgs = {s: [(d, S, 0) for d in range(n) if d != s] for s in range(n)}
    _, net, log, _ = run_traffic(topo, msgs, model="flow", o_s=O_S, o_r=O_R)
    assert len(log) == n * (n - 1)
    makespan = max(t for t, *_ in log)
    st_ = net.stats()
    bound = float((st_.link_bytes / topo.link_bw).max())
    assert bound <= makespan <= 1.25 * bound + 1e-5
    # Link statistics: the same bytes as the ideal model (same routes), utilization in [0, 1].
    _, net_i, _, _ = run_traffic(topo, msgs, model="ideal")
    assert np.array_equal(st_.link_bytes, net_i.stats().link_bytes)
    u = st_.link_utilization
    assert (u >= 0).all() and (u <= 1 + 1e-9).all() and u.max() > 0.5
    assert st_.link_max_queue.max() == 0 and st_.contention
    assert st_.flows == n * (n - 1) and st_.flow_recomputes >= 1 and st_.flow_touched >= st_.flows


def test_per_job_statistics_match_the_ideal_model():
    topo = get_machine("tiny-torus").topology
    msgs = {0: [(1, 1000, 5), (21, 2000, 5)], 3: [(2, 500, 6), (3, 700, 6)]}
    _, net_f, _, _ = run_traffic(topo, msgs, model="flow", o_s=O_S, o_r=O_R)
    _, net_i, _, _ = run_traffic(topo, msgs, model="ideal")
    f, i = net_f.stats(), net_i.stats()
    assert (f.job_bytes, f.job_hop_bytes, f.job_messages) == (i.job_bytes, i.job_hop_bytes, i.job_messages)
    assert f.messages == 3 and f.intra_node_messages == 1 and f.chunks == 0


@pytest.mark.parametrize("family", ["tiny-dragonfly", "tiny-torus", "fattree-r8"])
def test_simultaneous_starts_in_any_order_give_the_same_deliveries(monkeypatch, family):
    # Bit for bit, local starts and ends (and the solves beside them) included: each batch's
    # rates depend on its final flows only.
    monkeypatch.setattr(flow_module, "_LOCAL_MIN", 0)
    monkeypatch.setattr(flow_module, "_NEAR_PART", 1)
    monkeypatch.setattr(flow_module, "_NEAR_GROUPS", 1 << 30)  # (also where several components change at once)
    topo = FatTree.from_radix(radix=8, levels=3) if family == "fattree-r8" else get_machine(family).topology
    n = topo.n_nodes
    fwd = {s: [((s * 5 + k) % n, 3000 * k + 100, 0) for k in range(1, 5)] for s in range(n)}
    rev = {s: list(reversed(m)) for s, m in reversed(fwd.items())}
    _, net, a, _ = run_traffic(topo, fwd, model="flow", o_s=O_S, o_r=O_R)
    _, _, b, _ = run_traffic(topo, rev, model="flow", o_s=O_S, o_r=O_R)
    assert a == b and net.stats().flow_local > 0


def test_only_the_connected_flows_are_recomputed(monkeypatch):
    # Two flows on disjoint routes (inside two different leaves): each start and end touches
    # its own flow only.
    monkeypatch.setattr(FlowSolver, "local", False)
    topo = FatTree.from_radix(radix=8, levels=2)
    disjoint = {0: [(1, 50_000, 0)], 4: [(5, 80_000, 0)]}
    _, net, log, _ = run_traffic(topo, disjoint, model="flow", o_s=O_S, o_r=O_R)
    st_ = net.stats()
    assert len(log) == 2 and st_.flow_touched_max == 1 and st_.flow_local == 0
    # Flows sharing a link form one component: both are recomputed together.
    shared = {0: [(1, 50_000, 0)], 4: [(1, 80_000, 0)]}
    _, net, slog, _ = run_traffic(topo, shared, model="flow", o_s=O_S, o_r=O_R)
    assert net.stats().flow_touched_max == 2
    # With local updates, a start onto idle links and an end that frees no one's bottleneck
    # recompute nothing, and the deliveries are the same.
    monkeypatch.setattr(FlowSolver, "local", True)
    monkeypatch.setattr(flow_module, "_LOCAL_MIN", 0)  # (components this small are recomputed by default)
    _, net, log2, _ = run_traffic(topo, disjoint, model="flow", o_s=O_S, o_r=O_R)
    st_ = net.stats()
    assert log2 == log and st_.flow_recomputes == 0 and st_.flow_local == 4
    # The second flow onto the shared, saturated link, and the end that frees it, are
    # solved with the flows beside them alone (the others' rates fixed), where a region may
    # be as large as its component...
    monkeypatch.setattr(flow_module, "_NEAR_PART", 1)
    _, net, slog2, _ = run_traffic(topo, shared, model="flow", o_s=O_S, o_r=O_R)
    st_ = net.stats()
    assert st_.flow_local == 4 and st_.flow_recomputes == 0
    assert [x[0] for x in slog2] == pytest.approx([x[0] for x in slog], rel=1e-12)
    # ... and by default, where it may hold a quarter of it at most (none of two flows), they
    # recompute the component (the first start and the last end still change no other rate).
    monkeypatch.setattr(flow_module, "_NEAR_PART", 4)
    _, net, slog3, _ = run_traffic(topo, shared, model="flow", o_s=O_S, o_r=O_R)
    st_ = net.stats()
    assert st_.flow_local == 2 and st_.flow_recomputes == 2
    assert [x[0] for x in slog3] == pytest.approx([x[0] for x in slog], rel=1e-12)


def test_changes_in_several_components_at_once_are_recomputed_together(monkeypatch):
    # Two components alike (two flows into node 1, two into node 5, each pair sharing its
    # ejection link): their starts and ends come at the same instants. One component alone
    # is solved beside its changes; two at once are recomputed together, by default.
    monkeypatch.setattr(flow_module, "_LOCAL_MIN", 0)
    monkeypatch.setattr(flow_module, "_NEAR_PART", 1)
    topo = FatTree.from_radix(radix=8, levels=2)
    one = {0: [(1, 50_000, 0)], 2: [(1, 80_000, 0)]}
    two = {**one, 4: [(5, 50_000, 0)], 6: [(5, 80_000, 0)]}
    _, net, log1, _ = run_traffic(topo, one, model="flow", o_s=O_S, o_r=O_R)
    st_ = net.stats()
    assert st_.flow_recomputes == 0 and st_.flow_local == 4
    _, net, log2, _ = run_traffic(topo, two, model="flow", o_s=O_S, o_r=O_R)
    st_ = net.stats()
    # (Each component's first start, onto idle links, and last end change no other rate.)
    assert st_.flow_local == 4 and st_.flow_recomputes == 4 and st_.flow_touched == 6
    monkeypatch.setattr(flow_module, "_NEAR_GROUPS", 2)
    _, net, log3, _ = run_traffic(topo, two, model="flow", o_s=O_S, o_r=O_R)
    st_ = net.stats()
    assert st_.flow_local == 8 and st_.flow_recomputes == 0
    # The same deliveries every way: node 1's are those of the component alone.
    assert [x[0] for x in log2] == pytest.approx([x[0] for x in log3], rel=1e-12)
    assert sorted(x[0] for x in log2 if x[1] in (0, 2)) == pytest.approx(sorted(x[0] for x in log1), rel=1e-12)


@pytest.mark.parametrize("cache_size", [1, 3])
def test_the_flow_paths_cache_is_bounded_and_changes_nothing(cache_size):
    # A node caches at most 8 x the topology's route cache of paths (a full cache empties):
    # an all-to-all's n^2 routes must not fill the memory. The deliveries and byte counts
    # are those of an unbounded cache.
    topo = Torus(dims=(4, 3), nodes_per_router=2, cache_size=cache_size)
    n = topo.n_nodes
    msgs = {s: [((s + k) % n, 1000 * k, 0) for k in range(1, n)] * 2 for s in range(n)}
    _, net, log, sent = run_traffic(topo, msgs, model="flow", o_s=O_S, o_r=O_R)
    cap = 8 * cache_size
    assert 0 < len(net.state.flow_paths) <= cap < n * (n - 1)
    _, ref, log_ref, sent_ref = run_traffic(Torus(dims=(4, 3), nodes_per_router=2), msgs, model="flow", o_s=O_S, o_r=O_R)
    assert len(ref.state.flow_paths) == n * (n - 1)
    assert log == log_ref and sent == sent_ref
    assert net.stats().link_bytes.tolist() == ref.stats().link_bytes.tolist()


def _run_flow(topo, msgs, **cfg):
    """run_traffic with any NetworkConfig options of the flow model."""
    sim = Simulator(lookahead=network_lookahead(topo))
    log, sent = [], []
    config = NetworkConfig(model="flow", send_overhead=O_S, recv_overhead=O_R, **cfg)
    net = Network(sim, topo, config, node_cls=Probe, node_args=(log, sent))
    for s, m in msgs.items():
        sim.entity("node", s).send(net.node_eid(s), "go", m, 0.0)
    sim.run()
    return net, sorted(log)


def test_segments_change_counts_not_times_on_an_oblivious_routing():
    topo = get_machine("tiny-fattree3").topology
    msgs = {0: [(15, 1_000_000, 0)], 1: [(15, 300_000, 0)]}
    net1, one = _run_flow(topo, msgs)
    net, seg = _run_flow(topo, msgs, flow_segment="64KiB")
    assert [x[0] for x in seg] == pytest.approx([x[0] for x in one], rel=1e-9)
    assert net1.stats().flows == 2
    assert net.stats().flows == -(-1_000_000 // 65536) + -(-300_000 // 65536)
    assert np.array_equal(net.stats().link_bytes, net1.stats().link_bytes)


def test_adaptive_routing_spreads_simultaneous_flows_over_the_uplinks():
    # Two nodes of one leaf send to two nodes of another leaf whose D-mod-k up ports
    # coincide; adaptive routing picks another uplink for the second flow, so both run at
    # full rate instead of sharing one uplink.
    base = FatTree.from_radix(radix=8, levels=2, taper=3.0)
    npl = base.nodes_per_leaf
    S = 500_000
    pairs = next(((a, d), (b, e)) for a, b, d, e in product(range(npl), range(npl), range(npl, 2 * npl), range(npl, 2 * npl))
                 if a < b and d != e and base.route(a, d)[1] == base.route(b, e)[1])
    msgs = {s: [(d, S, 0)] for s, d in pairs}
    _, _, obl, _ = run_traffic(base, msgs, model="flow", o_s=O_S, o_r=O_R)
    _, _, adp, _ = run_traffic(base.replace(routing="adaptive"), msgs, model="flow", o_s=O_S, o_r=O_R)
    lat, bw = _path(base, *pairs[0])
    up = float(base.link_bw[base.route(*pairs[0])[1]])
    assert max(t for t, *_ in obl) == pytest.approx(O_S + lat + 2 * S / up + O_R, rel=1e-9)
    assert max(t for t, *_ in adp) == pytest.approx(O_S + lat + S / min(bw, up) + O_R, rel=1e-9)


def test_zero_byte_messages_and_overheads_below_the_lookahead():
    topo = get_machine("tiny-fattree3").topology
    _, net, log, sent = run_traffic(topo, {0: [(1, 0, 0), (15, 10, 0)]}, model="flow")  # o_s = o_r = 0
    la = net.sim.lookahead
    lat, _ = _path(topo, 0, 1)
    # Within one switch the route's latency is below the lookahead: the start waits for it.
    assert log[0][0] == pytest.approx(max(lat, la) + la, rel=1e-12) and log[0][3] == 0
    assert len(log) == 2 and len(sent) == 2


# -- configuration ---------------------------------------------------------------------------
def test_bad_flow_configuration_is_named():
    with pytest.raises(NetworkConfigError, match="flow_segment must be a whole number of bytes >= 1, got 0"):
        NetworkConfig(model="flow", flow_segment=0)
    with pytest.raises(NetworkConfigError, match="flow_segment must be a whole number of bytes >= 1, got '-1KiB'"):
        NetworkConfig(model="flow", flow_segment="-1KiB")
    with pytest.raises(NetworkConfigError, match="flow_segment is an option of the flow model only"):
        NetworkConfig(model="packet", flow_segment=4096)
    with pytest.raises(NetworkConfigError, match="chunk_size is an option of the packet model only"):
        NetworkConfig(model="flow", chunk_size="8KiB")
    assert NetworkConfig(model="flow", chunk_size=4096, flow_segment="1MiB").flow_segment == 1 << 20
    assert NetworkConfig(model="flow").flow_segment is None
    # The ideal model ignores it, as it ignores chunk_size: a flow run's ideal baseline.
    assert NetworkConfig(model="ideal", flow_segment=4096, chunk_size=1024).flow_segment == 4096


# -- apps --------------------------------------------------------------------------------------
@pytest.mark.parametrize("machine,name,ranks,args,placement", [
    ("tiny-fattree3", "alltoall", 16, {"nbytes": 20_000, "iters": 2}, "contiguous"),
    ("tiny-torus", "stencil3d", 32, {"face_bytes": 100_000, "iters": 2}, "contiguous"),
    # Completion times that the kernel's clock reaches an ulp early (now + (t - now) < t).
    ("tiny-torus", "stencil3d", 32, {"face_bytes": 100_000, "iters": 2}, "random"),
])
def test_an_app_on_the_flow_model_lies_between_ideal_and_packet(machine, name, ranks, args, placement):
    res = {m: run_app(machine, name, ranks, ranks_per_node=1, network=m, seed=5, placement=placement, comm=None, **args)
           for m in ("ideal", "flow", "packet")}
    ideal, flow, packet = (res[m].runtime for m in ("ideal", "flow", "packet"))
    assert ideal * (1 - 1e-9) <= flow <= 1.5 * packet
    assert res["flow"].network_bytes == res["ideal"].network_bytes
    assert res["flow"].messages == res["packet"].messages
    # Deterministic.
    again = run_app(machine, name, ranks, ranks_per_node=1, network="flow", seed=5, placement=placement, comm=None, **args)
    assert again.runtime == flow


@pytest.mark.parametrize("walk", [0, 10_000])
def test_components_found_by_sweeps_or_by_walking_agree(monkeypatch, walk):
    # Components above a size are found by numpy sweeps over the flows in flight and solved
    # together by maxmin_rates, smaller ones found by walking the link sets and solved one by
    # one by maxmin_local: either way, the same rates, deliveries and counts.
    import models.network.flow as flow

    monkeypatch.setattr(flow.FlowSolver, "local", False)  # (local updates would keep most components from a solve)
    kw = dict(ranks_per_node=1, network="flow", placement="random", seed=2, iters=2, comm=None, along="x,y")
    ref = run_app("tiny-dragonfly", "sub-a2a", 64, **kw)
    default = flow._WALK
    monkeypatch.setattr(flow, "_WALK", walk)
    monkeypatch.setattr(flow, "_SMALL", walk)
    got = run_app("tiny-dragonfly", "sub-a2a", 64, **kw)
    assert ref.net.flow_touched_max > default  # the default switches to sweeps in this run
    assert (got.runtime, got.events) == (ref.runtime, ref.events)
    assert (got.net.flow_touched, got.net.flow_touched_max) == (ref.net.flow_touched, ref.net.flow_touched_max)
    assert got.net.link_bytes.tolist() == ref.net.link_bytes.tolist()


@pytest.mark.parametrize("quantum", [None, 1e-6])
def test_leaving_out_private_links_changes_no_rate(monkeypatch, quantum):
    # Links of three capacities, as on a Gemini torus (injection 6, X and Z 9.36, Y 4.68
    # GB/s): the walk leaves most private links out of a component's problem. Solving the
    # problems of one recomputation together with maxmin_rates, or every component whole
    # with maxmin_rates (numpy sweeps, nothing left out), gives the same rates, deliveries
    # and counts, bit for bit.
    import models.network.flow as flow

    topo = Torus(dims=(4, 3, 4), nodes_per_router=2, link_bw="4.68GB/s", link_mult=(2, 1, 2),
                 inject_bw="6GB/s")
    machine = Machine(name="gemini-like", topology=topo, cores_per_node=4, flops_per_node="100GF",
                      mem_bw_per_node="20GB/s")
    net = NetworkConfig(model="flow", flow_quantum=quantum)
    kw = dict(ranks_per_node=1, network=net, placement="random", seed=3, comm=None, face_bytes=60_000, iters=2)
    monkeypatch.setattr(flow, "_BATCH", 10**9)  # small components one by one in Python
    ref = run_app(machine, "stencil3d", 64, **kw)
    monkeypatch.setattr(flow, "_BATCH", 1)  # all of one recomputation together, by numpy
    batched = run_app(machine, "stencil3d", 64, **kw)
    monkeypatch.setattr(flow, "_WALK", 0)
    monkeypatch.setattr(flow, "_SMALL", 0)
    whole = run_app(machine, "stencil3d", 64, **kw)
    for got in (batched, whole):
        assert (got.runtime, got.events) == (ref.runtime, ref.events)
        assert (got.net.flow_touched, got.net.flow_touched_max) == (ref.net.flow_touched, ref.net.flow_touched_max)
        assert got.net.link_bytes.tolist() == ref.net.link_bytes.tolist()


def _df_ugal_machine() -> Machine:
    """A small dragonfly with UGAL routing (adaptive: each segment's path chosen anew)."""
    return Machine(name="df-ugal", topology=Dragonfly(a=4, p=2, h=2, routing="ugal"), cores_per_node=4,
                   flops_per_node="100GF", mem_bw_per_node="20GB/s")


@pytest.mark.parametrize("quantum", [None, 1e-6])
def test_kept_components_match_walks_with_segments_and_adaptive_routes(monkeypatch, quantum):
    # Batched recomputations take a component kept since its last solve (merged by starts,
    # split where an end may disconnect it) instead of walking it. With segments (a flow
    # ends and restarts, on a new UGAL route) the runs are the same, bit for bit, as solving
    # every component after a walk, one by one.
    import models.network.flow as flow

    machine = _df_ugal_machine()
    net = NetworkConfig(model="flow", flow_quantum=quantum, flow_segment=16_384)
    kw = dict(ranks_per_node=1, network=net, placement="random", seed=4, comm=None, nbytes=50_000, iters=2)
    monkeypatch.setattr(flow, "_BATCH", 10**9)
    ref = run_app(machine, "alltoall", 32, **kw)
    monkeypatch.setattr(flow, "_BATCH", 1)
    got = run_app(machine, "alltoall", 32, **kw)
    assert ref.net.flows > 32 * 31  # segments
    assert (got.runtime, got.events) == (ref.runtime, ref.events)
    assert (got.net.flow_touched, got.net.flow_touched_max) == (ref.net.flow_touched, ref.net.flow_touched_max)
    assert got.net.link_bytes.tolist() == ref.net.link_bytes.tolist()


@pytest.mark.parametrize("quantum", [None, 1e-6])
@pytest.mark.parametrize("case", ["df-ugal-segments", "gemini-torus"])
def test_kept_components_without_a_walk_match_walking_every_one(monkeypatch, quantum, case):
    # Recomputations of a few changed links take a larger component kept since its last
    # solve (not dirty) from its _Comp, without a walk, and solve it from the flows' rows of
    # routes; a walk of a dirty one keeps what it found. Against walking and solving every
    # component in Python: the same runs, bit for bit.
    import models.network.flow as flow

    if case == "df-ugal-segments":
        machine = _df_ugal_machine()
        net = NetworkConfig(model="flow", flow_quantum=quantum, flow_segment=16_384)
        app, ranks, args = "alltoall", 32, dict(nbytes=50_000, iters=2)
    else:
        topo = Torus(dims=(4, 3, 4), nodes_per_router=2, link_bw="4.68GB/s", link_mult=(2, 1, 2),
                     inject_bw="6GB/s")
        machine = Machine(name="gemini-like", topology=topo, cores_per_node=4, flops_per_node="100GF",
                          mem_bw_per_node="20GB/s")
        net = NetworkConfig(model="flow", flow_quantum=quantum)
        app, ranks, args = "alltoall", 64, dict(nbytes=60_000, iters=2)
    kw = dict(ranks_per_node=1, network=net, placement="random", seed=4, comm=None, **args)
    monkeypatch.setattr(flow.FlowSolver, "local", False)  # every start and end recomputes
    walks = []
    walk = flow.FlowSolver._walk
    monkeypatch.setattr(flow.FlowSolver, "_walk", lambda self, seed: walks.append(seed) or walk(self, seed))

    class AlwaysDirty(flow._Comp):
        __slots__ = ()
        dirty = property(lambda self: True, lambda self, v: None)

    kept = flow._Comp
    monkeypatch.setattr(flow, "_Comp", AlwaysDirty)  # no component kept: every one walked
    monkeypatch.setattr(flow, "_BATCH", 10**9)  # every recomputation by _recompute
    monkeypatch.setattr(flow, "_WALK", 10**9)
    monkeypatch.setattr(flow, "_SMALL", 10**9)  # and solved by maxmin_local
    ref = run_app(machine, app, ranks, **kw)
    n_ref = len(walks)
    assert ref.net.flow_touched_max > 16  # (some walks below give up for sweeps)
    monkeypatch.setattr(flow, "_Comp", kept)
    monkeypatch.setattr(flow, "_WALK", 16)
    # Components kept: those not dirty solved by maxmin_local (problem gathered from the
    # kept rows), or all of them by numpy from the rows of routes.
    for small in (10**9, 0):
        monkeypatch.setattr(flow, "_SMALL", small)
        del walks[:]
        got = run_app(machine, app, ranks, **kw)
        assert len(walks) < n_ref / 2  # most components taken without a walk
        assert (got.runtime, got.events) == (ref.runtime, ref.events)
        assert (got.net.flow_touched, got.net.flow_touched_max) == (ref.net.flow_touched, ref.net.flow_touched_max)
        assert got.net.flow_recomputes == ref.net.flow_recomputes
        assert got.net.link_bytes.tolist() == ref.net.link_bytes.tolist()


_LOCAL_CASES = {
    "torus-alltoall": ("tiny-torus", "alltoall", 64, dict(nbytes=40_000, iters=2), "contiguous", {}),
    "fattree-stencil": ("fattree-r8", "stencil3d", 27, dict(face_bytes=20_000, iters=2), "random", {}),
    "dragonfly-ugal-segments": (None, "alltoall", 16, dict(nbytes=50_000, iters=1), "random", {"flow_segment": 16_384}),
    "torus-pairs-quantum": ("tiny-torus", "pairs", 64, dict(nbytes=30_000, iters=3), "random", {"flow_quantum": 1e-6}),
}


@pytest.mark.parametrize("case", sorted(_LOCAL_CASES))
def test_local_starts_and_ends_keep_the_rates_max_min_fair(monkeypatch, case):
    # After every recomputation instant, the rates of all flows in flight are those the
    # reference solver gives for them all at once; local starts and ends (no recomputation)
    # happen, and the run is the one without them, to the solver's margins.
    import models.network.flow as flow

    name, app, ranks, args, placement, cfg = _LOCAL_CASES[case]
    if name is None:
        machine = _df_ugal_machine()
    elif name == "fattree-r8":
        machine = Machine(name=name, topology=FatTree.from_radix(radix=8, levels=3), cores_per_node=4,
                          flops_per_node="100GF", mem_bw_per_node="20GB/s")
    else:
        machine = get_machine(name)
    kw = dict(ranks_per_node=1, network=NetworkConfig(model="flow", **cfg), placement=placement, seed=3, comm=None,
              **args)
    # (Components this small are recomputed by default, their regions limited to a quarter
    # of them, and instants that change several components recomputed.)
    monkeypatch.setattr(flow, "_LOCAL_MIN", 0)
    monkeypatch.setattr(flow, "_NEAR_PART", 1)
    monkeypatch.setattr(flow, "_NEAR_GROUPS", 1 << 30)
    checked = []
    resolve = flow.FlowSolver._resolve

    def checked_resolve(self, x):
        resolve(self, x)
        if self._q:
            return  # between boundaries the rates wait (the quantum's own rule)
        fl = [f for f in self._row if f is not None]
        if not fl:
            return
        num: dict[int, int] = {}
        routes = [[num.setdefault(l, len(num)) for l in f.route] for f in fl]
        want = reference_maxmin(routes, [self._capl[l] for l in num])
        for f, w in zip(fl, want):
            assert f.rate == pytest.approx(float(w), rel=1e-7)
        checked.append(len(fl))

    monkeypatch.setattr(flow.FlowSolver, "_resolve", checked_resolve)
    got = run_app(machine, app, ranks, **kw)
    monkeypatch.setattr(flow.FlowSolver, "local", False)
    ref = run_app(machine, app, ranks, **kw)
    assert ref.net.flow_local == 0
    if cfg.get("flow_quantum"):
        # With a quantum every change waits for a boundary: no local updates, the same run.
        assert got.net.flow_local == 0 and (got.runtime, got.events) == (ref.runtime, ref.events)
        return
    assert checked and max(checked) > 1
    assert got.net.flow_local > 0 and ref.net.flow_recomputes > got.net.flow_recomputes
    assert got.runtime == pytest.approx(ref.runtime, rel=1e-9)
    assert got.net.link_bytes.tolist() == ref.net.link_bytes.tolist()


# -- the rate quantum --------------------------------------------------------------------------
def _boundary(t, q):
    import math

    b = math.ceil(t / q) * q
    return b + q if b < t else b


def test_with_a_quantum_a_flow_starts_at_the_next_multiple():
    topo = get_machine("tiny-fattree3").topology
    src, dst, S, q = 0, 15, 100_000, 1e-6
    lat, bw = _path(topo, src, dst)
    _, _, log, _ = run_traffic(topo, {src: [(dst, S, 0)]}, model="flow", o_s=O_S, o_r=O_R, flow_quantum=q)
    start = _boundary(O_S + lat, q)
    assert start > O_S + lat
    assert log[0][0] == pytest.approx(start + S / bw + O_R, rel=1e-12)


def test_with_a_quantum_freed_capacity_waits_for_the_next_multiple():
    # As test_rates_are_recomputed_when_a_flow_ends: the small flow still ends at its own
    # time (both start together at B/2), the large one speeds up at the next multiple only.
    topo = get_machine("tiny-fattree3").topology
    S, dst, q = 100_000, 15, 3e-6
    lat, bw = _path(topo, 0, dst)
    _, _, log, _ = run_traffic(topo, {0: [(dst, S, 0)], 1: [(dst, 2 * S, 0)]}, model="flow", o_s=O_S, o_r=O_R,
                               flow_quantum=q)
    t0 = _boundary(O_S + lat, q)
    small_end = t0 + 2 * S / bw
    b = _boundary(small_end, q)
    large_end = b + (2 * S - (b - t0) * bw / 2) / bw
    assert [t for t, *_ in log] == pytest.approx([small_end + O_R, large_end + O_R], rel=1e-12)
    assert b > small_end


@pytest.mark.parametrize("q", [1e-7, 1e-6])
def test_a_quantum_moves_an_apps_times_by_little_and_its_bytes_not_at_all(monkeypatch, q):
    # (Against the exact mode recomputing at every instant: local updates off.)
    monkeypatch.setattr(FlowSolver, "local", False)
    exact = run_app("tiny-fattree3", "alltoall", 16, network=NetworkConfig(model="flow"), nbytes=20_000, iters=2)
    quant = run_app("tiny-fattree3", "alltoall", 16, network=NetworkConfig(model="flow", flow_quantum=q),
                    nbytes=20_000, iters=2)
    st, st0 = quant.net, exact.net
    assert np.array_equal(st.link_bytes, st0.link_bytes)
    # Never over capacity; later than exact, by a few quanta per round of messages at most.
    assert np.nanmax(st.link_utilization) <= 1 + 1e-9
    assert exact.runtime < quant.runtime < exact.runtime + 2 * 15 * 2 * q
    assert st.flow_recomputes <= st0.flow_recomputes


def test_bad_flow_quantum_is_named():
    with pytest.raises(NetworkConfigError, match="flow_quantum must be > 0 seconds"):
        NetworkConfig(model="flow", flow_quantum=0)
    with pytest.raises(NetworkConfigError, match="flow_quantum is an option of the flow model only"):
        NetworkConfig(model="packet", flow_quantum="1us")
    assert NetworkConfig(model="flow", flow_quantum="1us").flow_quantum == pytest.approx(1e-6)


def test_ends_an_ulp_apart_are_one_instant(monkeypatch):
    # A flow alone of 3k bytes and three flows of k sharing a link (a third of its capacity
    # each) end at the same time in exact arithmetic; for k = 16,667 the roundings put them
    # an ulp apart. Segments due within _END_TOL of an instant end in it: one instant.
    topo = FatTree.from_radix(radix=8, levels=2)
    k = 16_667
    msgs = {4: [(5, 3 * k, 0)], 0: [(1, k, 0)], 2: [(1, k, 0)], 3: [(1, k, 0)]}
    _, _, log, _ = run_traffic(topo, msgs, model="flow", o_s=O_S, o_r=O_R)
    assert len({x[0] for x in log}) == 1 and len(log) == 4
    monkeypatch.setattr(flow_module, "_END_TOL", 0.0)
    _, _, log0, _ = run_traffic(topo, msgs, model="flow", o_s=O_S, o_r=O_R)
    times = sorted({x[0] for x in log0})
    assert len(times) == 2 and times[1] == math.nextafter(times[0], 1.0)
