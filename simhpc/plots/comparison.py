"""Figures that compare several results files on one plot (one colour per file)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..results.model import Results
from ._common import NoDataError, ResultsLike, as_results_list, colors, figure_and_axes, labels_for, mpl, n_nodes, \
    time_scale

__all__ = ["wait_cdf", "utilization", "aph_by_size", "network_slowdown", "interference_slowdown", "size_bins"]


def wait_cdf(results: ResultsLike | Sequence[ResultsLike], ax: Any = None, *,
             labels: Sequence[str] | None = None, xscale: str = "linear") -> Any:
    """Empirical CDF of the wait time (start - submit) of the jobs that ran, one line per file.

    ``xscale`` is any matplotlib scale ("linear", "log", "symlog"). Returns the Figure.
    """
    rs = as_results_list(results)
    names = labels_for(rs, labels)
    waits = [r.jobs["wait"][r.ran()].astype(float) for r in rs]
    if not any(len(w) for w in waits):
        raise NoDataError("no job ran, so there are no wait times")
    span = max(float(np.max(w)) for w in waits if len(w))
    div, unit = time_scale(span)
    fig, ax = figure_and_axes(ax)
    for w, name, c in zip(waits, names, colors(len(rs))):
        if not len(w):
            continue
        ax.ecdf(w / div, label=f"{name} (mean {np.mean(w) / div:.3g} {unit})", color=c)
    ax.set_xscale(xscale)
    ax.set_xlabel(f"wait time ({unit})")
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1.02)
    ax.set_title("Wait-time CDF")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    return fig


def _busy_curve(r: Results) -> tuple[np.ndarray, np.ndarray] | None:
    """(times, busy fraction) as a step function (value holds from each time on)."""
    s = r.series
    total = n_nodes(r)
    t = np.asarray(s.get("busy_times", ()), dtype=float)
    if len(t):
        v = np.asarray(s["busy_nodes"], dtype=float) / total
        t0 = r.system.get("t_first_submit")
        if isinstance(t0, (int, float)) and np.isfinite(t0) and t0 < t[0]:
            t = np.r_[t0, t]
            v = np.r_[0.0, v]
        return t, v
    t = np.asarray(s.get("sample_times", ()), dtype=float)
    if len(t) and "utilization_samples" in s:
        return t, np.asarray(s["utilization_samples"], dtype=float)
    return None


def utilization(results: ResultsLike | Sequence[ResultsLike], ax: Any = None, *,
                labels: Sequence[str] | None = None) -> Any:
    """Busy nodes (% of the machine) over simulated time, one step line per file.

    Uses the exact busy-node step function (``busy_times``/``busy_nodes``), or the sampled
    ``utilization_samples`` when a file has only those. Returns the Figure.
    """
    rs = as_results_list(results)
    names = labels_for(rs, labels)
    curves = [_busy_curve(r) for r in rs]
    if all(c is None for c in curves):
        raise NoDataError("no utilization series (busy_times/busy_nodes or utilization_samples)")
    span = max(float(c[0][-1] - c[0][0]) for c in curves if c is not None)
    div, unit = time_scale(span)
    fig, ax = figure_and_axes(ax)
    for c, name, col, r in zip(curves, names, colors(len(rs)), rs):
        if c is None:
            continue
        t, v = c
        mean = r.system.get("utilization")
        lab = f"{name} (mean {100 * mean:.1f} %)" if isinstance(mean, float) and np.isfinite(mean) else name
        ax.step(t / div, 100 * v, where="post", label=lab, color=col, linewidth=1.0)
    ax.set_xlabel(f"simulated time ({unit})")
    ax.set_ylabel("busy nodes (% of machine)")
    ax.set_ylim(0, 105)
    ax.set_title("Utilization over time")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    return fig


def size_bins(nodes: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Power-of-two job-size bins: the bin index of each node count and the bin labels
    ("1", "2", "3-4", "5-8", ...), up to the largest count given."""
    nodes = np.asarray(nodes, dtype=np.int64)
    idx = np.zeros(len(nodes), dtype=np.int64)
    big = nodes > 1
    # bin k >= 1 holds 2^(k-1) < n <= 2^k
    idx[big] = np.ceil(np.log2(nodes[big])).astype(np.int64)
    top = int(idx.max()) if len(idx) else 0
    labels = []
    for k in range(top + 1):
        lo, hi = (1, 1) if k == 0 else (2 ** (k - 1) + 1, 2**k)
        labels.append(str(hi) if lo == hi else f"{lo}-{hi}")
    return idx, labels


def _grouped_boxes(ax: Any, groups: list[list[np.ndarray]], names: list[str], ticklabels: list[str]) -> None:
    """Box plots at ``groups[file][group]``, files side by side within each group."""
    m = mpl()
    k = len(groups)
    width = 0.8 / k
    cols = colors(k)
    for f, (per_group, col) in enumerate(zip(groups, cols)):
        pos = [g - 0.4 + width * (f + 0.5) for g, d in enumerate(per_group) if len(d)]
        data = [d for d in per_group if len(d)]
        if not data:
            continue
        ax.boxplot(data, positions=pos, widths=width * 0.85, patch_artist=True, manage_ticks=False,
                   boxprops={"facecolor": m.colors.to_rgba(col, 0.45), "edgecolor": col},
                   medianprops={"color": col, "linewidth": 1.5},
                   whiskerprops={"color": col}, capprops={"color": col},
                   flierprops={"markeredgecolor": col, "markersize": 3})
    ax.set_xticks(range(len(ticklabels)), ticklabels)
    ax.set_xlim(-0.6, len(ticklabels) - 0.4)
    if k > 1:
        handles = [m.patches.Patch(facecolor=m.colors.to_rgba(c, 0.45), edgecolor=c, label=n)
                   for c, n in zip(cols, names)]
        ax.legend(handles=handles)


