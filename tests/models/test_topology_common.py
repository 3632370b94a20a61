"""Invariants every topology family must satisfy: arrays, valid routes, minimal hops
(checked against breadth-first search), diameters, vectorized = scalar, determinism,
caching, partitioning and argument checks."""

from __future__ import annotations

import pickle
from collections import deque

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.errors import TopologyError
from models.topology.partition import SPLIT_TOLERANCE
from models.topology import (
    KIND_DOWN,
    KIND_EJECT,
    KIND_GLOBAL,
    KIND_INJECT,
    KIND_LOCAL,
    KIND_UP,
    Dragonfly,
    FatTree,
    Topology,
    Torus,
)
from models.topology.hashing import pair_hash, pair_hash_np, salt_seed

SMALL = {
    "fattree2-dmodk": lambda: FatTree.from_radix(radix=8, levels=2),
    "fattree3-dmodk": lambda: FatTree.from_radix(radix=8, levels=3, pods=4),
    "fattree3-ecmp": lambda: FatTree.from_radix(radix=8, levels=3, pods=4, routing="ecmp", seed=5),
    "fattree3-adaptive": lambda: FatTree.from_radix(radix=6, levels=3, routing="adaptive"),
    "pgft-parallel": lambda: FatTree(levels=3, down=(3, 2, 4), up=(1, 2, 3), parallel=(1, 2, 2)),
    "fattree-tapered": lambda: FatTree.from_radix(radix=12, levels=2, taper=2.0, pods=6),
    "kary-4-3": lambda: FatTree.kary_ntree(k=4, n=3),
    "torus3d": lambda: Torus(dims=(4, 3, 5), nodes_per_router=2),
    "mesh2d": lambda: Torus.mesh(dims=(5, 4)),
    "mixed": lambda: Torus(dims=(4, 2, 3, 2), wrap=(True, True, False, False), nodes_per_router=3),
    "torus1d": lambda: Torus(dims=(6,)),
    "dragonfly-min": lambda: Dragonfly(a=4, p=2, h=2),
    "dragonfly-val": lambda: Dragonfly(a=4, p=2, h=2, routing="valiant", seed=3),
    "dragonfly-ugal": lambda: Dragonfly(a=4, p=2, h=2, routing="ugal"),
    "dragonfly-multi": lambda: Dragonfly(a=6, p=1, h=3, g=5, arrangement="relative"),
    "dragonfly-cascade": lambda: Dragonfly(a=6, p=2, h=2, g=5, cascade=(2, 3), local_mult=(1, 3)),
    "dragonfly-cascade-val": lambda: Dragonfly(a=8, p=1, h=2, g=6, cascade=(2, 4), routing="valiant"),
    "dragonfly-1group": lambda: Dragonfly(a=5, p=2, h=1, g=1),
    # More than 24 parallel links per group pair: the scalar copy choice runs in numpy.
    "dragonfly-wide": lambda: Dragonfly(a=8, p=1, h=8, g=3, cascade=(2, 4)),
    "dragonfly-wide-val": lambda: Dragonfly(a=8, p=1, h=8, g=3, routing="valiant", seed=2),
}


@pytest.fixture(params=sorted(SMALL), scope="module")
def topo(request) -> Topology:
    return SMALL[request.param]()


def router_distances(t: Topology) -> np.ndarray:
    """All-pairs router hop distances by breadth-first search over router-to-router links.

    On a dragonfly, minimal routes take at most one global link (Kim et al.), so the search
    runs over (router, global links used) states and stops at one global link.
    """
    N, R = t.n_nodes, t.n_routers
    rr = (t.link_src >= N) & (t.link_dst >= N)
    adj: list[list[tuple[int, int]]] = [[] for _ in range(R)]
    for u, v, k in zip(t.link_src[rr] - N, t.link_dst[rr] - N, t.link_kind[rr]):
        adj[int(u)].append((int(v), int(k == KIND_GLOBAL)))
    max_g = 1 if isinstance(t, Dragonfly) else R
    dist = np.full((R, R), -1, dtype=np.int64)
    for s in range(R):
        seen = {(s, 0)}
        dist[s, s] = 0
        q = deque([(s, 0, 0)])
        while q:
            u, gu, du = q.popleft()
            for v, isg in adj[u]:
                gv = gu + isg
                if gv > max_g or (v, gv) in seen:
                    continue
                seen.add((v, gv))
                if dist[s, v] < 0:
                    dist[s, v] = du + 1
                q.append((v, gv, du + 1))
    return dist


