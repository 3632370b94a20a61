"""Gantt chart of node occupancy: nodes on y, time on x, one coloured bar per job and node range."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..results.model import Results
from ._common import NoDataError, ResultsLike, as_results, figure_and_axes, mpl, n_nodes, time_scale

__all__ = ["gantt", "node_segments"]

# Beyond this many bars the chart is drawn as a raster image (time bins x node rows).
MAX_SEGMENTS = 50_000
_RASTER_COLS = 2000
_RASTER_ROWS = 2000


def node_segments(r: Results) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The allocations of the jobs that ran as contiguous node ranges.

    Returns ``(row, lo, hi)``: job row index and first and last node (inclusive) of every
    maximal run of consecutive node ids in that job's allocation.
    """
    ptr = np.asarray(r.job_nodes_ptr, dtype=np.int64)
    counts = np.diff(ptr)
    rows = np.repeat(np.arange(r.n_jobs, dtype=np.int64), counts)
    nodes = np.asarray(r.job_nodes, dtype=np.int64)
    keep = r.ran()[rows] if len(rows) else np.zeros(0, dtype=bool)
    rows, nodes = rows[keep], nodes[keep]
    if not len(rows):
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    order = np.lexsort((nodes, rows))
    rows, nodes = rows[order], nodes[order]
    brk = np.ones(len(rows), dtype=bool)
    brk[1:] = (rows[1:] != rows[:-1]) | (nodes[1:] != nodes[:-1] + 1)
    first = np.flatnonzero(brk)
    last = np.r_[first[1:], len(rows)] - 1
    return rows[first], nodes[first], nodes[last]


def gantt(results: ResultsLike, ax: Any = None, *, max_segments: int = MAX_SEGMENTS) -> Any:
    """Node occupancy over time: one coloured rectangle per job and contiguous node range.

    Up to ``max_segments`` rectangles are drawn as vector shapes (one collection); beyond
    that the chart becomes a raster image of at most 2000 time bins x 2000 node rows, where
    a cell shows a job that occupied it. Returns the Figure.
    """
    m = mpl()
    r = as_results(results)
    row, lo, hi = node_segments(r)
    if not len(row):
        raise NoDataError("no job ran on recorded nodes, so there is no occupancy to draw")
    start = r.jobs["start"][row].astype(float)
    end = r.jobs["end"][row].astype(float)
    t0 = float(start.min())
    t1 = float(end.max())
    div, unit = time_scale(t1 - t0)
    total = max(n_nodes(r), int(hi.max()) + 1)
    cmap = m.colormaps["tab20"]
    fig, ax = figure_and_axes(ax, figsize=(9.0, 5.0))
    if len(row) <= max_segments:
        x0, x1 = start / div, end / div
        y0, y1 = lo.astype(float), hi.astype(float) + 1.0
        verts = np.stack([np.c_[x0, y0], np.c_[x0, y1], np.c_[x1, y1], np.c_[x1, y0]], axis=1)
        thin = len(row) <= 2000
        coll = m.collections.PolyCollection(verts, facecolors=cmap(row % 20),
                                            edgecolors="white" if thin else "none",
                                            linewidths=0.3 if thin else 0.0)
        ax.add_collection(coll)
        ax.set_xlim(t0 / div, t1 / div if t1 > t0 else t0 / div + 1)
        ax.set_ylim(0, total)
        how = f"{len(row)} bars"
    else:
        img = _raster(row, lo, hi, start, end, t0, t1, total)
        masked = np.ma.masked_less(img, 0)
        ax.imshow(masked, cmap=m.colors.ListedColormap([cmap(i) for i in range(20)]), vmin=-0.5, vmax=19.5,
                  origin="lower", aspect="auto", interpolation="nearest",
                  extent=(t0 / div, (t1 if t1 > t0 else t0 + 1) / div, 0, total))
        how = f"{len(row)} bars as a raster"
    ax.set_xlabel(f"simulated time ({unit})")
    ax.set_ylabel("node")
    ax.set_title(f"{r.name}: node occupancy ({int(r.ran().sum())} jobs, {how})")
    return fig


def _raster(row: np.ndarray, lo: np.ndarray, hi: np.ndarray, start: np.ndarray, end: np.ndarray,
            t0: float, t1: float, total: int) -> np.ndarray:
    h = min(total, _RASTER_ROWS)
    w = _RASTER_COLS
    img = np.full((h, w), -1, dtype=np.int16)
    span = (t1 - t0) or 1.0
    c0 = np.clip(np.floor((start - t0) / span * w).astype(np.int64), 0, w - 1)
    c1 = np.clip(np.ceil((end - t0) / span * w).astype(np.int64), c0 + 1, w)
    r0 = lo * h // total
    r1 = np.maximum((hi + 1) * h // total, r0 + 1)
    colour = (row % 20).astype(np.int16)
    for a, b, c, d, k in zip(r0.tolist(), r1.tolist(), c0.tolist(), c1.tolist(), colour.tolist()):
        img[a:b, c:d] = k
    return img