def aph_by_size(results: ResultsLike | Sequence[ResultsLike], ax: Any = None, *,
                labels: Sequence[str] | None = None) -> Any:
    """Box plots of the average pairwise hops (APH) of each job's allocation by job size
    (power-of-two node-count bins), files side by side. Returns the Figure."""
    rs = as_results_list(results)
    names = labels_for(rs, labels)
    per_file = []
    for r in rs:
        ok = r.ran() & np.isfinite(r.jobs["aph"]) & (r.jobs["nodes"] > 0)
        per_file.append((r.jobs["nodes"][ok], r.jobs["aph"][ok].astype(float)))
    if not any(len(n) for n, _ in per_file):
        raise NoDataError("no job has an APH (average pairwise hops) figure")
    _, ticks = size_bins(np.concatenate([n for n, _ in per_file]))
    groups = []
    for nodes, aph in per_file:
        idx, _ = size_bins(nodes)
        groups.append([aph[idx == b] for b in range(len(ticks))])
    fig, ax = figure_and_axes(ax)
    _grouped_boxes(ax, groups, names, ticks)
    ax.set_xlabel("job size (nodes)")
    ax.set_ylabel("APH (inter-switch hops)")
    ax.set_title("Average pairwise hops by job size" + (f": {names[0]}" if len(rs) == 1 else ""))
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def _slowdown_figure(results: ResultsLike | Sequence[ResultsLike], ax: Any, labels: Sequence[str] | None, *,
                     baseline: str, what: str, ylabel: str, title: str) -> Any:
    """Box plots of ``app_run / <baseline>`` per application (foreground jobs apart, marked
    "(fg)"), files side by side."""
    rs = as_results_list(results)
    names = labels_for(rs, labels)
    per_file = []
    for r in rs:
        base = r.jobs[baseline]
        own = r.jobs["app_run"]
        run = np.where(np.isfinite(own), own, r.jobs["run"])  # files before app_run existed
        ok = r.ran() & np.isfinite(base) & (base > 0) & np.isfinite(run)
        fg = np.asarray(r.jobs["foreground"], dtype=bool)[ok]
        group = np.array([f"{a} (fg)" if f else str(a) for a, f in zip(r.jobs["app"][ok].tolist(), fg.tolist())],
                         dtype=object)
        per_file.append((group, (run[ok] / base[ok]).astype(float)))
    if not any(len(g) for g, _ in per_file):
        raise NoDataError(f"no job has {what} ({baseline})")
    # Foreground groups last, so the jobs under study stand at the right of the figure.
    apps = sorted({str(a) for g, _ in per_file for a in g.tolist()}, key=lambda a: (a.endswith("(fg)"), a))
    groups = [[sd[g == name] for name in apps] for g, sd in per_file]
    fig, ax = figure_and_axes(ax)
    _grouped_boxes(ax, groups, names, apps)
    ax.axhline(1.0, color="0.4", linewidth=0.8, linestyle="--")
    ax.set_xlabel("application ((fg): foreground jobs)")
    ax.set_ylabel(ylabel)
    ax.set_title(title + (f": {names[0]}" if len(rs) == 1 else ""))
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def network_slowdown(results: ResultsLike | Sequence[ResultsLike], ax: Any = None, *,
                     labels: Sequence[str] | None = None) -> Any:
    """Box plots of each job's runtime over its ideal-network runtime (``app_run / ideal_run``;
    ``run`` for files written before ``app_run`` existed) by application (foreground jobs
    apart), files side by side; jobs without ``ideal_run`` are left out.

    Raises :class:`NoDataError` when no job of any file has an ideal-network runtime.
    Returns the Figure.
    """
    return _slowdown_figure(results, ax, labels, baseline="ideal_run", what="an ideal-network runtime",
                            ylabel="runtime / ideal-network runtime", title="Network slowdown by application")


def interference_slowdown(results: ResultsLike | Sequence[ResultsLike], ax: Any = None, *,
                          labels: Sequence[str] | None = None) -> Any:
    """Box plots of each job's runtime over its runtime alone on the same nodes and network
    model (``app_run / alone_run``: what its neighbours cost it) by application (foreground
    jobs apart), files side by side; jobs without ``alone_run`` are left out.

    Raises :class:`NoDataError` when no job of any file has a runtime alone
    (``[scheduler] alone_baseline = true`` computes it). Returns the Figure.
    """
    return _slowdown_figure(results, ax, labels, baseline="alone_run", what="a runtime alone",
                            ylabel="runtime / runtime alone on the same nodes",
                            title="Interference slowdown by application")
