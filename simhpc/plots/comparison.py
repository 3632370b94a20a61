"""Figures that compare several results files on one plot (one colour per file)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from scheduler.errors import UserError
from scheduler.metrics import size_classes

from ..results.model import Results
from ._common import NoDataError, ResultsLike, as_results_list, colors, figure_and_axes, labels_for, mpl, n_nodes, \
    time_scale

__all__ = ["wait_cdf", "utilization", "queue_length", "aph_by_size", "slowdown_by_size", "network_slowdown",
           "interference_slowdown", "size_bins", "time_bins", "binned_mean"]

#: Waits below this many seconds are drawn at it on a log axis (the legend counts them).
WAIT_FLOOR = 1.0

#: Bin widths a long series is averaged over (seconds), smallest first.
BINS = {"minute": 60.0, "hour": 3600.0, "day": 86400.0, "week": 604800.0}
#: A step function with more steps than this is drawn binned by ``bins="auto"``.
MAX_STEPS = 1000
#: ``bins="auto"`` takes the smallest of :data:`BINS` that gives at most this many bins.
MAX_BINS = 500


def wait_cdf(results: ResultsLike | Sequence[ResultsLike], ax: Any = None, *,
             labels: Sequence[str] | None = None, xscale: str = "log") -> Any:
    """Empirical CDF of the wait time (start - submit) of the jobs that ran, one line per file.

    ``xscale`` is any matplotlib scale: "log" (the default: waits span seconds to days) draws
    waits under :data:`WAIT_FLOOR` (1 s, zero included) at 1 s and says in the legend how
    many jobs that is; "linear" or "symlog" draw them as they are. Returns the Figure.
    """
    rs = as_results_list(results)
    names = labels_for(rs, labels)
    waits = [r.jobs["wait"][r.ran()].astype(float) for r in rs]
    if not any(len(w) for w in waits):
        raise NoDataError("no job ran, so there are no wait times")
    span = max(float(np.max(w)) for w in waits if len(w))
    div, unit = time_scale(span)
    log = xscale == "log"
    fig, ax = figure_and_axes(ax)
    for w, name, c in zip(waits, names, colors(len(rs))):
        if not len(w):
            continue
        label = f"{name} (mean {np.mean(w) / div:.3g} {unit}"
        if log:
            short = float(np.mean(w < WAIT_FLOOR))
            label += f"; {100 * short:.0f} % under {WAIT_FLOOR:g} s" if short else ""
            w = np.maximum(w, WAIT_FLOOR)
        ax.ecdf(w / div, label=label + ")", color=c)
    ax.set_xscale(xscale)
    ax.set_xlabel(f"wait time ({unit}{', log scale' if log else ''})")
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


def time_bins(span: float, steps: int, bins: str | float = "auto") -> float | None:
    """The bin width (seconds) to average a step function of ``steps`` steps over ``span``
    seconds: None (draw every step) for ``"auto"`` up to :data:`MAX_STEPS` steps or for
    ``"none"``; a name of :data:`BINS`; a number of seconds; for ``"auto"`` beyond that, the
    smallest of :data:`BINS` giving at most :data:`MAX_BINS` bins."""
    if bins == "none" or (bins == "auto" and steps <= MAX_STEPS):
        return None
    if bins == "auto":
        for width in BINS.values():
            if span / width <= MAX_BINS:
                return width
        return span / MAX_BINS
    if isinstance(bins, str):
        if bins not in BINS:
            raise UserError(f"unknown bins {bins!r}; valid: auto, none, {', '.join(BINS)} or a number of seconds")
        return BINS[bins]
    if not (isinstance(bins, (int, float)) and np.isfinite(bins) and bins > 0):
        raise UserError(f"bins must be auto, none, {', '.join(BINS)} or a number of seconds > 0, got {bins!r}")
    return float(bins)


def binned_mean(t: np.ndarray, v: np.ndarray, width: float, t0: float | None = None,
                t1: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The time average and the maximum of the step function ``v`` (value ``v[i]`` from
    ``t[i]`` on) over bins of ``width`` seconds from ``t0`` (default ``t[0]``) to ``t1``
    (default ``t[-1]``): (bin starts, means, maxima)."""
    t = np.asarray(t, dtype=float)
    v = np.asarray(v, dtype=float)
    t0 = float(t[0]) if t0 is None else t0
    t1 = float(t[-1]) if t1 is None else t1
    n = max(int(np.ceil((t1 - t0) / width)), 1)
    edges = t0 + width * np.arange(n + 1)
    # Integral of the step function at each edge: cumulative area up to the step, plus the
    # part of the step before the edge.
    seg = np.diff(t)
    area = np.r_[0.0, np.cumsum(v[:-1] * seg)]
    k = np.clip(np.searchsorted(t, edges, side="right") - 1, 0, len(t) - 1)
    before = edges < t[0]
    at = np.where(before, 0.0, area[k] + v[k] * (edges - t[k]))
    means = np.diff(at) / width
    # The largest value in each bin: the value at its start and every step inside it.
    idx = np.searchsorted(edges, t, side="right") - 1
    maxima = np.where(edges[:-1] < t[0], 0.0, v[k[:-1]])
    inside = (idx >= 0) & (idx < n)
    np.maximum.at(maxima, idx[inside], v[inside])
    return edges[:-1], means, maxima


