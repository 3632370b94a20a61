"""Fat-tree allocators: Slurm-like tree fit, Pollard/Jain T1/T2/T3 and link reservation.

The isolation invariant is checked against the topology's own routing: for T1/T2/T3 over
*every* minimal route (each choice of up ports, i.e. every ECMP alternative) between nodes
of the same job; for the link-reserving allocator over its reserved links, through the
routes the network would take (``routes_for``).
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alloc_helpers import Driver, build, machine
from scheduler.allocators.isolating import JigsawInfo, reserved_link_ids
from scheduler.errors import UserError

FT = ["ft3", "ft3-taper", "ft2"]


@lru_cache(maxsize=None)
def leaf_pair_links(topo_name: str, la: int, lb: int) -> frozenset:
    """Switch links on every minimal route from a node of leaf ``la`` to one of leaf ``lb``."""
    topo = machine(topo_name)
    s, d = la * topo.nodes_per_leaf, lb * topo.nodes_per_leaf
    W = [topo.uplinks_per_leaf] + ([topo.up[2] * topo.parallel[2]] if topo.levels >= 3 else [])
    out = set()
    for ports in itertools.product(*(range(w) for w in W)):
        r = topo.route_via(s, d, list(ports))
        out.update(r[1:-1])  # drop the injection and ejection links (one node's own)
    return frozenset(out)


def job_links_all_routes(topo_name: str, nodes: np.ndarray) -> set:
    topo = machine(topo_name)
    leaves = sorted(set((np.asarray(nodes) // topo.nodes_per_leaf).tolist()))
    links = set()
    for a in leaves:
        for b in leaves:
            if a != b:
                links |= leaf_pair_links(topo_name, a, b)
    return links


def assert_no_shared_link(owner_of_links: list[tuple[int, set]]) -> None:
    seen: dict[int, int] = {}
    for jid, links in owner_of_links:
        for l in links:
            assert seen.setdefault(l, jid) == jid, f"link {l} carries jobs {seen[l]} and {jid}"


sizes = st.lists(st.tuples(st.booleans(), st.integers(1, 130), st.integers(0, 1000)), min_size=1, max_size=30)


# ------------------------------------------------------------------------------------ treefit
def test_treefit_picks_the_lowest_best_fitting_switch_then_best_fit_leaves():
    topo = machine("ft3")  # 3 nodes per leaf, 9 per pod
    d = Driver(build("treefit", "ft3"))
    assert d.arrive(2).tolist() == [0, 1]  # one leaf suffices: the fullest that fits is any empty one -> first
    assert d.arrive(1).tolist() == [2]  # best fit: leaf 0 has exactly 1 free
    assert d.arrive(2).tolist() == [3, 4]
    # 4 nodes: no leaf holds them; pod 0 has 4 free (5, 6..8) and is the best-fitting pod.
    got = d.arrive(4)
    assert got.tolist() == [5, 6, 7, 8]
    # 10 nodes: no pod holds them: the top level; pods' leaves best fit, whole leaves first.
    got = d.arrive(10)
    assert len(set((got // topo.nodes_per_leaf).tolist())) == 4  # 3 whole leaves + one leaf for the last node
    d.drain()


def test_treefit_on_a_dragonfly_stays_in_one_group_when_it_can():
    topo = machine("dragonfly")
    d = Driver(build("treefit", "dragonfly"))
    got = d.arrive(6)
    assert len(np.unique(topo.group_of_node[got])) == 1
    got = d.arrive(8)  # a whole group
    assert len(np.unique(topo.group_of_node[got])) == 1


# -------------------------------------------------------------------------------------- t123
def check_t123_rules(alloc, state) -> None:
    """Algorithm 1 of Pollard et al.: a T3 job shares its pods with no other T3 job (and,
    under ``t3_rule="whole-pods"``, with no T2 job either) and its leaves only with T1 jobs."""
    tree = alloc.tree
    leaf_of = lambda nodes: set((np.asarray(nodes) // tree.nodes_per_leaf).tolist())  # noqa: E731
    pod_of = lambda nodes: set((np.asarray(nodes) // tree.nodes_per_pod).tolist())  # noqa: E731
    jobs = {jid: np.flatnonzero(state.owner == jid) for jid in np.unique(state.owner[state.owner >= 0]).tolist()}
    kinds = {jid: alloc.job_type(len(n)) for jid, n in jobs.items()}
    leaf_jobs: dict[int, set] = {}
    pod_jobs: dict[int, set] = {}
    for jid, n in jobs.items():
        k = kinds[jid]
        if k == 1:
            assert len(leaf_of(n)) == 1, "a T1 job lies within one leaf"
        if k == 2:
            assert len(pod_of(n)) == 1, "a T2 job lies within one pod"
        for l in leaf_of(n):
            leaf_jobs.setdefault(l, set()).add(jid)
        for p in pod_of(n):
            pod_jobs.setdefault(p, set()).add(jid)
    for l, js in leaf_jobs.items():
        big = [j for j in js if kinds[j] > 1]
        assert len(big) <= 1, f"leaf {l} holds two T2/T3 jobs {big}"
    for jid, k in kinds.items():
        if k == 3:
            # The T3 job owns its pods: no other T3 job (and, strictly, no T2 job) in them.
            lowest = 2 if alloc.t3_rule == "whole-pods" else 3
            for p in state.placements[jid].pods:
                others = [j for j in pod_jobs.get(p, ()) if j != jid and kinds[j] >= lowest]
                assert not others, f"T3 job {jid} shares pod {p} with {others}"
            # and only T1 jobs on its leaves
            for l in leaf_of(jobs[jid]):
                assert all(kinds[j] == 1 for j in leaf_jobs[l] if j != jid)


@pytest.mark.parametrize("rule", ["algorithm", "whole-pods"])
@pytest.mark.parametrize("topo", FT + ["ft3-par"])
@settings(max_examples=60, deadline=None, derandomize=True)
@given(seq=sizes)
def test_t123_rules_and_isolation_over_every_ecmp_route(topo, rule, seq):
    alloc = build("t123", topo, t3_rule=rule)
    d = Driver(alloc)
    for arrive, n, k in seq:
        if arrive:
            d.arrive(1 + (n - 1) % alloc.n_nodes)
            check_t123_rules(alloc, d.state)
            assert_no_shared_link([(jid, job_links_all_routes(topo, nodes)) for jid, (_, nodes) in d.running.items()])
        else:
            d.depart(k)
    d.drain()


@pytest.mark.parametrize("rule", ["algorithm", "whole-pods"])
def test_t123_heuristics_fill_fullest_leaves_and_pods_and_keep_big_jobs_apart(rule):
    # ft3: 3 nodes per leaf, 3 leaves per pod, 6 pods.
    d = Driver(build("t123", "ft3", t3_rule=rule))
    a = d.arrive(2)  # T1 -> leaf 0
    assert a.tolist() == [0, 1]
    assert d.arrive(1).tolist() == [2]  # T1: the fullest leaf with room (leaf 0)
    b = d.arrive(5)  # T2: fullest pod that fits (pod 0, 6 eligible free), emptiest leaves 1, 2
    assert b.tolist() == [3, 4, 5, 6, 7]
    c = d.arrive(4)  # T2: leaves 1 and 2 are claimed, pod 0 has no eligible room -> pod 1
    assert set((c // 9).tolist()) == {1}
    e = d.arrive(12)  # T3: the emptiest eligible pods (2, then 3), whole leaves
    assert e.tolist() == list(range(18, 30)) and d.state.placements[5].pods == (2, 3)
    f = d.arrive(1)  # T1: the fullest pod with a leaf that has room: pod 0 (1 free node)
    assert f.tolist() == [8]
    g = d.arrive(9)  # T2 of a whole pod: pods 2 and 3 are T3-owned, pod 1 has claimed leaves
    assert g.tolist() == list(range(36, 45))
    # T2 of 4: pod 1 has only leaf 5 unclaimed (3 free). Pod 3 is T3-owned, but its leaves
    # 10 and 11 are unclaimed: Algorithm 1 puts the job there (the fullest pod that fits),
    # the whole-pods rule in the empty pod 5.
    want = [30, 31, 32, 33] if rule == "algorithm" else [45, 46, 47, 48]
    assert d.arrive(4).tolist() == want


def test_t123_t3_rule_lets_a_t3_job_share_a_pod_with_a_t2_job_on_other_leaves():
    # ft3: 3 nodes per leaf, 9 per pod, 6 pods (54 nodes). Five T2 jobs of 4 nodes take two
    # leaves of each of pods 0..4 (the fullest pod first: each goes to a new pod since a pod
    # keeps only one unclaimed leaf); pod 5 stays empty.
    for rule, fits in (("algorithm", True), ("whole-pods", False)):
        d = Driver(build("t123", "ft3", t3_rule=rule))
        for _ in range(5):
            d.arrive(4)
        assert sorted(set(p for i in d.state.placements.values() for p in i.pods)) == [0, 1, 2, 3, 4]
        # A T3 job of 12 nodes: under Algorithm 1, pod 5 (9) plus the free leaf of pod 0 (3);
        # under the whole-pods rule only pod 5 is eligible and the job does not fit.
        got = d.arrive(12)
        if fits:
            assert got.tolist() == [6, 7, 8] + list(range(45, 54))
            assert d.state.placements[6].pods == (0, 5)
        else:
            assert got is None
    with pytest.raises(UserError, match="t3_rule must be one of algorithm, whole-pods"):
        build("t123", "ft3", t3_rule="strict")


# ------------------------------------------------------------------------------------ jigsaw
def check_jigsaw_rules(alloc, state) -> None:
    tree = alloc.tree
    for jid, info in state.placements.items():
        nodes = np.flatnonzero(state.owner == jid)
        assert isinstance(info, JigsawInfo)
        leaves, counts = np.unique(nodes // tree.nodes_per_leaf, return_counts=True)
        lp = info.leaf_ports
        if info.kind == "leaf":
            assert len(leaves) == 1 and len(lp) == 0 and len(info.l2_ports) == 0
            continue
        assert len(leaves) >= 2
        # Each leaf reserves exactly as many up ports as the job has nodes on it.
        per_leaf = {l: set(lp[lp[:, 0] == l, 1].tolist()) for l in leaves.tolist()}
        for l, c in zip(leaves.tolist(), counts.tolist()):
            assert len(per_leaf[l]) == c
        # Full leaves: k nodes and the same ports; at most one remainder leaf, with fewer
        # nodes, on a subset of them.
        k = info.nodes_per_full_leaf
        pi = set(info.full_leaf_ports)
        assert len(pi) == k
        full = [l for l, c in zip(leaves.tolist(), counts.tolist()) if c == k]
        rest = [l for l, c in zip(leaves.tolist(), counts.tolist()) if c != k]
        assert len(rest) <= 1 and all(per_leaf[l] == pi for l in full)
        assert all(per_leaf[l] < pi for l in rest)
        if info.kind == "pod":
            assert tree.levels == 2 or len(set((leaves // tree.leaves_per_pod).tolist())) == 1
            assert len(info.l2_ports) == 0
            continue
        # Across pods: L2 x of each pod reserves as many spine ports as job leaf ports reach
        # it; the same port indices in every full pod, a subset in the remainder pod.
        l2 = info.l2_ports
        sets = {}
        for p in set((leaves // tree.leaves_per_pod).tolist()):
            for x in range(tree.l2_per_pod):
                want = sum(1 for l in leaves.tolist() if l // tree.leaves_per_pod == p for q in per_leaf[l] if q % tree.l2_per_pod == x)
                have = set(l2[l2[:, 0] == p * tree.l2_per_pod + x, 1].tolist())
                assert len(have) == want
                if want:
                    sets.setdefault(x, []).append(have)
        for x, ss in sets.items():
            big = max(ss, key=len)
            assert all(s <= big for s in ss)
            assert sum(1 for s in ss if s != big) <= 1


def check_jigsaw_isolation(alloc, state, *, all_pairs: bool) -> None:
    topo = alloc.topology
    reserved = [(jid, set(reserved_link_ids(topo, info).tolist())) for jid, info in state.placements.items()]
    assert_no_shared_link(reserved)
    for jid, links in reserved:
        nodes = np.flatnonzero(state.owner == jid)
        assert set(state.reserved_links(jid).tolist()) == links
        route = state.routes_for(jid)
        allowed = links | set(nodes.tolist()) | set((topo.n_nodes + nodes).tolist())
        # One representative pair per pair of leaves covers every distinct route shape.
        leaves = {}
        for v in nodes.tolist():
            leaves.setdefault(v // topo.nodes_per_leaf, v)
        reps = list(leaves.values())
        pairs = [(a, b) for a in reps for b in reps if a != b] if all_pairs else list(zip(reps, reps[1:]))
        for a, b in pairs:
            for key in (0, 1, 7):
                r = route(a, b, key)
                assert r[0] == a and r[-1] == topo.n_nodes + b
                assert set(r) <= allowed, (jid, a, b, set(r) - allowed)
                assert len(r) - 2 == topo.hops(a, b)  # minimal


@pytest.mark.parametrize("topo", FT + ["ft3-par", "ft3-r8"])
@settings(max_examples=60, deadline=None, derandomize=True)
@given(seq=sizes)
def test_jigsaw_rules_and_isolation_on_reserved_links(topo, seq):
    alloc = build("jigsaw", topo)
    d = Driver(alloc)
    for arrive, n, k in seq:
        if arrive:
            d.arrive(1 + (n - 1) % alloc.n_nodes)
            check_jigsaw_rules(alloc, d.state)
        else:
            d.depart(k)
    check_jigsaw_isolation(alloc, d.state, all_pairs=True)
    d.drain()


def test_jigsaw_reaches_high_utilization_with_isolation():
    # Fill an empty Cab-shaped tree (3 levels, 6 pods) with a stream of mixed sizes until
    # nothing more fits: link reservation still packs most of the machine.
    alloc = build("jigsaw", "ft3")
    d = Driver(alloc)
    rng = np.random.default_rng(4)
    fails = 0
    while fails < 30:
        n = int(rng.choice([1, 2, 3, 4, 5, 6, 9, 12, 18]))
        if d.arrive(n) is None:
            fails += 1
    busy = 1 - d.state.n_free / alloc.n_nodes
    assert busy >= 0.9, busy
    check_jigsaw_rules(alloc, d.state)
    check_jigsaw_isolation(alloc, d.state, all_pairs=True)


def test_jigsaw_single_leaf_jobs_reserve_nothing_and_multi_leaf_jobs_take_whole_leaves_first():
    alloc = build("jigsaw", "ft3")  # 3 nodes/leaf, 3 up ports/leaf
    d = Driver(alloc)
    a = d.arrive(3)
    assert d.state.placements[1].kind == "leaf" and not (d.state.leaf_port != -1).any()
    b = d.arrive(7)  # k = 3: two full leaves and a remainder leaf of 1 node, one pod
    info = d.state.placements[2]
    assert info.kind == "pod" and info.nodes_per_full_leaf == 3 and len(info.leaf_ports) == 7
    assert len(set((b // 9).tolist())) == 1 and len(a) == 3


def test_reserved_ports_are_the_trees_up_links_and_their_reverses():
    topo = machine("ft3")
    alloc = build("jigsaw", "ft3")
    d = Driver(alloc)
    d.arrive(20)  # across pods: leaf and L2 ports
    info = d.state.placements[1]
    l2_routers = topo.routers_at_level(2)
    expect = set()
    for rows, routers in ((info.leaf_ports, None), (info.l2_ports, l2_routers)):
        for e, q in rows.tolist():
            up = int(topo.uplinks(e if routers is None else int(routers[e]))[q])
            down = [int(x) for x in np.flatnonzero((topo.link_src == topo.link_dst[up]) & (topo.link_dst == topo.link_src[up]))]
            expect.add(up)
            expect.update(down)  # one reverse link (no parallel links in this tree)
    assert len(info.l2_ports) and set(d.state.reserved_links(1).tolist()) == expect


def test_routes_for_is_a_function_of_the_state():
    alloc = build("jigsaw", "ft3")
    d = Driver(alloc)
    nodes = d.arrive(20)
    st1 = d.state.copy()
    r1 = d.state.routes_for(1)(int(nodes[0]), int(nodes[-1]))
    assert st1.routes_for(1)(int(nodes[0]), int(nodes[-1])) == r1
    mask = d.state.allowed_links(1)
    assert mask.dtype == bool and mask[list(r1)].all()


# ----------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("name", ["t123", "jigsaw", "treefit"])
def test_fat_tree_allocators_refuse_a_torus(name):
    with pytest.raises(UserError, match=f"allocator '{name}' needs a fattree"):
        build(name, "torus")
    with pytest.raises(UserError, match="needs a fattree"):
        build(name, None)


def test_isolating_allocators_refuse_deep_trees():
    from models.topology import FatTree
    from scheduler.allocators import make_allocator

    deep = FatTree.kary_ntree(k=2, n=4)
    for name in ("t123", "jigsaw"):
        with pytest.raises(UserError, match="supports fat-trees of 1 to 3 levels"):
            make_allocator(name, n_nodes=deep.n_nodes, topology=deep)


def test_unknown_option_names_the_valid_ones():
    with pytest.raises(UserError, match="has no option.*gap.*valid options: none"):
        build("jigsaw", "ft3", gap=1)
