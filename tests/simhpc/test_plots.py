"""The figures: what they draw (data on the axes), their grouping helpers, and missing data."""

from __future__ import annotations

import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.figure import Figure  # noqa: E402

from results_helpers import fabricate  # noqa: E402
from simhpc import plots  # noqa: E402
from scheduler.errors import UserError  # noqa: E402
from simhpc.results import Results, empty_job_columns, write_results  # noqa: E402


@pytest.fixture(scope="module")
def a() -> Results:
    return fabricate()


@pytest.fixture(scope="module")
def b() -> Results:
    return fabricate(name="sjf-tiny", seed=2, order="sjf")


def test_wait_cdf_draws_each_files_sorted_waits(a, b):
    fig = plots.wait_cdf([a, b], xscale="linear")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    lines = ax.get_lines()
    assert [ln.get_label().split(" (")[0] for ln in lines] == ["fcfs-tiny", "sjf-tiny"]
    for r, ln in zip((a, b), lines):
        waits = np.sort(r.jobs["wait"][r.ran()])
        x = np.asarray(ln.get_xdata())
        y = np.asarray(ln.get_ydata())
        assert ax.get_xlabel() == "wait time (min)"
        assert np.allclose(np.unique(x[np.isfinite(x)]), np.unique(waits / 60))
        assert y[-1] == 1.0 and y.min() == 0.0


def test_wait_cdf_is_on_a_log_axis_with_short_waits_at_one_second(a):
    ax = plots.wait_cdf(a).axes[0]
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "wait time (min, log scale)"
    (ln,) = ax.get_lines()
    waits = a.jobs["wait"][a.ran()]
    x = np.asarray(ln.get_xdata())
    assert np.allclose(np.unique(x[np.isfinite(x)]), np.unique(np.maximum(waits, 1.0) / 60))
    short = np.mean(waits < 1.0)
    assert short > 0 and f"{100 * short:.0f} % under 1 s" in ln.get_label()


def test_figures_draw_into_given_axes(a):
    fig = Figure()
    ax1, ax2 = fig.subplots(1, 2)
    assert plots.utilization(a, ax=ax1) is fig and plots.aph_by_size([a], ax=ax2) is fig
    assert ax1.get_lines() and ax2.patches


def test_utilization_is_the_busy_node_step_function(a):
    ax = plots.utilization(a).axes[0]
    (ln,) = ax.get_lines()
    y = np.asarray(ln.get_ydata())
    assert a.system["t_first_submit"] == a.series["busy_times"][0]  # the first job started at once
    assert np.allclose(y, 100 * a.series["busy_nodes"] / 16)
    assert "mean 83.7 %" in ln.get_label()
    # a first submission before the first start adds an idle step
    early = Results(**{**a.__dict__, "system": {**a.system, "t_first_submit": -30.0}})
    (ln,) = plots.utilization(early).axes[0].get_lines()
    assert ln.get_ydata()[0] == 0 and ln.get_xdata()[0] == -0.5 and np.allclose(ln.get_ydata()[1:], y)


def test_utilization_falls_back_to_samples(a):
    r = Results(**{**a.__dict__, "series": {k: a.series[k] for k in ("sample_times", "utilization_samples")}})
    (ln,) = plots.utilization(r).axes[0].get_lines()
    assert np.allclose(ln.get_ydata(), 100 * a.series["utilization_samples"])


def test_size_bins():
    idx, labels = plots.size_bins(np.array([1, 2, 3, 4, 5, 8, 9, 16, 17]))
    assert idx.tolist() == [0, 1, 2, 2, 3, 3, 4, 4, 5]
    assert labels == ["1", "2", "3-4", "5-8", "9-16", "17-32"]


def test_aph_boxes_per_bin_and_file(a, b):
    fig = plots.aph_by_size([a, b])
    ax = fig.axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["1", "2", "3-4", "5-8"]
    boxes = [p for p in ax.patches if p.get_label() == ""]
    nonempty = 0
    for r in (a, b):
        ok = r.ran() & np.isfinite(r.jobs["aph"])
        idx, _ = plots.size_bins(r.jobs["nodes"][ok])
        nonempty += len(np.unique(idx))
    assert len(boxes) == nonempty
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["fcfs-tiny", "sjf-tiny"]


