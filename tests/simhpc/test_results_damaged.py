"""A results file whose derived datasets do not fit together (the allocations' CSR pointer,
series of unequal lengths, link arrays of unequal lengths) is refused on reading with one line
naming the dataset, never read into a Results whose nodes_of() or plots go wrong."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import simhpc
from results_helpers import fabricate
from simhpc.cli import main
from simhpc.results import ResultsFileError, read_results, write_results


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    path = tmp_path_factory.mktemp("damaged") / "good.h5"
    write_results(fabricate(), path, created="2024-01-01T00:00:00+00:00")
    return path


def _damage(good, tmp_path, name, change):
    path = tmp_path / "bad.h5"
    path.write_bytes(good.read_bytes())
    with h5py.File(path, "r+") as f:
        a = f[name][()]
        del f[name]
        f[name] = change(a)
    return path


def _last(a, value):
    a = a.copy()
    a[-1] = value
    return a


def _swap(a):
    a = a.copy()
    # An inner job with nodes: its row ends before it starts (the ends stay 0 and the total).
    i = next(i for i in range(1, len(a) - 2) if a[i] < a[i + 1])
    a[i], a[i + 1] = a[i + 1], a[i]
    return a


@pytest.mark.parametrize("name,change,message", [
    ("jobs/nodes_ptr", lambda a: _last(a, 10**9), "/jobs/nodes_ptr must run from 0 to the length of /jobs/nodes_list"),
    ("jobs/nodes_ptr", lambda a: a - 1, "/jobs/nodes_ptr must run from 0"),
    ("jobs/nodes_ptr", _swap, "/jobs/nodes_ptr must not decrease"),
    ("jobs/nodes_ptr", lambda a: a[:-1], "/jobs/nodes_ptr has"),
    ("jobs/nodes_ptr", lambda a: np.append(a, a[-1]), "/jobs/nodes_ptr has"),
    ("jobs/nodes_ptr", lambda a: a.astype(float), "/jobs/nodes_ptr must be a 1-d integer array, found float64"),
    ("jobs/nodes_ptr", lambda a: a.reshape(1, -1), "/jobs/nodes_ptr must be a 1-d integer array"),
    ("jobs/nodes_list", lambda a: a - 1000, "/jobs/nodes_list holds a negative node id"),
    ("jobs/nodes_list", lambda a: a[:-1], "/jobs/nodes_ptr must run from 0 to the length of /jobs/nodes_list"),
    ("jobs/start", lambda a: a[:-1], "/jobs/start has shape"),
    ("system/busy_nodes", lambda a: a[:-1], "/system/busy_nodes has"),
    ("system/busy_times", lambda a: a[::-1].copy(), "/system/busy_times must be non-decreasing numbers"),
    ("system/queue_lengths", lambda a: np.append(a, 1), "/system/queue_lengths has"),
    ("network/links/bytes", lambda a: a[:-1], "the /network/links arrays differ in length"),
])
def test_damaged_datasets_are_named(good, tmp_path, capsys, name, change, message):
    bad = _damage(good, tmp_path, name, change)
    with pytest.raises(ResultsFileError, match="^" + str(bad).replace(".", r"\.") + ": damaged results file: ") as exc:
        read_results(bad)
    assert message in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(ResultsFileError):
        simhpc.load_results(bad)
    assert main(["show", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("simhpc: error: ") and message in err and err.count("\n") == 1


def test_the_undamaged_file_reads(good):
    r = read_results(good)
    assert r.job_nodes_ptr[-1] == len(r.job_nodes) and all(len(r.nodes_of(i)) >= 0 for i in range(r.n_jobs))
