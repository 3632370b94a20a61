"""Rank-to-node mapping (apps.mapping): every registered method, aliases, callables and
sequences, the registry, and the topology-aware embedding of Cartesian grids."""

from __future__ import annotations

import numpy as np
import pytest

from apps.errors import AppConfigError
from apps.mapping import (
    JOB_MAPPINGS,
    MAPPING_ALIASES,
    RANK_MAPPINGS,
    cartesian_neighbors,
    job_rank_nodes,
    map_ranks,
    rank_node_indices,
    register_mapping,
)
from models.topology import FatTree, Torus
from models.topology.metrics import hop_bytes
from pdes.errors import UserError

NODES = [10, 11, 12]


def test_the_registry_holds_the_documented_methods():
    assert list(RANK_MAPPINGS) == ["block", "round_robin", "topology"]
    assert MAPPING_ALIASES == {"roundrobin": "round_robin", "cyclic": "round_robin"}
    assert JOB_MAPPINGS is RANK_MAPPINGS  # experiment and study files accept the registered names


def test_block_and_round_robin_and_their_aliases():
    assert map_ranks(6, NODES, None, "block") == (10, 10, 11, 11, 12, 12)
    assert map_ranks(5, NODES, 2, "block") == (10, 10, 11, 11, 12)
    assert map_ranks(5, NODES, 4, "block") == (10, 10, 10, 10, 11)
    for name in ("round_robin", "roundrobin", "cyclic"):
        assert map_ranks(5, NODES, 2, name) == (10, 11, 12, 10, 11)


def test_topology_without_a_torus_or_grid_fills_nodes_in_id_order():
    assert map_ranks(4, [12, 10, 11], 2, "topology") == (10, 10, 11, 11)
    ft = FatTree(radix=4, levels=2)
    assert map_ranks(4, [3, 0], 2, "topology", topology=ft, grid=(2, 2)) == (0, 0, 3, 3)