def utilization(results: ResultsLike | Sequence[ResultsLike], ax: Any = None, *,
                labels: Sequence[str] | None = None, bins: str | float = "auto") -> Any:
    """Busy nodes (% of the machine) over simulated time, one line per file.

    Uses the exact busy-node step function (``busy_times``/``busy_nodes``), or the sampled
    ``utilization_samples`` when a file has only those. A long run is drawn as the time
    average over bins (``bins``: see :func:`time_bins`; by default hours or days, whatever
    keeps it to a few hundred bins) rather than every step. Returns the Figure.
    """
    rs = as_results_list(results)
    names = labels_for(rs, labels)
    curves = [_busy_curve(r) for r in rs]
    if all(c is None for c in curves):
        raise NoDataError("no utilization series (busy_times/busy_nodes or utilization_samples)")
    span = max(float(c[0][-1] - c[0][0]) for c in curves if c is not None)
    steps = max(len(c[0]) for c in curves if c is not None)
    width = time_bins(span, steps, bins)
    div, unit = time_scale(span)
    fig, ax = figure_and_axes(ax)
    for c, name, col, r in zip(curves, names, colors(len(rs)), rs):
        if c is None:
            continue
        t, v = c
        mean = r.system.get("utilization")
        lab = f"{name} (mean {100 * mean:.1f} %)" if isinstance(mean, float) and np.isfinite(mean) else name
        if width is not None:
            t, v, _ = binned_mean(t, v, width)
            t = np.r_[t, t[-1] + width]
            v = np.r_[v, v[-1]]
        ax.step(t / div, 100 * v, where="post", label=lab, color=col, linewidth=1.0)
    ax.set_xlabel(f"simulated time ({unit})")
    ax.set_ylabel("busy nodes (% of machine)" + ("" if width is None else f", mean per {_width_name(width)}"))
    ax.set_ylim(0, 105)
    ax.set_title("Utilization over time")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    return fig


def _width_name(width: float) -> str:
    for name, w in BINS.items():
        if w == width:
            return name
    return f"{width:g} s"


def queue_length(results: ResultsLike | Sequence[ResultsLike], ax: Any = None, *,
                 labels: Sequence[str] | None = None, bins: str | float = "auto") -> Any:
    """Queued jobs over simulated time, one line per file, from the exact step function
    (``queue_times``/``queue_lengths``), else the samples (``queue_samples``). A long run is
    drawn as the time average per bin (``bins`` as in :func:`utilization`) with each bin's
    maximum shaded. Returns the Figure."""
    rs = as_results_list(results)
    names = labels_for(rs, labels)
    curves = []
    for r in rs:
        s = r.series
        t = np.asarray(s.get("queue_times", ()), dtype=float)
        if len(t):
            curves.append((t, np.asarray(s["queue_lengths"], dtype=float)))
        elif len(s.get("sample_times", ())) and "queue_samples" in s:
            curves.append((np.asarray(s["sample_times"], dtype=float), np.asarray(s["queue_samples"], dtype=float)))
        else:
            curves.append(None)
    if all(c is None for c in curves):
        raise NoDataError("no queue-length series (queue_times/queue_lengths or queue_samples)")
    span = max(float(c[0][-1] - c[0][0]) for c in curves if c is not None)
    steps = max(len(c[0]) for c in curves if c is not None)
    width = time_bins(span, steps, bins)
    div, unit = time_scale(span)
    m = mpl()
    fig, ax = figure_and_axes(ax)
    for c, name, col in zip(curves, names, colors(len(rs))):
        if c is None:
            continue
        t, v = c
        lab = f"{name} (max {int(v.max())})"
        if width is not None:
            t, v, top = binned_mean(t, v, width)
            t = np.r_[t, t[-1] + width]
            v = np.r_[v, v[-1]]
            top = np.r_[top, top[-1]]
            ax.fill_between(t / div, v, top, step="post", color=m.colors.to_rgba(col, 0.2), linewidth=0)
        ax.step(t / div, v, where="post", label=lab, color=col, linewidth=1.0)
    ax.set_xlabel(f"simulated time ({unit})")
    ax.set_ylabel("queued jobs" + ("" if width is None else f" (mean per {_width_name(width)}; shaded up to the max)"))
    ax.set_ylim(bottom=0)
    ax.set_title("Queue length over time")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right")
    return fig


