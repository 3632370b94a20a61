"""The HDF5 results file: schema contents, exact round trip, atomic writes, clear errors."""

from __future__ import annotations

import os

import h5py
import numpy as np
import pytest

from results_helpers import fabricate
from scheduler.errors import UserError
from simhpc.results import (JOB_COLUMNS, LINK_COLUMNS, SCHEMA_NAME, SCHEMA_VERSION, SERIES, Results,
                               ResultsFileError, empty_job_columns, read_file_info, read_results, results_diff,
                               write_results)
from simhpc.results import hdf5

STAMP = "2024-01-01T00:00:00+00:00"


@pytest.fixture(scope="module")
def res() -> Results:
    return fabricate()


def _files(d) -> list[str]:
    return sorted(os.listdir(d))


# ----------------------------------------------------------------------------- schema
def test_schema_contents(tmp_path, res):
    path = write_results(res, tmp_path / "r.h5", created=STAMP)
    with h5py.File(path, "r") as f:
        a = f.attrs
        assert a["schema"] == SCHEMA_NAME == "simhpc-results"
        assert a["schema_version"] == SCHEMA_VERSION and a["simhpc_version"] == "0.1.0"
        assert a["name"] == "fcfs-tiny" and a["seed"] == 1 and a["created"] == STAMP
        toml = f["config/experiment.toml"]
        assert h5py.check_string_dtype(toml.dtype).encoding == "utf-8"
        assert toml.asstr()[()] == res.experiment_toml and "\u00b5s" in toml.asstr()[()]
        m = f["config/machine"].attrs
        assert m["name"] == "tiny-fattree3" and m["nodes"] == 16 and m["routers"] == 20
        jobs = f["jobs"]
        assert jobs.attrs["n_jobs"] == 40
        assert list(jobs) == [*JOB_COLUMNS, "nodes_ptr", "nodes_list"]
        for name, (dtype, unit, desc) in JOB_COLUMNS.items():
            ds = jobs[name]
            assert ds.shape == (40,)
            assert ds.attrs["unit"] == unit and ds.attrs["description"] == desc
            if dtype == "str":
                info = h5py.check_string_dtype(ds.dtype)
                assert info is not None and info.encoding == "utf-8" and info.length is None
            elif dtype == "bool":
                assert ds[()].dtype == np.bool_
            else:
                assert ds.dtype == np.dtype(dtype)
        assert jobs["status"].asstr()[3] == "rejected"
        ptr, nodes = jobs["nodes_ptr"][()], jobs["nodes_list"][()]
        assert ptr[0] == 0 and ptr[-1] == len(nodes) == res.job_nodes_ptr[-1]
        assert ptr[4] == ptr[3]  # the rejected job has no nodes
        assert sorted(nodes[ptr[0]:ptr[1]]) == list(res.nodes_of(0))
        system = f["system"]
        assert system.attrs["makespan"] == res.system["makespan"]
        assert system.attrs["n_nodes"] == 16
        for name, (unit, desc) in SERIES.items():
            assert system[name].attrs["unit"] == unit and system[name].attrs["description"] == desc
            assert np.array_equal(system[name][()], res.series[name])
        net = f["network"]
        assert net.attrs["model"] == "packet" and net.attrs["chunk_bytes"] == 4096
        for name, (unit, desc) in LINK_COLUMNS.items():
            ds = net["links"][name]
            assert ds.shape == (96,) and ds.attrs["unit"] == unit and ds.attrs["description"] == desc
        assert net["links/kind"].dtype == np.int8  # the topology's own dtypes are kept
        run = f["run"]
        assert run.attrs["events"] == res.run["events"] and run.attrs["ranks"] == 2
        assert list(run["events_per_rank"][()]) == res.run["events_per_rank"]
        assert run["events_per_rank"].attrs["python_type"] == "list"
        assert isinstance(run.attrs["note"], h5py.Empty)
        assert run["per_kind"].attrs["inject"] == 1.5


def test_no_timestamps_same_bytes(tmp_path, res):
    a = write_results(res, tmp_path / "a.h5", created=STAMP)
    b = write_results(res, tmp_path / "b.h5", created=STAMP)
    assert a.read_bytes() == b.read_bytes()
    c = write_results(res, tmp_path / "c.h5")
    assert read_file_info(c)["created"].endswith("+00:00")