def test_network_slowdown_by_app(a):
    ax = plots.network_slowdown(a).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["allreduce", "pairs", "stencil3d"]
    # medians drawn at the median of run / ideal_run of each app
    r = a.jobs
    ok = a.ran() & np.isfinite(r["ideal_run"])
    medians = sorted(float(np.median(r["run"][ok & (r["app"] == app)] / r["ideal_run"][ok & (r["app"] == app)]))
                     for app in ("allreduce", "pairs", "stencil3d"))
    drawn = sorted(float(ln.get_ydata()[0]) for ln in ax.get_lines()
                   if len(ln.get_ydata()) == 2 and ln.get_ydata()[0] == ln.get_ydata()[1]
                   and ln.get_linewidth() == 1.5)
    assert np.allclose(drawn, medians)


def test_missing_data_raises_no_data_error(a):
    with pytest.raises(plots.NoDataError, match="ideal-network runtime"):
        plots.network_slowdown(fabricate(ideal=False))
    with pytest.raises(plots.NoDataError, match="no per-link statistics"):
        plots.link_heatmap(fabricate(links=False))
    empty = Results(name="e", experiment_toml="", seed=0, machine={"nodes": 4}, jobs=empty_job_columns(0),
                    job_nodes_ptr=np.zeros(1, dtype=np.int64), job_nodes=np.zeros(0, dtype=np.int64),
                    system={}, series={})
    for fn in (plots.wait_cdf, plots.gantt, plots.aph_by_size, plots.utilization):
        with pytest.raises(plots.NoDataError):
            fn(empty)


def _alloc_results(allocs, starts, ends, nodes=8):
    n = len(allocs)
    j = empty_job_columns(n)
    j["job_id"][:] = np.arange(n)
    j["start"][:] = starts
    j["end"][:] = ends
    ptr = np.r_[0, np.cumsum([len(x) for x in allocs])]
    flat = np.array([x for al in allocs for x in al], dtype=np.int64)
    return Results(name="g", experiment_toml="", seed=0, machine={"nodes": nodes}, jobs=j, job_nodes_ptr=ptr,
                   job_nodes=flat, system={}, series={})


def test_node_segments_split_allocations_into_contiguous_ranges():
    r = _alloc_results([[5, 0, 2, 1, 6], [3], [4, 7]], [0.0, 1.0, np.nan], [10.0, 5.0, np.nan])
    row, lo, hi = plots.node_segments(r)
    assert list(zip(row.tolist(), lo.tolist(), hi.tolist())) == [(0, 0, 2), (0, 5, 6), (1, 3, 3)]


def test_gantt_vector_and_raster(a):
    fig = plots.gantt(a)
    ax = fig.axes[0]
    row, lo, hi = plots.node_segments(a)
    (coll,) = ax.collections
    assert len(coll.get_paths()) == len(row)
    # the first bar spans the first job's start..end and its first node range
    v = coll.get_paths()[0].vertices
    i = row[0]
    assert np.isclose(v[:, 0].min(), a.jobs["start"][i] / 60) and np.isclose(v[:, 0].max(), a.jobs["end"][i] / 60)
    assert v[:, 1].min() == lo[0] and v[:, 1].max() == hi[0] + 1
    assert ax.get_ylim() == (0, 16)
    raster = plots.gantt(a, max_segments=10).axes[0]
    (im,) = raster.images
    img = im.get_array()
    assert img.shape == (16, 2000) and "as a raster" in raster.get_title()
    # idle cells are masked; busy cells hold a job's colour index
    assert img.mask.any() and (~img.mask).mean() > 0.5 and set(np.unique(img.compressed())) <= set(range(20))


