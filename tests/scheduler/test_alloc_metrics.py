"""Placement metrics (APH, MIND, diameter, span; by job size)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from alloc_helpers import job, machine
from scheduler.allocators import allocation_metrics, allocation_metrics_by_size, placement_metrics, size_bins
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
