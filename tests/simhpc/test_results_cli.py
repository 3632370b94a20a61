"""``simhpc show`` and ``simhpc plot``: output, JSON, figure files, and one-line errors."""

from __future__ import annotations

import json
import math
import sys

import h5py
import pytest

from results_helpers import fabricate
from simhpc.cli import main
from simhpc.results import SCHEMA_VERSION, read_results, write_results

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("res")
    a = write_results(fabricate(), d / "fcfs.h5")
    b = write_results(fabricate(name="sjf-tiny", seed=2, order="sjf"), d / "sjf.h5")
    c = write_results(fabricate(name="no-net", seed=3, links=False, ideal=False), d / "nonet.h5")
    return a, b, c


def cli(capsys, *argv):
    code = main([str(x) for x in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _no_nan(d):
    return {k: v for k, v in d.items() if not (isinstance(v, float) and math.isnan(v))}


def test_show_text(capsys, files):
    code, out, err = cli(capsys, "show", files[0])
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith(f"{files[0]}: simhpc 0.1.0 results, schema {SCHEMA_VERSION}, created ")
    fig = dict(line.split("  ", 1) for line in lines[1:-1])
    fig = {k.strip(): v.strip() for k, v in fig.items()}
    s = read_results(files[0]).summary()
    # The table ends with the sentence on the baselines.
    assert lines[-1].startswith(f"{s['network_jobs']} app job(s) ran on average "
                                f"{s['mean_interference_slowdown']:.2f}x as long as alone on the same nodes")
    assert fig["mean interference slowdown"].startswith(f"{s['mean_interference_slowdown']:.4g} ")
    assert fig["experiment"] == "fcfs-tiny (seed 1)" and fig["machine"] == "tiny-fattree3 (16 nodes)"
    assert fig["jobs"] == "40" and fig["run / rejected / killed / failed"] == "39 / 1 / 1 / 1"
    assert fig["makespan"] == f"{s['makespan'] / 60:.4g} min"
    assert fig["utilization"] == f"{100 * s['utilization']:.2f} %"
    assert fig["loss of capacity"] == f"{100 * s['loss_of_capacity']:.2f} %"
    assert fig["mean wait"] == f"{s['mean_wait'] / 60:.4g} min" and fig["max wait"] == f"{s['max_wait'] / 60:.4g} min"
    assert fig["mean bounded slowdown"] == f"{s['mean_bounded_slowdown']:.4g}"
    assert fig["mean network slowdown"].startswith(f"{s['mean_network_slowdown']:.4g} ")
    assert fig["network model"] == "packet" and fig["max queue delay"] == f"{s['max_queue_delay'] * 1e6:.4g} us"
    assert fig["events"] == "123,457" and fig["wall time"] == "0.75 s" and fig["ranks"] == "2"


def test_show_json_is_the_summary(capsys, files):
    code, out, _ = cli(capsys, "show", files[0], "--json")
    last = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and "job_rows" not in last
    assert last == {**read_results(files[0]).summary(), "file": str(files[0])}


def test_show_without_network(capsys, files):
    code, out, _ = cli(capsys, "show", files[2], "--json")
    last = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and "mean_network_slowdown" not in last and "network_model" not in last
    assert "network model                     none" in out and "mean network slowdown             -" in out


def test_show_jobs(capsys, files):
    code, out, _ = cli(capsys, "show", files[0], "--jobs", "5", "--json")
    assert code == 0
    lines = out.strip().splitlines()
    i = lines.index("first 5 of 40 jobs")
    header = lines[i + 1].split()
    assert header == ["job_id", "app", "status", "nodes", "submit", "start", "wait", "run", "trace_run",
                      "app_run", "ideal_run", "bounded_slowdown", "aph", "bytes_sent"]
    rejected = lines[i + 3 + 3].split()  # job row 3 never ran
    assert rejected[:4] == ["4", "timekeeper", "rejected", "0"] and rejected.count("-") == 8
    r = read_results(files[0])
    rows = json.loads(lines[-1])["job_rows"]
    assert len(rows) == 5 and rows[3]["start"] is None and rows[3]["status"] == "rejected"
    assert [row["job_id"] for row in rows] == [1, 2, 3, 4, 5] and rows[1]["run"] == r.jobs["run"][1]
    code, out, _ = cli(capsys, "show", files[0], "--jobs", "100", "--columns", "job_id,kill_reason", "--json")
    rows = json.loads(out.strip().splitlines()[-1])["job_rows"]
    assert "first 40 of 40 jobs" in out and len(rows) == 40 and list(rows[0]) == ["job_id", "kill_reason"]
    assert rows[7]["kill_reason"] == "walltime"


def _one_line_error(code, out, err, *needles):
    assert code == 2 and out == ""
    assert err.startswith("simhpc: error: ") and err.count("\n") == 1 and "Traceback" not in err
    for n in needles:
        assert n in err, err


def test_show_errors(capsys, files, tmp_path):
    text = tmp_path / "x.txt"
    text.write_text("not hdf5")
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f.attrs["schema"] = "something-else"
    newer = tmp_path / "newer.h5"
    newer.write_bytes(files[0].read_bytes())
    with h5py.File(newer, "a") as f:
        f.attrs["schema_version"] = SCHEMA_VERSION + 1
    for path, why in [(tmp_path / "none.h5", "no such file"), (text, "not an HDF5 file"),
                      (other, "not a simhpc results file"), (newer, "newer than this simhpc reads")]:
        _one_line_error(*cli(capsys, "show", path), f"{path}: ", why)
    _one_line_error(*cli(capsys, "show", files[0], "--jobs", "3", "--columns", "job_id,colour"),
                    "--columns: unknown job column(s) colour")
    with pytest.raises(SystemExit):
        main(["show", str(files[0]), "--jobs", "0"])
    capsys.readouterr()


def test_plot_one_file(capsys, files, tmp_path):
    out_dir = tmp_path / "one"
    code, out, err = cli(capsys, "plot", files[0], "--out", out_dir, "--dpi", "40")
    assert code == 0 and err == ""
    names = ["wait_cdf", "utilization", "queue_length", "aph_by_size", "bsld_by_size", "slowdown", "interference",
             "gantt_fcfs", "link_heatmap_fcfs"]
    assert out.splitlines() == [str(out_dir / f"{n}.png") for n in names]
    for n in names:
        data = (out_dir / f"{n}.png").read_bytes()
        assert data[:8] == PNG and len(data) > 2000


def test_plot_two_files_on_one_figure(capsys, files, tmp_path):
    out_dir = tmp_path / "two"
    code, out, _ = cli(capsys, "plot", files[0], files[1], files[2], "--out", out_dir, "--dpi", "40", "--json")
    assert code == 0
    report = json.loads(out.strip().splitlines()[-1])
    got = sorted(p.rsplit("/", 1)[1] for p in report["figures"])
    assert got == sorted(["wait_cdf.png", "utilization.png", "queue_length.png", "aph_by_size.png", "bsld_by_size.png",
                          "slowdown.png", "interference.png",
                          "gantt_fcfs.png", "link_heatmap_fcfs.png", "gantt_sjf.png", "link_heatmap_sjf.png",
                          "gantt_nonet.png"])
    assert report["skipped"] == ["link_heatmap_nonet.png: no per-link statistics (the run had no network model, "
                                 "e.g. a trace replay), so no link heat map"]
    assert "skipped link_heatmap_nonet.png: no per-link statistics" in out
    for p in report["figures"]:
        data = open(p, "rb").read()
        assert data[:8] == PNG and len(data) > 2000


def test_plot_skips_slowdown_without_ideal_runs(capsys, files, tmp_path):
    code, out, _ = cli(capsys, "plot", files[2], "--out", tmp_path, "--dpi", "40")
    assert code == 0 and "skipped slowdown.png: no job has an ideal-network runtime (ideal_run)" in out
    assert not (tmp_path / "slowdown.png").exists() and (tmp_path / "wait_cdf.png").exists()


@pytest.mark.parametrize("fmt,magic", [("svg", b"<?xml"), ("pdf", b"%PDF-")])
def test_plot_formats(capsys, files, tmp_path, fmt, magic):
    code, out, _ = cli(capsys, "plot", files[0], "--out", tmp_path, "--format", fmt)
    assert code == 0
    paths = out.splitlines()
    assert len(paths) == 9 and all(p.endswith(f".{fmt}") for p in paths)
    for p in paths:
        assert open(p, "rb").read(5) == magic


def test_plot_errors(capsys, files, tmp_path, monkeypatch):
    _one_line_error(*cli(capsys, "plot", files[0], tmp_path / "gone.h5", "--out", tmp_path),
                    f"{tmp_path / 'gone.h5'}: no such file")
    blocker = tmp_path / "afile"
    blocker.write_text("")
    _one_line_error(*cli(capsys, "plot", files[0], "--out", blocker), f"--out '{blocker}' exists and is not a folder")
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    _one_line_error(*cli(capsys, "plot", files[0], "--out", tmp_path), "pip install 'simhpc[plot]'")
