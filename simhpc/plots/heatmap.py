"""Per-link utilization heat map: router-to-router matrix plus the nodes' injection/ejection strip."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..results.model import Results
from ._common import NoDataError, ResultsLike, as_results, mpl, n_nodes

__all__ = ["link_heatmap", "router_matrix"]

KIND_INJECT, KIND_EJECT = 0, 1
# Widest node strip drawn cell per node; beyond it nodes are averaged in equal blocks.
_MAX_STRIP = 2048


def _preset_units(r: Results, nodes: int, n_routers: int, n_links: int) -> np.ndarray | None:
    """Locality units of the routers when the machine is a preset of the same shape."""
    name = r.machine.get("name")
    try:
        from models.presets import PRESETS, get_machine

        if not isinstance(name, str) or name not in PRESETS:
            return None
        topo = get_machine(name).topology
    except Exception:  # a preset that cannot be built here just means no unit names
        return None
    if topo.n_nodes != nodes or topo.n_routers != n_routers or topo.n_links != n_links:
        return None
    return np.asarray(topo.locality_units(), dtype=np.int64)


def router_matrix(r: Results, *, max_routers: int = 128, router_units: Any = None) -> tuple[np.ndarray, str]:
    """Mean utilization of the router-to-router links between each (source, destination) group.

    Routers are their own groups when there are at most ``max_routers``; otherwise they are
    grouped by ``router_units`` (a unit id per router), else by the machine preset's locality
    units, else in equal blocks of consecutive router ids, and units are merged in blocks
    when there are still more than ``max_routers``. Returns the matrix (NaN where no link
    joins two groups) and a phrase naming the grouping.
    """
    links = r.links
    if links is None or "utilization" not in links:
        raise NoDataError("no per-link statistics (the run had no network model, e.g. a trace replay), so no link "
                          "heat map")
    if not (np.asarray(links.get("bytes", ()), dtype=float) > 0).any():
        raise NoDataError("no network traffic: no job sent a byte over the network (timekeeper jobs only), so "
                          "every link is idle and there is no link heat map")
    if (r.network or {}).get("model") == "ideal" or not np.isfinite(np.asarray(links["utilization"], dtype=float)).any():
        raise NoDataError("no link utilization: the ideal network has no contention, so its links are never "
                          "occupied (links/bytes and links/busy hold its offered load); use the packet model")
    nodes = n_nodes(r)
    src = np.asarray(links["src"], dtype=np.int64)
    dst = np.asarray(links["dst"], dtype=np.int64)
    util = np.asarray(links["utilization"], dtype=float)
    rr = (src >= nodes) & (dst >= nodes)
    if not rr.any():
        raise NoDataError("no router-to-router links in the per-link statistics")
    n_routers = int(max(src[rr].max(), dst[rr].max())) - nodes + 1
    if n_routers <= max_routers and router_units is None:
        units = np.arange(n_routers)
        what = f"{n_routers} routers"
    else:
        if router_units is not None:
            units = np.asarray(router_units, dtype=np.int64)
            if units.shape != (n_routers,):
                raise ValueError(f"router_units: {units.shape[0] if units.ndim else 0} given for {n_routers} routers")
            what = "units"
        else:
            units = _preset_units(r, nodes, n_routers, len(src))
            what = "locality units"
            if units is None:
                units = np.arange(n_routers) * max_routers // n_routers
                what = "blocks of consecutive routers"
        _, units = np.unique(units, return_inverse=True)
        k = int(units.max()) + 1
        if k > max_routers:
            units = units * max_routers // k
            what = f"blocks of {what}"
        what = f"{n_routers} routers in {int(units.max()) + 1} {what}"
    k = int(units.max()) + 1
    a = units[src[rr] - nodes]
    b = units[dst[rr] - nodes]
    total = np.zeros((k, k))
    count = np.zeros((k, k))
    np.add.at(total, (a, b), util[rr])
    np.add.at(count, (a, b), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mat = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return mat, what


def _node_strip(r: Results, nodes: int) -> tuple[np.ndarray, int]:
    """(2, columns) injection and ejection utilization per node (block means when wide)."""
    links = r.links
    assert links is not None
    kind = np.asarray(links["kind"], dtype=np.int64)
    src = np.asarray(links["src"], dtype=np.int64)
    dst = np.asarray(links["dst"], dtype=np.int64)
    util = np.asarray(links["utilization"], dtype=float)
    strip = np.full((2, nodes), np.nan)
    inj = (kind == KIND_INJECT) & (src < nodes)
    ej = (kind == KIND_EJECT) & (dst < nodes)
    strip[0, src[inj]] = util[inj]
    strip[1, dst[ej]] = util[ej]
    block = 1
    if nodes > _MAX_STRIP:
        block = -(-nodes // _MAX_STRIP)
        pad = block * _MAX_STRIP - nodes
        s = np.concatenate([strip, np.full((2, pad), np.nan)], axis=1).reshape(2, _MAX_STRIP, block)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN blocks stay NaN
            strip = np.nanmean(s, axis=2)
    return strip, block


def link_heatmap(results: ResultsLike, fig: Any = None, *, max_routers: int = 128,
                 router_units: Any = None) -> Any:
    """Heat map of link utilization (busy time over the network's active time).

    The top panel is the router-to-router matrix (source on y, destination on x; see
    :func:`router_matrix` for the grouping of large machines); the strip below shows the
    injection (node to router) and ejection (router to node) links of every node. Colours
    share one scale. Draws into ``fig`` when given (it should be empty). Returns the Figure.
    """
    m = mpl()
    r = as_results(results)
    mat, what = router_matrix(r, max_routers=max_routers, router_units=router_units)
    nodes = n_nodes(r)
    strip, block = _node_strip(r, nodes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        vmax = float(np.nanmax([np.nanmax(mat), np.nanmax(strip) if np.isfinite(strip).any() else 0.0]))
    norm = m.colors.Normalize(vmin=0.0, vmax=vmax if vmax > 0 else 1.0)
    cmap = m.colormaps["viridis"].with_extremes(bad="0.92")
    if fig is None:
        fig = m.figure.Figure(figsize=(7.0, 7.5), layout="constrained")
    gs = fig.add_gridspec(2, 2, height_ratios=[12, 1.6], width_ratios=[30, 1])
    ax = fig.add_subplot(gs[0, 0])
    im = ax.imshow(np.ma.masked_invalid(mat), cmap=cmap, norm=norm, interpolation="nearest", origin="upper")
    ax.xaxis.set_major_locator(m.ticker.MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(m.ticker.MaxNLocator(integer=True))
    grouped = " in " in what
    ax.set_xlabel("destination group" if grouped else "destination router")
    ax.set_ylabel("source group" if grouped else "source router")
    ax.set_title(f"{r.name}: link utilization\n({what})", fontsize="medium")
    axs = fig.add_subplot(gs[1, 0])
    axs.imshow(np.ma.masked_invalid(strip), cmap=cmap, norm=norm, interpolation="nearest", aspect="auto",
               extent=(0, nodes, 1.5, -0.5))
    axs.set_yticks([0, 1], ["inject", "eject"])
    axs.set_xlabel("node" if block == 1 else f"node (mean over blocks of {block})")
    cax = fig.add_subplot(gs[:, 1])
    fig.colorbar(im, cax=cax, label="utilization (busy / active time)")
    return fig
