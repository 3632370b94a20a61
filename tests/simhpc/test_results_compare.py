"""Exact comparison of results (what the P=1 vs P=N determinism tests rely on)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from results_helpers import fabricate
from simhpc.results import arrays_identical, job_table_diff, job_table_equal, results_diff, results_equal


def _copy(r):
    return copy.deepcopy(r)


def test_identical_copies_are_equal():
    a = fabricate()
    b = _copy(a)
    assert job_table_equal(a, b) and results_equal(a, b, ignore=()) and results_diff(a, b) == []


def test_one_ulp_in_one_cell_is_a_difference():
    a = fabricate()
    b = _copy(a)
    b.jobs["end"][5] = np.nextafter(b.jobs["end"][5], np.inf)
    assert not job_table_equal(a, b)
    (msg,) = job_table_diff(a, b)
    assert msg.startswith("jobs['end']: first at [5]: ")
    assert job_table_equal(a, b, columns=["start", "wait"])


def test_nan_equals_nan_but_signed_zero_differs():
    assert arrays_identical([np.nan, 1.0], np.array([-np.nan, 1.0]))
    assert not arrays_identical([0.0], [-0.0])
    assert not arrays_identical([1.0, np.nan], [1.0, 2.0])
    assert arrays_identical(np.array(["a", "bc"]), np.array(["a", "bc"], dtype=object))
    assert arrays_identical(np.array([1, 2], dtype=np.int32), np.array([1, 2], dtype=np.int64))
    assert not arrays_identical([1, 0], [True, False])
    assert not arrays_identical([1.0], [1])


def test_allocations_and_row_counts():
    a = fabricate()
    b = _copy(a)
    b.job_nodes[[0, 1]] = b.job_nodes[[1, 0]]
    assert job_table_diff(a, b) == ["job_nodes: the allocations differ"]
    assert job_table_equal(a, b, allocations=False)
    c = fabricate(n_jobs=30)
    assert job_table_diff(a, c) == ["jobs: 40 rows != 30 rows"]


def test_results_diff_ignores_run_statistics_by_default():
    a = fabricate()
    b = _copy(a)
    b.run.update(wall_s=9.5, ranks=4, events_per_rank=[1, 2, 3, 4])
    assert results_equal(a, b)
    diff = results_diff(a, b, ignore=())
    assert "run['wall_s']: 0.75 != 9.5" in diff and len(diff) == 3
    b.links["bytes"][3] += 1
    b.system["utilization"] += 1e-12
    b.series["queue_lengths"] = b.series["queue_lengths"][:-1]
    assert [d.split(":")[0] for d in results_diff(a, b)] == [
        "system['utilization']", "series['queue_lengths']", "links['bytes']"]
    assert results_diff(a, fabricate(links=False), ignore=("jobs",))[-1].startswith("links: present in the first")
    with pytest.raises(ValueError, match="unknown field"):
        results_diff(a, b, ignore=("wall",))
