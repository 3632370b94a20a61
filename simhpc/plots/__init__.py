"""Figures of experiment results (matplotlib, the optional ``simhpc[plot]`` extra).

Each figure is a function that takes :class:`~simhpc.results.model.Results` objects (or
paths to results files), draws into ``ax`` when one is given, and returns the matplotlib
Figure. The figures are built without pyplot, so they work headless and leave the caller's
pyplot state alone::

    from simhpc.plots import wait_cdf, gantt
    fig = wait_cdf(["fcfs.h5", "easy.h5"])   # both policies on one plot
    fig.savefig("wait.png")
    gantt("easy.h5").savefig("gantt.png")

Comparison figures (several files on one plot): :func:`wait_cdf` (log time axis),
:func:`utilization` (binned by hour or day for long runs), :func:`queue_length`,
:func:`aph_by_size`, :func:`slowdown_by_size` (bounded slowdown by job size), :func:`network_slowdown`, :func:`interference_slowdown`. Per-file figures: :func:`gantt`,
:func:`link_heatmap`. :func:`plot_files` draws them all into a directory (``simhpc plot``).
A figure with nothing to draw raises :class:`NoDataError`.
"""

from ._common import INSTALL_HINT, NoDataError
from .comparison import aph_by_size, binned_mean, interference_slowdown, network_slowdown, queue_length, size_bins, \
    slowdown_by_size, time_bins, utilization, wait_cdf
from .files import COMPARISON_FIGURES, FORMATS, PER_FILE_FIGURES, PlotOutput, plot_files
from .gantt import gantt, node_segments
from .heatmap import link_heatmap, router_matrix

__all__ = [
    "INSTALL_HINT", "NoDataError", "wait_cdf", "utilization", "queue_length", "slowdown_by_size", "time_bins",
    "binned_mean", "aph_by_size", "network_slowdown", "interference_slowdown", "size_bins",
    "gantt", "node_segments", "link_heatmap", "router_matrix", "plot_files", "PlotOutput", "FORMATS",
    "COMPARISON_FIGURES", "PER_FILE_FIGURES",
]
