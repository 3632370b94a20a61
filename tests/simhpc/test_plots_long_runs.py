"""Figures of long trace replays: utilization and queue length binned by hour or day, the
bounded slowdown by job size, and no link heat map (with the reason) without traffic."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from results_helpers import fabricate  # noqa: E402
from simhpc import plots  # noqa: E402
from simhpc.results import Results  # noqa: E402
from scheduler.errors import UserError  # noqa: E402
from simhpc.trace_replay import replay, replay_results  # noqa: E402
from simhpc.traces import trace_path  # noqa: E402


@pytest.fixture(scope="module")
def long_run() -> Results:
    # 3,000 CTC-SP2 jobs: 17.5 days, thousands of steps in the busy-node series
    res = replay(str(trace_path("CTC-SP2-1996-3.1-cln.swf.gz")), limit=3000, tau=60)
    return replay_results(res)


def test_binned_mean_is_the_time_average_and_the_maximum():
    # 2 on [0, 30), 4 on [30, 90), 0 from 90: bins of 60 s from 0 to 120
    starts, means, top = plots.binned_mean(np.array([0.0, 30.0, 90.0, 120.0]), np.array([2.0, 4.0, 0.0, 0.0]), 60.0)
    assert starts.tolist() == [0.0, 60.0]
    assert means.tolist() == [(2 * 30 + 4 * 30) / 60, (4 * 30) / 60]
    assert top.tolist() == [4.0, 4.0]


def test_time_bins():
    assert plots.time_bins(1e6, 500) is None  # few steps: every step is drawn
    assert plots.time_bins(1e6, 5000) == 3600.0  # 278 hours
    assert plots.time_bins(3e7, 5000) == 86400.0  # 347 days
    assert plots.time_bins(3e7, 5000, "hour") == 3600.0 and plots.time_bins(1e6, 10, 900) == 900.0
    assert plots.time_bins(1e6, 5000, "none") is None
    for bad in ("fortnight", 0, -5.0):
        with pytest.raises(UserError, match="bins"):
            plots.time_bins(1e6, 5000, bad)


def test_utilization_of_a_long_run_is_binned(long_run):
    r = long_run
    assert len(r.series["busy_times"]) > 1000
    ax = plots.utilization(r).axes[0]
    (ln,) = ax.get_lines()
    x = np.asarray(ln.get_xdata())
    y = np.asarray(ln.get_ydata())
    span = r.series["busy_times"][-1] - r.series["busy_times"][0]
    assert np.allclose(np.diff(x), 1 / 24)  # hour bins on a day axis
    assert len(x) == int(np.ceil(span / 3600)) + 1
    assert "mean per hour" in ax.get_ylabel()
    # the bins' time average is the exact utilization of that span
    t = r.series["busy_times"]
    exact = np.sum(r.series["busy_nodes"][:-1] * np.diff(t)) / (338 * (t[-1] - t[0]))
    assert np.mean(y[:-1]) / 100 * (len(y) - 1) * 3600 / (t[-1] - t[0]) == pytest.approx(exact, rel=1e-9)
    (day,) = plots.utilization(r, bins="day").axes[0].get_lines()
    assert np.allclose(np.diff(day.get_xdata()), 1.0)


def test_queue_length_binned_and_exact(long_run, a=None):
    r = long_run
    ax = plots.queue_length(r).axes[0]
    (ln,) = ax.get_lines()
    assert "mean per hour" in ax.get_ylabel() and f"(max {int(r.series['queue_lengths'].max())})" in ln.get_label()
    assert len(ax.collections) == 1  # the band up to each bin's maximum
    small = fabricate()
    (ln,) = plots.queue_length(small).axes[0].get_lines()
    assert np.allclose(ln.get_ydata(), small.series["queue_lengths"])


def test_bounded_slowdown_by_size(long_run):
    r = long_run
    ax = plots.slowdown_by_size(r).axes[0]
    assert ax.get_yscale() == "log" and "tau 60 s" in ax.get_ylabel()
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks[:3] == ["1", "2", "3-4"]
    # one box per size class that has jobs; its median line is the class's median
    ran = r.ran()
    nodes = r.jobs["nodes"][ran]
    sld = r.jobs["bounded_slowdown"][ran]
    idx, labels = plots.size_bins(nodes)
    medians = sorted(float(np.median(sld[idx == k])) for k in range(len(labels)) if (idx == k).any())
    drawn = sorted(float(ln.get_ydata()[0]) for ln in ax.get_lines()
                   if len(ln.get_ydata()) == 2 and ln.get_ydata()[0] == ln.get_ydata()[1] and ln.get_linewidth() == 1.5)
    assert np.allclose(drawn, medians)


def test_no_heat_map_without_traffic(long_run, tmp_path):
    with pytest.raises(plots.NoDataError, match="no per-link statistics .* no link heat map"):
        plots.link_heatmap(long_run)
    quiet = fabricate()
    quiet = Results(**{**quiet.__dict__, "links": {**quiet.links, "bytes": np.zeros_like(quiet.links["bytes"])}})
    with pytest.raises(plots.NoDataError, match="no network traffic"):
        plots.link_heatmap(quiet)
    out = plots.plot_files([quiet], tmp_path, stems=["quiet.h5"], dpi=40)
    assert any(s.startswith("link_heatmap_quiet.png: no network traffic") for s in out.skipped)
    assert "link_heatmap_quiet.png" not in [p.name for p in out.written]