def check_path(t: Topology, s: int, d: int, r: tuple[int, ...]) -> None:
    if s == d:
        assert r == ()
        return
    assert t.link_kind[r[0]] == KIND_INJECT and t.link_src[r[0]] == s
    assert t.link_kind[r[-1]] == KIND_EJECT and t.link_dst[r[-1]] == d
    for a, b in zip(r, r[1:]):
        assert t.link_dst[a] == t.link_src[b], (s, d, r)
    assert len(set(r)) == len(r), f"route {s}->{d} repeats a link: {r}"
    inner = np.array(r[1:-1], dtype=np.int64)
    assert ((t.link_src[inner] >= t.n_nodes) & (t.link_dst[inner] >= t.n_nodes)).all()


def test_link_arrays_are_consistent(topo):
    t = topo
    N, R, L = t.n_nodes, t.n_routers, t.n_links
    for arr, dt in ((t.node_router, np.int32), (t.link_src, np.int32), (t.link_dst, np.int32), (t.link_bw, np.float64),
                    (t.link_lat, np.float64), (t.link_kind, np.int8)):
        assert arr.dtype == dt
        assert not arr.flags.writeable
    assert t.node_router.shape == (N,) and t.link_src.shape == (L,)
    assert (t.link_lat > 0).all() and (t.link_bw > 0).all()
    assert t.link_src.min() >= 0 and t.link_dst.max() < N + R
    assert (t.link_src != t.link_dst).all()
    # Injection link i and ejection link N + i belong to node i and its router.
    assert (t.link_kind[:N] == KIND_INJECT).all() and (t.link_kind[N : 2 * N] == KIND_EJECT).all()
    assert (t.link_src[:N] == np.arange(N)).all() and (t.link_dst[:N] == N + t.node_router).all()
    assert (t.link_dst[N : 2 * N] == np.arange(N)).all() and (t.link_src[N : 2 * N] == N + t.node_router).all()
    assert ((t.link_src[2 * N :] >= N) & (t.link_dst[2 * N :] >= N)).all()
    kinds = set(np.unique(t.link_kind[2 * N :]).tolist())
    assert kinds <= {KIND_LOCAL, KIND_UP, KIND_DOWN, KIND_GLOBAL}
    # Every directed router link has a reverse link.
    fwd = set(zip(t.link_src[2 * N :].tolist(), t.link_dst[2 * N :].tolist()))
    assert all((v, u) in fwd for u, v in fwd)


def test_out_and_in_links(topo):
    t = topo
    nv = t.n_nodes + t.n_routers
    seen = np.zeros(t.n_links, dtype=int)
    for v in range(nv):
        out = t.out_links(v)
        assert (t.link_src[out] == v).all() and (np.diff(out) > 0).all()
        seen[out] += 1
        assert (t.link_dst[t.in_links(v)] == v).all()
    assert (seen == 1).all()
    with pytest.raises(TopologyError, match="out of range"):
        t.out_links(nv)


def test_random_routes_are_valid_paths_and_match_vectorized(topo):
    t = topo
    rng = np.random.default_rng(7)
    n = 600
    s = rng.integers(0, t.n_nodes, n)
    d = rng.integers(0, t.n_nodes, n)
    s[:20] = d[:20]  # some self pairs
    k = rng.integers(0, 2**40, n)
    off, links = t.routes(s, d, k)
    assert off.dtype == np.int64 and links.dtype == np.int32 and len(off) == n + 1 and off[0] == 0
    for i in range(n):
        r = t.route(int(s[i]), int(d[i]), int(k[i]))
        check_path(t, int(s[i]), int(d[i]), r)
        assert tuple(links[off[i] : off[i + 1]].tolist()) == r