def test_callables_and_sequences_of_node_indices():
    assert map_ranks(4, NODES, 2, lambda r, n, k: (n - 1) - r // k) == (12, 12, 11, 11)
    assert map_ranks(3, NODES, 1, np.array([2, 0, 1])) == (12, 10, 11)
    assert map_ranks(3, NODES, 1, [2, 0, 1]) == (12, 10, 11)


@pytest.mark.parametrize("call,message", [
    (lambda: map_ranks(7, NODES, 2), "7 ranks do not fit on 3 nodes with 2 ranks per node"),
    (lambda: map_ranks(3, NODES, 2, [0, 0, 0]), "puts 3 ranks on node 10, more than ranks_per_node=2"),
    (lambda: map_ranks(2, NODES, 2, [0, 3]), r"rank 1 on node index 3; valid: 0\.\.2"),
    (lambda: map_ranks(2, NODES, 2, [0.0, 1.0]), r"rank 0 on node index 0\.0"),
    (lambda: map_ranks(2, NODES, 2, [0]), r"one node index per rank \(2\), got 1"),
    (lambda: map_ranks(2, NODES, 2, lambda r, n, k: True), r"rank 0 on node index True"),
    (lambda: map_ranks(0, NODES, 2), "ranks must be an integer >= 1, got 0"),
    (lambda: map_ranks(2, NODES, 0), "ranks_per_node must be an integer >= 1, got 0"),
    (lambda: map_ranks(2, [], 2), "at least one node"),
    (lambda: map_ranks(2, [4, 4], 2), "must be distinct"),
    (lambda: map_ranks(3, NODES, None, "topology", grid=(2, 2)), r"grid \(2, 2\) must hold exactly the 3 ranks"),
])
def test_mistakes_are_user_errors_that_say_what_is_wrong(call, message):
    with pytest.raises(AppConfigError, match=message) as info:
        call()
    assert isinstance(info.value, UserError)


def test_an_unknown_name_lists_the_valid_ones():
    with pytest.raises(AppConfigError) as info:
        map_ranks(2, NODES, 2, "snake")
    msg = str(info.value)
    assert msg.startswith("unknown rank mapping 'snake'; valid: block, round_robin, topology")
    assert "roundrobin" in msg and "cyclic" in msg and "a callable" in msg


def test_the_registry_accepts_a_new_method():
    @register_mapping("reversed_block")
    def reversed_block(ranks, nodes, ranks_per_node, **_):
        return (len(nodes) - 1) - np.arange(ranks) // ranks_per_node

    try:
        assert map_ranks(4, NODES, 2, "reversed_block") == (12, 12, 11, 11)
        assert "reversed_block" in JOB_MAPPINGS
        assert job_rank_nodes("ring", {}, 4, NODES, 2, "reversed_block", None) == (12, 12, 11, 11)
        with pytest.raises(AppConfigError, match="valid: block, round_robin, topology, reversed_block"):
            map_ranks(2, NODES, 2, "snake")
    finally:
        del RANK_MAPPINGS["reversed_block"]
    with pytest.raises(AppConfigError, match="alias"):
        register_mapping("cyclic")


def test_a_registered_method_that_overloads_a_node_is_refused():
    @register_mapping("all_on_first")
    def all_on_first(ranks, nodes, ranks_per_node, **_):
        return np.zeros(ranks, dtype=np.int64)

    try:
        with pytest.raises(AppConfigError, match="more than ranks_per_node=1"):
            map_ranks(2, NODES, 1, "all_on_first")
    finally:
        del RANK_MAPPINGS["all_on_first"]


def test_rank_node_indices_repeats_a_placement():
    rank_nodes = map_ranks(5, NODES, 2, "round_robin")
    idx = rank_node_indices(NODES, rank_nodes)
    assert map_ranks(5, NODES, 2, idx) == rank_nodes


def test_job_rank_nodes_gives_cartesian_apps_their_grid():
    topo = Torus(dims=(4, 2, 2))
    nodes = list(range(topo.n_nodes))
    block = job_rank_nodes("stencil3d", {"grid": (2, 2, 4)}, 16, nodes, 1, "block", topo)
    assert block == tuple(nodes)
    emb = np.asarray(job_rank_nodes("stencil3d", {"grid": (2, 2, 4)}, 16, nodes, 1, "topology", topo))
    s, d = cartesian_neighbors((2, 2, 4), periods=False)
    assert (topo.hops_many(emb[s], emb[d]) <= 1).all()


# --------------------------------------------------------------- topology-aware embedding
def cart_hop_bytes(topo, mapping, grid):
    mapping = np.asarray(mapping)
    s, d = cartesian_neighbors(grid, periods=True)
    return hop_bytes(topo, mapping[s], mapping[d], 1.0)


@pytest.mark.parametrize("grid,rpn", [((4, 2, 2), 1), ((2, 2, 4), 1), ((8, 2, 2), 2), ((4, 4, 4), 4)])
def test_topology_mapping_embeds_a_cartesian_grid_in_a_box_exactly(grid, rpn):
    topo = Torus(dims=(4, 4, 4))
    # A 4 x 2 x 2 box of routers starting at (2, 3, 1), wrapping around in y.
    xs, ys, zs = np.meshgrid(np.arange(4), (3 + np.arange(2)) % 4, 1 + np.arange(2), indexing="ij")
    nodes = np.sort([topo.node_at((x, y, z)) for x, y, z in zip(xs.ravel(), ys.ravel(), zs.ravel())])
    n_ranks = int(np.prod(grid))
    m = np.asarray(map_ranks(n_ranks, nodes, rpn, "topology", topology=topo, grid=grid))
    assert set(m.tolist()) == set(nodes.tolist()) and (np.bincount(m)[nodes] == rpn).all()
    s, d = cartesian_neighbors(grid, periods=False)
    assert (topo.hops_many(m[s], m[d]) <= 1).all()
    assert cart_hop_bytes(topo, m, grid) <= cart_hop_bytes(topo, map_ranks(n_ranks, nodes, rpn, "round_robin"), grid)


def test_topology_mapping_beats_round_robin_on_scattered_nodes():
    topo = Torus(dims=(8, 8, 8))
    rng = np.random.default_rng(5)
    block = np.array([topo.node_at((x, y, z)) for x in range(2, 6) for y in range(1, 5) for z in range(3, 7)])
    nodes = np.sort(rng.choice(block, 48, replace=False))  # part of a region, not a box
    grid = (4, 4, 6)
    m = map_ranks(96, nodes, None, "topology", topology=topo, grid=grid)
    rr = map_ranks(96, nodes, None, "round_robin")
    blk = map_ranks(96, nodes, None, "block")
    t = cart_hop_bytes(topo, m, grid)
    assert t < cart_hop_bytes(topo, rr, grid) and t < cart_hop_bytes(topo, blk, grid)
    # Without a grid: ranks fill the nodes in locality order.
    plain = map_ranks(48, nodes, None, "topology", topology=topo)
    assert sorted(plain) == sorted(nodes.tolist())


def test_cartesian_neighbors():
    s, d = cartesian_neighbors((2, 3), periods=(False, True))
    assert sorted(zip(s.tolist(), d.tolist())) == [(0, 1), (0, 3), (1, 2), (1, 4), (2, 0), (2, 5), (3, 4), (4, 5), (5, 3)]
    s, d = cartesian_neighbors((1, 1))
    assert len(s) == len(d) == 0


def test_run_app_gives_a_named_mapping_the_topology_and_the_process_grid():
    from apps import run_app
    from apps.mapping import job_rank_nodes
    from models.presets import get_machine

    m = get_machine("tiny-torus")
    args = dict(grid=(4, 4, 4), face_bytes=4096, iters=1)
    res = run_app(m, "stencil3d", 64, mapping="topology", ranks_per_node=1, **args)
    want = job_rank_nodes("stencil3d", res.args, 64, res.nodes, 1, "topology", m.topology)
    assert res.rank_nodes == want
    # ... which is the grid embedding, not the block fill.
    assert res.rank_nodes != run_app(m, "stencil3d", 64, mapping="block", ranks_per_node=1, **args).rank_nodes
