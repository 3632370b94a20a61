"""Shared pieces of the figures: matplotlib loading, inputs, labels, time axes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from pdes.validate import is_int
from scheduler.errors import UserError
from ..results.model import Results

INSTALL_HINT = "pip install 'simhpc[plot]'"

ResultsLike = Results | str | os.PathLike[str]


class NoDataError(UserError):
    """A figure has nothing to draw for the results given (the message says what is missing)."""


def mpl() -> Any:
    """The matplotlib modules the figures use, or a clear error naming the extra to install.

    Figures are built as :class:`matplotlib.figure.Figure` objects without pyplot, so drawing
    works headless and never changes the caller's pyplot state or backend.
    """
    try:
        import matplotlib
        import matplotlib.collections
        import matplotlib.colors
        import matplotlib.figure
        import matplotlib.patches
        import matplotlib.ticker
    except ImportError:
        raise UserError(f"the figures need matplotlib: {INSTALL_HINT}") from None
    return matplotlib


def as_results(item: ResultsLike) -> Results:
    """A :class:`Results`, reading it from a file when given a path."""
    if isinstance(item, Results):
        return item
    if isinstance(item, (str, os.PathLike)):
        from ..results.hdf5 import read_results

        return read_results(item)
    raise TypeError(f"expected Results or a path to a results file, got {type(item).__name__}")


def as_results_list(items: ResultsLike | Sequence[ResultsLike]) -> list[Results]:
    if isinstance(items, (Results, str, os.PathLike)):
        items = [items]
    out = [as_results(x) for x in items]
    if not out:
        raise ValueError("no results given")
    return out


def labels_for(results: Sequence[Results], labels: Sequence[str] | None) -> list[str]:
    """Legend labels: the given ones, else the experiment names (numbered when they repeat)."""
    if labels is not None:
        labels = [str(x) for x in labels]
        if len(labels) != len(results):
            raise ValueError(f"labels: {len(labels)} given for {len(results)} results")
        return labels
    names = [r.name or "results" for r in results]
    seen: dict[str, int] = {}
    out = []
    for n in names:
        if names.count(n) > 1:
            seen[n] = seen.get(n, 0) + 1
            out.append(f"{n} #{seen[n]}")
        else:
            out.append(n)
    return out


def figure_and_axes(ax: Any, figsize: tuple[float, float] = (7.0, 4.5)) -> tuple[Any, Any]:
    """``(figure, axes)``: the given axes and its figure, or a new figure with one axes."""
    if ax is not None:
        return ax.figure, ax
    m = mpl()
    fig = m.figure.Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def time_scale(span: float) -> tuple[float, str]:
    """(divisor, unit) for showing times of about ``span`` seconds."""
    if not np.isfinite(span) or span < 120:
        return 1.0, "s"
    if span < 7200:
        return 60.0, "min"
    if span < 172800:
        return 3600.0, "h"
    return 86400.0, "d"


def n_nodes(r: Results) -> int:
    """Node count of the machine (from the machine summary, else the largest node used + 1)."""
    for d, key in ((r.machine, "nodes"), (r.system, "n_nodes")):
        v = d.get(key)
        if is_int(v) and v > 0:
            return int(v)
    return int(r.job_nodes.max()) + 1 if len(r.job_nodes) else 1


def colors(n: int) -> list[Any]:
    """``n`` distinct colours from matplotlib's default cycle (then tab20 beyond it)."""
    m = mpl()
    cyc = [c["color"] for c in m.rcParams["axes.prop_cycle"]]
    if n <= len(cyc):
        return cyc[:n]
    cmap = m.colormaps["tab20"]
    return [cmap(i % 20) for i in range(n)]


def ensure_dir(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    p.mkdir(parents=True, exist_ok=True)
    return p