def test_hops_are_minimal_distances(topo):
    t = topo
    dist = router_distances(t)
    assert (dist >= 0).all(), "router graph must be connected"
    nodes = np.arange(t.n_nodes)
    hm = t.hop_matrix(nodes)
    expect = dist[t.node_router[:, None], t.node_router[None, :]]
    assert (hm == expect).all()
    occupied = np.unique(t.node_router)
    assert t.diameter == dist[np.ix_(occupied, occupied)].max()
    for s in range(0, t.n_nodes, max(1, t.n_nodes // 10)):
        for d in range(0, t.n_nodes, max(1, t.n_nodes // 13)):
            assert t.hops(s, d) == expect[s, d]
            if t.routing not in ("valiant",):
                assert len(t.route(s, d)) - 2 == (expect[s, d] if s != d else -2)


def test_hops_many_and_pair_hop_sum_agree_with_hop_matrix(topo):
    t = topo
    rng = np.random.default_rng(3)
    nodes = rng.permutation(t.n_nodes)[: min(t.n_nodes, 40)]
    hm = t.hop_matrix(nodes)
    assert (hm == hm.T).all() and (np.diag(hm) == 0).all()
    assert t.pair_hop_sum(nodes) == int(np.triu(hm, 1).sum())
    s, d = np.meshgrid(nodes, nodes, indexing="ij")
    assert (t.hops_many(s.ravel(), d.ravel()).reshape(hm.shape) == hm).all()


def test_pair_hop_sum_cached_matrix_and_blocks_agree(topo, monkeypatch):
    # Small and large node sets (sub-matrix, matrix-vector) against the block computation.
    import models.topology.base as base

    t = topo
    rng = np.random.default_rng(5)
    sets = [rng.permutation(t.n_nodes)[:k] for k in (2, 7, t.n_nodes // 2, t.n_nodes)]
    cached = [t.pair_hop_sum(a) for a in sets]
    monkeypatch.setattr(base, "_HOP_MATRIX_MAX_ROUTERS", 0)
    fresh = t.replace()
    assert [fresh.pair_hop_sum(a) for a in sets] == cached
    hm = t.hop_matrix(sets[1])
    assert cached[1] == int(np.triu(hm, 1).sum())


def test_routes_are_deterministic_across_objects_and_cached(topo):
    t = topo
    t2 = t.replace()
    assert t2 == t and hash(t2) == hash(t)
    rng = np.random.default_rng(11)
    s = rng.integers(0, t.n_nodes, 200)
    d = rng.integers(0, t.n_nodes, 200)
    k = rng.integers(0, 1000, 200)
    a = t.routes(s, d, k)
    b = t2.routes(s, d, k)
    assert (a[0] == b[0]).all() and (a[1] == b[1]).all()
    r1 = t.route(int(s[0]), int(d[0]), int(k[0]))
    assert t.route(int(s[0]), int(d[0]), int(k[0])) is r1
    t.clear_route_cache()
    assert t.route(int(s[0]), int(d[0]), int(k[0])) == r1


def test_route_accepts_numpy_integer_arguments(topo):
    t = topo
    expect = t.route(1, t.n_nodes - 1, 3)
    for typ in (np.int32, np.int64, np.uint32, np.uint64):
        assert t.route(typ(1), typ(t.n_nodes - 1), typ(3)) == expect


def test_route_adaptive_without_backlog_is_route(topo):
    t = topo
    zero = lambda link: 0.0  # noqa: E731
    for s, d in ((0, t.n_nodes - 1), (1, t.n_nodes // 2), (2, 2)):
        assert t.route_adaptive(s, d, 9, zero) == t.route(s, d, 9)


def test_pickle_roundtrip_keeps_topology_and_routes(topo):
    t = topo
    t2 = pickle.loads(pickle.dumps(t))
    assert t2 == t
    assert (t2.link_dst == t.link_dst).all()
    assert t2.route(0, t.n_nodes - 1, 4) == t.route(0, t.n_nodes - 1, 4)


def test_partition_keeps_units_whole_where_they_balance(topo):
    t = topo
    units = t.locality_units()
    assert units.dtype == np.int32 and units.shape == (t.n_routers,)
    heavy = np.unique(units[t.router_nodes > 0])
    nunits = len(heavy)
    unit_nodes = np.bincount(units, weights=t.router_nodes)
    for P in (1, 2, 3, nunits, nunits + 3):
        ranks = t.partition(P)
        assert ranks.dtype == np.int32 and ranks.shape == (t.n_routers,)
        assert ranks.min() >= 0 and ranks.max() < P
        assert (t.partition(P) == ranks).all()
        per_rank = np.bincount(ranks, weights=t.router_nodes, minlength=P)
        whole = all(len(np.unique(ranks[units == u])) == 1 for u in heavy)
        if P <= t.n_nodes:
            # Within the tolerance, or (units cut) within one router's nodes.
            assert (per_rank.max() <= (1 + SPLIT_TOLERANCE) * per_rank.mean() + 1e-9
                    or per_rank.max() - per_rank.min() <= t.router_nodes.max() + 1e-9)
        if P <= nunits:
            # Units are not cut where keeping them whole balances.
            blocks = np.bincount(_whole_unit_blocks(unit_nodes[heavy], P), weights=unit_nodes[heavy], minlength=P)
            if blocks.max() <= (1 + SPLIT_TOLERANCE) * blocks.mean():
                assert whole, f"units cut with P={P} although whole units balance"
    with pytest.raises(TopologyError, match="nranks"):
        t.partition(0)


def _whole_unit_blocks(w: np.ndarray, P: int) -> np.ndarray:
    """Contiguous blocks of whole units balanced by weight (an independent greedy cut: unit i
    goes to the block its weight midpoint falls in)."""
    mid = np.cumsum(w) - w / 2.0
    return np.minimum((mid * P / w.sum()).astype(np.int64), P - 1)


def test_partition_cuts_torus_slabs_when_they_cannot_balance():
    # 24 slabs over 16 ranks: whole slabs would give ranks 1 or 2 slabs (1.33x the mean).
    t = Torus(dims=(4, 3, 24))
    ranks = t.partition(16)
    assert np.bincount(ranks, weights=t.router_nodes).tolist() == [1.5 * 12] * 16
    # Contiguous: every rank's routers form one run of router ids (slab order).
    assert (np.diff(ranks) >= 0).all()
    # 24 over 8 balances whole: slabs stay whole.
    u = t.locality_units()
    r8 = t.partition(8)
    assert all(len(set(r8[u == s])) == 1 for s in range(24))


def test_describe_has_the_summary_fields(topo):
    d = topo.describe()
    for key in ("family", "nodes", "routers", "links", "diameter", "bisection_links", "bisection_bandwidth", "routing", "link_kinds"):
        assert key in d
    assert d["nodes"] == topo.n_nodes and d["links"] == topo.n_links
    assert sum(v["count"] for v in d["link_kinds"].values()) == topo.n_links


def test_bad_arguments_raise_topology_error(topo):
    t = topo
    with pytest.raises(TopologyError, match="not a node"):
        t.route(0, t.n_nodes)
    with pytest.raises(TopologyError, match="not a node"):
        t.route(-1, 0)
    with pytest.raises(TopologyError, match="node id"):
        t.hops(0.5, 1)
    with pytest.raises(TopologyError, match="key must be an integer"):
        t.route(0, 1, None)
    with pytest.raises(TopologyError, match="same length"):
        t.routes([0, 1], [1])
    with pytest.raises(TopologyError, match="not a node"):
        t.routes([0, t.n_nodes], [1, 1])
    with pytest.raises(TopologyError, match="distinct"):
        t.pair_hop_sum([0, 0])
    with pytest.raises(TopologyError, match="routing"):
        t.replace(routing="bogus")


def test_empty_routes_call():
    t = FatTree.from_radix(radix=4, levels=2)
    off, links = t.routes([], [])
    assert off.tolist() == [0] and links.size == 0


def test_hash_scalar_and_vectorized_agree():
    salt = salt_seed(12345, 0xABC)
    rng = np.random.default_rng(0)
    s = rng.integers(0, 2**31, 500)
    d = rng.integers(0, 2**31, 500)
    k = rng.integers(-(2**62), 2**62, 500)
    v = pair_hash_np(salt, s, d, k)
    assert [int(x) for x in v] == [pair_hash(salt, int(a), int(b), int(c)) for a, b, c in zip(s, d, k)]


def test_units_and_latencies_accept_strings_and_numbers():
    a = FatTree.from_radix(radix=4, levels=2, link_bw="4GB/s", link_lat="100ns")
    b = FatTree.from_radix(radix=4, levels=2, link_bw=4e9, link_lat=1e-7)
    assert a == b and (a.link_bw == b.link_bw).all() and (a.link_lat == 1e-7).all()
    with pytest.raises(TopologyError, match="link_lat"):
        FatTree.from_radix(radix=4, levels=2, link_lat=0)
    with pytest.raises(TopologyError, match="link_bw"):
        Torus(dims=(4,), link_bw="fast")


# ----------------------------------------------------------------------------- property tests
@st.composite
def small_topologies(draw):
    fam = draw(st.sampled_from(["fattree", "torus", "dragonfly"]))
    if fam == "fattree":
        h = draw(st.integers(1, 3))
        down = tuple(draw(st.integers(1, 4)) for _ in range(h))
        if np.prod(down) < 2:
            down = (2,) + down[1:]
        up = (1,) + tuple(draw(st.integers(1, 3)) for _ in range(h - 1))
        par = (1,) + tuple(draw(st.integers(1, 2)) for _ in range(h - 1))
        routing = draw(st.sampled_from(FatTree.ROUTINGS))
        return FatTree(levels=h, down=down, up=up, parallel=par, routing=routing, seed=draw(st.integers(0, 9)))
    if fam == "torus":
        D = draw(st.integers(1, 3))
        dims = tuple(draw(st.integers(1, 5)) for _ in range(D))
        wrap = tuple(draw(st.booleans()) for _ in range(D))
        c = draw(st.integers(1, 2))
        if np.prod(dims) * c < 2:
            c = 2
        return Torus(dims=dims, wrap=wrap, nodes_per_router=c)
    a = draw(st.integers(1, 6))
    h = draw(st.integers(1, 3))
    g = draw(st.integers(1, a * h + 1))
    casc = None
    if draw(st.booleans()):
        rows = draw(st.sampled_from([r for r in range(1, a + 1) if a % r == 0]))
        casc = (rows, a // rows)
    m = None if g == 1 else draw(st.integers(1, a * h // (g - 1)))
    p = draw(st.integers(1, 2))
    if a * g * p < 2:
        p = 2
    return Dragonfly(a=a, p=p, h=h, g=g, global_links=m, cascade=casc, arrangement=draw(st.sampled_from(["absolute", "relative"])),
                     routing=draw(st.sampled_from(Dragonfly.ROUTINGS)), seed=draw(st.integers(0, 9)))


@settings(max_examples=60, deadline=None)
@given(small_topologies(), st.integers(0, 2**32))
def test_property_routes_valid_and_hops_minimal(t, seed):
    dist = router_distances(t)
    assert (dist >= 0).all()
    rng = np.random.default_rng(seed)
    n = 60
    s = rng.integers(0, t.n_nodes, n)
    d = rng.integers(0, t.n_nodes, n)
    k = rng.integers(0, 1000, n)
    off, links = t.routes(s, d, k)
    for i in range(n):
        r = t.route(int(s[i]), int(d[i]), int(k[i]))
        check_path(t, int(s[i]), int(d[i]), r)
        assert tuple(links[off[i] : off[i + 1]].tolist()) == r
    hm = t.hop_matrix(np.arange(t.n_nodes))
    assert (hm == dist[t.node_router[:, None], t.node_router[None, :]]).all()
    occupied = np.unique(t.node_router)
    assert t.diameter == dist[np.ix_(occupied, occupied)].max()
