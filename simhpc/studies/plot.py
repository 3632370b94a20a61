"""The figure of an interference study: slowdown and runtime against background jobs.

Left: the foreground's slowdown (runtime / runtime alone) for every run as a point, the
median over seeds as a line and the range over seeds as a band. Right: its runtime with
background (median and range) against its runtime alone and on the ideal network (medians).
In trace mode the x axis is the number of background app jobs the foreground met.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .results import StudyResults

__all__ = ["plot_study"]


def plot_study(res: StudyResults, path: str | os.PathLike[str], *, title: str | None = None) -> Path:
    """Draw the study's figure to ``path`` (PNG, or any format matplotlib infers from the
    suffix); returns the path."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    key = res.group_key()
    ok = res.runs["status"] == "ok"
    ks = sorted(set(int(x) for x in key[ok]))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    if ks:
        x = key[ok].astype(float)
        # A small deterministic spread so that points of one k do not hide each other.
        jitter = ((res.runs["seed"][ok] % 7) - 3) * 0.03 * (max(ks) - min(ks) + 1) / max(len(ks), 1)
        ax1.scatter(x + jitter, res.runs["slowdown"][ok], s=14, alpha=0.6, color="tab:blue", label="runs (seeds)")
        rows = {r["k"]: r for r in res.by_k()}
        kk = np.array(ks, dtype=float)

        def series(name: str, stat: str) -> np.ndarray:
            return np.array([np.nan if rows[k][name][stat] is None else rows[k][name][stat] for k in ks], dtype=float)

        ax1.plot(kk, series("slowdown", "median"), "-o", color="tab:red", label="median")
        ax1.fill_between(kk, series("slowdown", "min"), series("slowdown", "max"), color="tab:red", alpha=0.15,
                         label="min-max over seeds")
        ax1.axhline(1.0, color="grey", lw=0.8, ls="--")
        scale, unit = _time_scale(np.nanmax(series("runtime", "max")))
        ax2.plot(kk, series("runtime", "median") * scale, "-o", color="tab:red", label="with background (median)")
        ax2.fill_between(kk, series("runtime", "min") * scale, series("runtime", "max") * scale, color="tab:red",
                         alpha=0.15)
        ax2.plot(kk, series("alone", "median") * scale, "-s", color="tab:blue", label="alone, same nodes (median)")
        ax2.plot(kk, series("ideal", "median") * scale, "-^", color="tab:green", label="ideal network (median)")
        ax2.set_ylabel(f"foreground runtime ({unit})")
        ax2.set_ylim(bottom=0)
    else:
        ax1.text(0.5, 0.5, "no run finished", ha="center", va="center", transform=ax1.transAxes)
    xlabel = "background jobs" if res.mode == "static" else "background app jobs met (trace)"
    from matplotlib.ticker import MaxNLocator

    for ax in (ax1, ax2):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)
        if ks:
            ax.legend(fontsize=8)
    ax1.set_ylabel("slowdown (runtime / alone)")
    fg = res.foreground
    fig.suptitle(title or f"{res.name}: {fg.get('app')} x {fg.get('ranks')} ranks on {res.machine.get('name')} "
                          f"({fg.get('allocator')} placement, {res.info.get('network', 'packet')} network)", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _time_scale(t: Any) -> tuple[float, str]:
    if not np.isfinite(t) or t <= 0:
        return 1.0, "s"
    for f, u in ((1e6, "us"), (1e3, "ms"), (1.0, "s")):
        if t * f < 1e4:
            return f, u
    return 1.0, "s"