def size_bins(nodes: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Power-of-two job-size bins: the bin index of each node count and the bin labels
    ("1", "2", "3-4", "5-8", ...), up to the largest count given (the size classes of
    :func:`scheduler.metrics.size_classes`)."""
    return size_classes(nodes)


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


def _by_size(rs: list, column: str, empty: str) -> tuple[list[list[np.ndarray]], list[str]]:
    """Per file, the finite values of job column ``column`` of the jobs that ran, split by
    power-of-two node-count class; and the classes' tick labels (``empty``: the error
    when no file has any)."""
    per_file = []
    for r in rs:
        ok = r.ran() & np.isfinite(r.jobs[column]) & (r.jobs["nodes"] > 0)
        per_file.append((r.jobs["nodes"][ok], r.jobs[column][ok].astype(float)))
    if not any(len(n) for n, _ in per_file):
        raise NoDataError(empty)
    _, ticks = size_bins(np.concatenate([n for n, _ in per_file]))
    groups = []
    for nodes, vals in per_file:
        idx, _ = size_bins(nodes)
        groups.append([vals[idx == b] for b in range(len(ticks))])
    return groups, ticks


def aph_by_size(results: ResultsLike | Sequence[ResultsLike], ax: Any = None, *,
                labels: Sequence[str] | None = None) -> Any:
    """Box plots of the average pairwise hops (APH) of each job's allocation by job size
    (power-of-two node-count bins), files side by side. Returns the Figure."""
    rs = as_results_list(results)
    names = labels_for(rs, labels)
    groups, ticks = _by_size(rs, "aph", "no job has an APH (average pairwise hops) figure")
    fig, ax = figure_and_axes(ax)
    _grouped_boxes(ax, groups, names, ticks)
    ax.set_xlabel("job size (nodes)")
    ax.set_ylabel("APH (inter-switch hops)")
    ax.set_title("Average pairwise hops by job size" + (f": {names[0]}" if len(rs) == 1 else ""))
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def slowdown_by_size(results: ResultsLike | Sequence[ResultsLike], ax: Any = None, *,
                     labels: Sequence[str] | None = None) -> Any:
    """Box plots of the bounded slowdown of the jobs that ran by job size (power-of-two
    node-count classes), files side by side, on a log axis;
    the y label gives ``tau`` (``/system/tau``; 10 s for files that do not record it).
    Returns the Figure."""
    rs = as_results_list(results)
    names = labels_for(rs, labels)
    groups, ticks = _by_size(rs, "bounded_slowdown", "no job that ran has a bounded slowdown")
    fig, ax = figure_and_axes(ax)
    _grouped_boxes(ax, groups, names, ticks)
    ax.set_yscale("log")
    # Files written before tau was recorded used 10 s.
    taus = {float(r.system.get("tau", 10.0)) for r in rs}
    tau_text = f"tau {taus.pop():g} s" if len(taus) == 1 else "tau differs between files"
    ax.set_xlabel("job size (nodes)")
    ax.set_ylabel(f"bounded slowdown ({tau_text}, log scale)")
    ax.set_title("Bounded slowdown by job size" + (f": {names[0]}" if len(rs) == 1 else ""))
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
