"""The destination functions of the synthetic traffic patterns (apps.traffic.patterns)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from apps import AppConfigError
from apps.traffic import TrafficPatternError, build_pattern, check_pattern, pattern_names
from models.presets import get_machine

TORUS = get_machine("tiny-torus").topology          # 4x4x4, 64 nodes
DRAGONFLY = get_machine("tiny-dragonfly").topology  # 9 groups of 8 nodes
FATTREE = get_machine("tiny-fattree3").topology     # 16 nodes


def dests(name, n=None, topology=None, seed=1, **kw):
    nodes = range(n if n is not None else topology.n_nodes)
    p = build_pattern(name, nodes=nodes, topology=topology, rng=random.Random(7), **kw)
    rng = random.Random(seed)
    return [p.dest(i, rng) for i in range(p.n)]


def test_every_registered_pattern_builds_and_never_targets_its_source():
    assert pattern_names() == ["uniform", "permutation", "shift", "tornado", "transpose", "bitcomp", "neighbor",
                               "hotspot", "group-adversarial"]
    for name in pattern_names():
        topo = DRAGONFLY if name == "group-adversarial" else TORUS
        for seed in range(5):
            d = dests(name, topology=topo, seed=seed)
            assert all(j is None or (0 <= j < topo.n_nodes and j != i) for i, j in enumerate(d)), name


@pytest.mark.parametrize("n", [2, 7, 16, 72, 1000])
def test_permutation_is_a_permutation_the_same_for_every_rank(n):
    d = dests("permutation", n=n)
    full = [i if j is None else j for i, j in enumerate(d)]   # fixed points send nothing
    assert sorted(full) == list(range(n))
    assert dests("permutation", n=n, seed=99) == d            # the source's own stream does not matter
    other = build_pattern("permutation", nodes=range(n), rng=random.Random(8))
    assert n < 16 or [other.dest(i, None) for i in range(n)] != d  # another job stream, another permutation


def test_shift_and_tornado():
    assert dests("shift", n=10) == [(i + 5) % 10 for i in range(10)]
    assert dests("shift", n=10, shift=3) == [(i + 3) % 10 for i in range(10)]
    with pytest.raises(TrafficPatternError, match="shift=20 is a multiple of the 10 nodes"):
        build_pattern("shift", nodes=range(10), shift=20)
    # Torus: ceil(4/2) - 1 = 1 hop ahead in each dimension, same slot.
    d = dests("tornado", topology=TORUS)
    c = TORUS.coords_of_node(list(range(64)))
    assert (TORUS.coords_of_node(d) == (c + 1) % 4).all()
    assert sorted(d) == list(range(64))
    # Elsewhere on the index: ceil(16/2) - 1 = 7.
    assert dests("tornado", topology=FATTREE) == [(i + 7) % 16 for i in range(16)]


def test_transpose_is_an_involution_on_square_counts():
    for n in (4, 16, 64, 100):
        d = dests("transpose", n=n)
        m = int(n ** 0.5)
        assert [i for i, j in enumerate(d) if j is None] == [k * m + k for k in range(m)]
        assert all(j is None or d[j] == i for i, j in enumerate(d))
    assert dests("transpose", n=16)[1] == 4 and dests("transpose", n=16)[7] == 13
    with pytest.raises(TrafficPatternError, match="'transpose' needs a square number of nodes .*got 72"):
        build_pattern("transpose", nodes=range(72), topology=DRAGONFLY)


def test_bitcomp_needs_a_power_of_two():
    d = dests("bitcomp", n=64)
    assert d == [63 - i for i in range(64)] and all(d[j] == i for i, j in enumerate(d))
    with pytest.raises(TrafficPatternError, match="'bitcomp' needs a power-of-two number of nodes, got 72"):
        check_pattern("bitcomp", 72)


def test_neighbor_on_a_torus_is_one_hop_away_elsewhere_plus_minus_one():
    rng = random.Random(3)
    p = build_pattern("neighbor", nodes=range(64), topology=TORUS)
    seen = set()
    for _ in range(2000):
        i = rng.randrange(64)
        j = p.dest(i, rng)
        # One router hop: injection, one torus link, ejection.
        assert len(TORUS.route(i, j)) == 3
        seen.add((i, j))
    assert len({j for i, j in seen if i == 0}) == 6          # all six neighbours of a 3-D torus node
    mesh = get_machine("tiny-mesh").topology                  # 4x4 mesh, 2 nodes per router, no wrap
    d = build_pattern("neighbor", nodes=range(32), topology=mesh)
    corner = {d.dest(0, rng) for _ in range(200)}
    assert corner == {2, 8}                                    # two neighbours at a corner, slot 0 kept
    p = build_pattern("neighbor", nodes=range(16), topology=FATTREE)
    assert {p.dest(0, rng) for _ in range(100)} == {1, 15}


def test_uniform_covers_every_other_node_evenly():
    p = build_pattern("uniform", nodes=range(8))
    rng = random.Random(0)
    counts = np.bincount([p.dest(3, rng) for _ in range(7000)], minlength=8)
    assert counts[3] == 0 and all(abs(c - 1000) < 150 for k, c in enumerate(counts) if k != 3)


def test_hotspot_sends_the_hot_fraction_to_the_hot_nodes():
    p = build_pattern("hotspot", nodes=range(64), rng=random.Random(5), hot_nodes=2, hot_fraction=0.3)
    rng = random.Random(1)
    d = [p.dest(10, rng) for _ in range(20000)]
    counts = np.bincount(d, minlength=64)
    top = set(np.argsort(counts)[-2:])                       # the hot set, as the traffic shows it
    share = counts[list(top)].sum() / len(d)
    # 0.3 to the hot nodes, plus their share of the uniform 0.7.
    assert abs(share - (0.3 + 0.7 * 2 / 63)) < 0.015
    assert counts[10] == 0
    for h in top:                                             # a hot node sends to the other hot node
        other = (top - {h}).pop()
        hd = [p.dest(int(h), rng) for _ in range(5000)]
        assert hd.count(h) == 0 and abs(hd.count(other) / 5000 - (0.3 + 0.7 / 63)) < 0.03
    with pytest.raises(TrafficPatternError, match="hot_nodes must be 1..64"):
        check_pattern("hotspot", 64, hot_nodes=65)
    with pytest.raises(TrafficPatternError, match=r"hot_fraction must be in \[0, 1\]"):
        check_pattern("hotspot", 64, hot_fraction=1.5)


def test_group_adversarial_targets_the_next_group_and_needs_a_dragonfly():
    g = DRAGONFLY.group_of_node
    for seed in range(3):
        d = dests("group-adversarial", topology=DRAGONFLY, seed=seed)
        assert all(g[j] == (g[i] + 1) % 9 for i, j in enumerate(d))
    with pytest.raises(TrafficPatternError, match="'group-adversarial' needs a dragonfly; this machine is a torus"):
        build_pattern("group-adversarial", nodes=range(64), topology=TORUS)
    with pytest.raises(TrafficPatternError, match="job holds no node of group 1"):
        build_pattern("group-adversarial", nodes=range(8), topology=DRAGONFLY)


def test_bad_names_and_sizes():
    with pytest.raises(AppConfigError, match="unknown traffic pattern 'tornadoes'; valid: uniform, permutation"):
        build_pattern("tornadoes", nodes=range(8))
    with pytest.raises(TrafficPatternError, match="needs at least 2 nodes, got 1"):
        check_pattern("uniform", 1)