def test_large_numeric_columns_are_compressed(tmp_path):
    r = fabricate(n_jobs=5000, links=False)
    path = write_results(r, tmp_path / "big.h5")
    with h5py.File(path, "r") as f:
        assert f["jobs/submit"].compression == "gzip" and f["jobs/status"].compression is None
    assert results_diff(r, read_results(path), ignore=()) == []


# ----------------------------------------------------------------------------- round trip
def test_round_trip_exact(tmp_path, res):
    back = read_results(write_results(res, tmp_path / "r.h5"))
    assert results_diff(res, back, ignore=()) == []
    assert (back.name, back.seed, back.experiment_toml) == (res.name, res.seed, res.experiment_toml)
    assert list(back.jobs) == list(JOB_COLUMNS)
    for name, (dtype, _, _) in JOB_COLUMNS.items():
        a, b = res.jobs[name], back.jobs[name]
        if dtype == "str":
            assert b.dtype == object and a.tolist() == b.tolist()
        else:
            assert b.dtype == np.dtype(dtype)
            assert np.array_equal(a, b, equal_nan=True)
            assert a.tobytes() == b.tobytes()  # bit for bit, NaNs included
    assert np.array_equal(back.job_nodes_ptr, res.job_nodes_ptr) and np.array_equal(back.job_nodes, res.job_nodes)
    for k, v in res.series.items():
        assert back.series[k].dtype == v.dtype and np.array_equal(back.series[k], v)
    assert back.system == res.system  # plain scalars (NaN-free here)
    for k, v in res.links.items():
        assert back.links[k].dtype == v.dtype and np.array_equal(back.links[k], v)
    assert back.network == res.network and back.machine == res.machine
    # Python types survive: list stays list, None stays None, bools stay bools, dicts nest.
    assert back.run == res.run
    assert type(back.run["events_per_rank"]) is list and back.run["note"] is None
    assert back.run["sequential"] is False and type(back.run["events"]) is int
    assert back.summary() == res.summary()


def test_round_trip_without_network_and_with_extras(tmp_path):
    r = fabricate(links=False, ideal=False)
    r.jobs["priority"] = np.arange(r.n_jobs, dtype=np.float32)
    r.jobs["site"] = np.array(["p%d" % (i % 3) for i in range(r.n_jobs)], dtype=object)
    r.series["power_samples"] = np.linspace(0, 1, 7)
    r.run.update(ratios=(1, 2, 3), names=["a", "\u00e9"], mixed=[1, 2.5], table=[{"rank": 0}], empty=[],
                 matrix=np.eye(2, dtype=np.int32), nan=float("nan"), flag=np.bool_(True), count=np.int32(7))
    r.system["t_first_submit"] = float("nan")
    back = read_results(write_results(r, tmp_path / "r.h5"))
    assert back.links is None and back.network == {}
    assert results_diff(r, back, ignore=()) == []
    assert back.jobs["priority"].dtype == np.float32 and back.jobs["site"].tolist() == r.jobs["site"].tolist()
    assert back.run["ratios"] == (1, 2, 3) and back.run["names"] == ["a", "\u00e9"]
    assert back.run["mixed"] == [1, 2.5] and type(back.run["mixed"][0]) is int  # kept as JSON, not promoted
    assert back.run["table"] == [{"rank": 0}] and back.run["empty"] == []
    assert back.run["matrix"].dtype == np.int32 and back.run["flag"] is True and back.run["count"] == 7
    assert np.isnan(back.run["nan"]) and np.isnan(back.system["t_first_submit"])


def test_round_trip_no_jobs(tmp_path):
    r = Results(name="empty", experiment_toml="", seed=0, machine={}, jobs=empty_job_columns(0),
                job_nodes_ptr=np.zeros(1, dtype=np.int64), job_nodes=np.zeros(0, dtype=np.int64),
                system={}, series={})
    back = read_results(write_results(r, tmp_path / "e.h5"))
    assert back.n_jobs == 0 and results_diff(r, back, ignore=()) == []


def test_bad_results_are_refused_before_any_file(tmp_path, res):
    bad = Results(**{**res.__dict__, "jobs": {**res.jobs, "nodes": res.jobs["nodes"].astype(float)}})
    with pytest.raises(TypeError, match="job column 'nodes' must be int64, got float64"):
        write_results(bad, tmp_path / "bad.h5")
    bad = Results(**{**res.__dict__, "jobs": {**res.jobs, "app": np.array([1] * res.n_jobs, dtype=object)}})
    with pytest.raises(TypeError, match="job column 'app' must hold strings"):
        write_results(bad, tmp_path / "bad.h5")
    bad = Results(**{**res.__dict__, "run": {"a/b": 1}})
    with pytest.raises(ValueError, match="cannot be an HDF5 name"):
        write_results(bad, tmp_path / "bad.h5")
    assert _files(tmp_path) == []


