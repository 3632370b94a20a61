"""Placement metrics (APH, MIND, diameter, span; by job size) and rank mapping."""

from __future__ import annotations

import json

import numpy as np
import pytest

from alloc_helpers import job, machine
from models.topology import Torus
from models.topology.metrics import hop_bytes
from scheduler.allocators import (
    allocation_metrics,
    allocation_metrics_by_size,
    cartesian_neighbors,
    map_ranks,
    placement_metrics,
    size_bins,
)
from scheduler.errors import UserError


# ------------------------------------------------------------------------------------ metrics
def test_fat_tree_metrics_by_hand():
    ft = machine("ft3")  # 3 nodes per leaf, 9 per pod
    m = placement_metrics(ft, [0, 1, 2])
    assert (m.aph, m.mind, m.diameter, m.span) == (0.0, 0.0, 0, 3)
    m = placement_metrics(ft, [0, 3])  # two leaves of one pod
    assert (m.aph, m.diameter, m.span) == (2.0, 2, 4)
    m = placement_metrics(ft, [0, 1, 9])  # pairs: 0 hops, 4, 4
    assert m.aph == pytest.approx(8 / 3) and m.diameter == 4 and m.span == 10
    assert placement_metrics(ft, [5]).aph == 0.0


def test_torus_diameter_is_exact_below_the_limit_and_a_bound_above():
    topo = machine("torus")
    rng = np.random.default_rng(0)
    for _ in range(5):
        nodes = np.sort(rng.choice(topo.n_nodes, 12, replace=False))
        m = placement_metrics(topo, nodes)
        assert m.diameter_exact and m.diameter == topo.hop_matrix(nodes).max()
        b = placement_metrics(topo, nodes, exact_limit=2)
        assert not b.diameter_exact and b.diameter >= m.diameter
        assert m.mind == pytest.approx(topo.hop_matrix(nodes).sum() / (12 * 11))


def test_span_follows_the_given_ordering():
    topo = machine("torus")
    pos = np.arange(topo.n_nodes)[::-1].copy()
    assert placement_metrics(topo, [0, 5], positions=pos).span == 6


def test_by_size_bins_and_json():
    assert [b[2] for b in size_bins(20)] == ["1", "2", "3-4", "5-8", "9-16", "17-32"]
    ft = machine("ft3")
    jobs = []
    for jid, nodes in enumerate([[0], [1, 2], [3, 4, 5], [9, 10, 11, 12], [6, 7, 8, 13], [18, 27]]):
        j = job(jid, len(nodes))
        j.assigned_nodes = np.array(nodes)
        jobs.append(j)
    jobs.append(job(99, 3))  # never allocated: left out
    cols = allocation_metrics(jobs, ft)
    assert cols["job_id"].tolist() == [0, 1, 2, 3, 4, 5]
    out = allocation_metrics_by_size(jobs, ft)
    json.dumps(out)
    labels = {b["nodes"]: b for b in out["bins"]}
    assert set(labels) == {"1", "2", "3-4"}
    assert labels["2"]["jobs"] == 2 and labels["2"]["mean_aph"] == pytest.approx((0 + 4) / 2)
    assert labels["3-4"]["jobs"] == 3
    assert out["all"]["jobs"] == 6 and labels["1"]["mean_diameter"] == 0.0
    with pytest.raises(UserError, match="need the machine's topology"):
        allocation_metrics_by_size(jobs, None)


# ------------------------------------------------------------------------------------ mapping
def test_block_and_roundrobin():
    nodes = [10, 11, 12]
    assert map_ranks(nodes, 6, method="block").tolist() == [10, 10, 11, 11, 12, 12]
    assert map_ranks(nodes, 6, method="roundrobin").tolist() == [10, 11, 12, 10, 11, 12]
    assert map_ranks(nodes, 5, method="block", ranks_per_node=4).tolist() == [10, 10, 10, 10, 11]
    with pytest.raises(UserError, match="do not fit 3 nodes at 1 ranks per node"):
        map_ranks(nodes, 4, ranks_per_node=1)
    with pytest.raises(UserError, match="unknown rank mapping 'snake'; valid: block, roundrobin, topology"):
        map_ranks(nodes, 3, method="snake")
    with pytest.raises(UserError, match="grid"):
        map_ranks(nodes, 3, method="topology", grid=(2, 2))


def cart_hop_bytes(topo, mapping, grid):
    s, d = cartesian_neighbors(grid, periods=True)
    return hop_bytes(topo, mapping[s], mapping[d], 1.0)


@pytest.mark.parametrize("grid,rpn", [((4, 2, 2), 1), ((2, 2, 4), 1), ((8, 2, 2), 2), ((4, 4, 4), 4)])
def test_topology_mapping_embeds_a_cartesian_grid_in_a_box_exactly(grid, rpn):
    topo = Torus(dims=(4, 4, 4))
    # A 4 x 2 x 2 box of routers starting at (2, 3, 1), wrapping around in y.
    xs, ys, zs = np.meshgrid(np.arange(4), (3 + np.arange(2)) % 4, 1 + np.arange(2), indexing="ij")
    nodes = np.sort([topo.node_at((x, y, z)) for x, y, z in zip(xs.ravel(), ys.ravel(), zs.ravel())])
    n_ranks = int(np.prod(grid))
    m = map_ranks(nodes, n_ranks, method="topology", topology=topo, grid=grid, ranks_per_node=rpn)
    assert set(m.tolist()) == set(nodes.tolist()) and (np.bincount(m)[nodes] == rpn).all()
    s, d = cartesian_neighbors(grid, periods=False)
    assert (topo.hops_many(m[s], m[d]) <= 1).all()
    assert cart_hop_bytes(topo, m, grid) <= cart_hop_bytes(topo, map_ranks(nodes, n_ranks, method="roundrobin", ranks_per_node=rpn), grid)


def test_topology_mapping_beats_round_robin_on_scattered_nodes():
    topo = Torus(dims=(8, 8, 8))
    rng = np.random.default_rng(5)
    block = np.array([topo.node_at((x, y, z)) for x in range(2, 6) for y in range(1, 5) for z in range(3, 7)])
    nodes = np.sort(rng.choice(block, 48, replace=False))  # part of a region, not a box
    grid = (4, 4, 6)
    m = map_ranks(nodes, 96, method="topology", topology=topo, grid=grid)
    rr = map_ranks(nodes, 96, method="roundrobin")
    blk = map_ranks(nodes, 96, method="block")
    t = cart_hop_bytes(topo, m, grid)
    assert t < cart_hop_bytes(topo, rr, grid) and t < cart_hop_bytes(topo, blk, grid)
    # Without a grid: ranks fill the nodes in locality order.
    plain = map_ranks(nodes, 48, method="topology", topology=topo)
    assert sorted(plain.tolist()) == sorted(nodes.tolist())