def test_router_matrix_is_the_mean_link_utilization(a):
    mat, what = plots.router_matrix(a)
    assert mat.shape == (20, 20) and what == "20 routers"
    L = a.links
    rr = (L["src"] >= 16) & (L["dst"] >= 16)
    for s, d in {(int(x), int(y)) for x, y in zip(L["src"][rr], L["dst"][rr])}:
        sel = rr & (L["src"] == s) & (L["dst"] == d)
        assert np.isclose(mat[s - 16, d - 16], L["utilization"][sel].mean())
    assert np.isnan(mat).sum() == 400 - len({(int(x), int(y)) for x, y in zip(L["src"][rr], L["dst"][rr])})
    # grouped: tiny-fattree3's locality units (pods), then merged blocks when still too many
    mat, what = plots.router_matrix(a, max_routers=8)
    assert mat.shape == (8, 8) and what == "20 routers in 8 locality units"
    mat, what = plots.router_matrix(a, max_routers=4)
    assert mat.shape == (4, 4) and what == "20 routers in 4 blocks of locality units"
    units = np.arange(20) % 2
    mat, what = plots.router_matrix(a, router_units=units)
    odd_src = (L["src"] - 16) % 2 == 1
    even_dst = (L["dst"] - 16) % 2 == 0
    assert mat.shape == (2, 2) and what == "20 routers in 2 units"
    assert np.isclose(mat[1, 0], L["utilization"][rr & odd_src & even_dst].mean())


def test_link_heatmap_figure(a):
    fig = plots.link_heatmap(a)
    ax, strip, cbar = fig.axes
    assert ax.images[0].get_array().shape == (20, 20)
    s = strip.images[0].get_array()
    inj = a.links["kind"] == 0
    assert s.shape == (2, 16) and np.allclose(s[0], a.links["utilization"][inj][np.argsort(a.links["src"][inj])])


def test_labels_accept_paths_and_number_repeated_names(tmp_path, a):
    p1 = write_results(a, tmp_path / "x.h5")
    p2 = write_results(a, tmp_path / "y.h5")
    lines = plots.wait_cdf([p1, str(p2)]).axes[0].get_lines()
    assert [ln.get_label().split(" (")[0] for ln in lines] == ["fcfs-tiny #1", "fcfs-tiny #2"]
    lines = plots.wait_cdf([a], labels=["mine"]).axes[0].get_lines()
    assert lines[0].get_label().startswith("mine (")


def test_plot_files_writes_every_figure(tmp_path, a, b):
    out = plots.plot_files([a, b], tmp_path / "figs", stems=["runs/fcfs.h5", "runs/sjf.h5"], dpi=50)
    names = [p.name for p in out.written]
    assert names == ["wait_cdf.png", "utilization.png", "queue_length.png", "aph_by_size.png", "bsld_by_size.png",
                     "slowdown.png", "interference.png",
                     "gantt_fcfs.png", "link_heatmap_fcfs.png", "gantt_sjf.png", "link_heatmap_sjf.png"]
    assert out.skipped == []
    for p in out.written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_files_labels_runs_of_one_experiment_by_their_files(tmp_path, a, b, monkeypatch):
    from simhpc.plots import files

    drawn = []

    def wait_cdf(results, labels):
        fig = plots.wait_cdf(results, labels=labels)
        drawn.append([ln.get_label().split(" (")[0] for ln in fig.axes[0].get_lines()])
        return fig

    monkeypatch.setitem(files.COMPARISON_FIGURES, "wait_cdf", wait_cdf)
    # Two runs of one experiment (say, two policies): the experiment name cannot tell them apart.
    plots.plot_files([a, a], tmp_path, stems=["runs/fcfs.h5", "runs/easy.h5"], dpi=30)
    # Runs of different experiments keep their names; given labels win.
    plots.plot_files([a, b], tmp_path, stems=["runs/x.h5", "runs/y.h5"], dpi=30)
    plots.plot_files([a, a], tmp_path, labels=["one", "two"], stems=["runs/x.h5", "runs/y.h5"], dpi=30)
    assert drawn == [["fcfs", "easy"], ["fcfs-tiny", "sjf-tiny"], ["one", "two"]]


def test_missing_matplotlib_names_the_extra(a, monkeypatch):
    for mod in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, mod, None)
    with pytest.raises(UserError, match=r"pip install 'simhpc\[plot\]'"):
        plots.wait_cdf(a)