# ----------------------------------------------------------------------------- atomic writes
def test_failed_write_leaves_no_file(tmp_path, res, monkeypatch):
    real = hdf5._write_jobs

    def half(g, r):  # the jobs are written, then the writer dies
        real(g, r)
        raise RuntimeError("simulated crash while writing")

    monkeypatch.setattr(hdf5, "_write_jobs", half)
    with pytest.raises(RuntimeError, match="simulated crash"):
        write_results(res, tmp_path / "r.h5")
    assert _files(tmp_path) == []  # neither the final name nor the temporary file


def test_failed_write_keeps_the_old_file(tmp_path, res, monkeypatch):
    path = tmp_path / "r.h5"
    write_results(res, path, created=STAMP)
    before = path.read_bytes()
    other = fabricate(name="other", seed=5)

    def die(*_a):
        raise KeyboardInterrupt  # even an interrupt leaves the old file whole

    monkeypatch.setattr(hdf5, "_write_array", die)
    with pytest.raises(KeyboardInterrupt):
        write_results(other, path)
    assert _files(tmp_path) == ["r.h5"] and path.read_bytes() == before
    monkeypatch.undo()
    write_results(other, path)
    assert read_results(path).name == "other" and _files(tmp_path) == ["r.h5"]


def test_write_errors(tmp_path, res):
    with pytest.raises(ResultsFileError, match="directory .*nope does not exist"):
        write_results(res, tmp_path / "nope" / "r.h5")
    with pytest.raises(ResultsFileError, match="is a directory"):
        write_results(res, tmp_path)


# ----------------------------------------------------------------------------- read errors
def _h5(path, **attrs):
    with h5py.File(path, "w") as f:
        for k, v in attrs.items():
            f.attrs[k] = v
    return path


def test_read_errors_name_the_file_and_the_problem(tmp_path, res):
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    good = write_results(res, tmp_path / "good.h5")
    with h5py.File(good, "a") as f:
        f.attrs["schema_version"] = SCHEMA_VERSION + 1
        f.attrs["simhpc_version"] = "9.0"
    damaged = write_results(res, tmp_path / "damaged.h5")
    with h5py.File(damaged, "a") as f:
        del f["jobs/wait"]
    cases = [
        (tmp_path / "missing.h5", "no such file"),
        (tmp_path, "is a directory"),
        (text, "not an HDF5 file"),
        (_h5(tmp_path / "plain.h5"), "not a simhpc results file (no schema attribute"),
        (_h5(tmp_path / "other.h5", schema="netcdf-ish"), "not a simhpc results file (schema 'netcdf-ish'"),
        (_h5(tmp_path / "v0.h5", schema=SCHEMA_NAME, schema_version=0), "bad schema_version 0"),
        (good, f"schema version {SCHEMA_VERSION + 1} (written by simhpc 9.0) is newer than this simhpc reads"),
        (damaged, "damaged or incomplete results file (no /jobs/wait)"),
        (_h5(tmp_path / "bare.h5", schema=SCHEMA_NAME, schema_version=1), "no /config group"),
    ]
    for path, reason in cases:
        with pytest.raises(ResultsFileError) as exc:
            read_results(path)
        msg = str(exc.value)
        assert msg.startswith(f"{path}: ") and reason in msg and "\n" not in msg, msg
        assert isinstance(exc.value, UserError)
    assert read_file_info(tmp_path / "damaged.h5")["schema"] == SCHEMA_NAME


def test_a_version_1_file_reads_with_app_run_as_nan_and_falls_back_to_run(tmp_path, res):
    p = tmp_path / "v1.h5"
    write_results(res, p)
    with h5py.File(p, "r+") as f:
        f.attrs["schema_version"] = 1
        del f["jobs"]["app_run"]
    back = read_results(p)
    assert np.isnan(back.jobs["app_run"]).all() and len(back.jobs["app_run"]) == res.n_jobs
    # The network slowdown of an old file is run / ideal_run, as it was then.
    ran = back.ran()
    ideal = back.jobs["ideal_run"][ran]
    ok = np.isfinite(ideal) & (ideal > 0)
    assert ok.any()
    expected = float(np.mean(back.jobs["run"][ran][ok] / ideal[ok]))
    assert back.summary()["mean_network_slowdown"] == pytest.approx(expected, rel=1e-12)
