"""The classic curves of an offered-load sweep: accepted throughput and latency against the
offered load (one line per sweep, so routings or patterns compare on one figure)."""

from __future__ import annotations

from typing import Any, Sequence

from ._common import mpl

__all__ = ["traffic_curves"]


def traffic_curves(sweeps: Any | Sequence[Any], *, title: str | None = None) -> Any:
    """A figure of two panels, throughput and latency against offered load, for one or more
    :class:`apps.traffic.sweep.TrafficSweep` objects (or their ``to_dict()``)."""
    mpl()
    from matplotlib.figure import Figure

    if not isinstance(sweeps, (list, tuple)):
        sweeps = [sweeps]
    data = [s if isinstance(s, dict) else s.to_dict() for s in sweeps]
    fig = Figure(figsize=(10, 4), layout="constrained")
    ax_t, ax_l = fig.subplots(1, 2)
    for d in data:
        pts = d["points"]
        x = [p["load"] for p in pts]
        label = f"{d['pattern']}, {d['routing']} ({d['network']})"
        ax_t.plot(x, [p["accepted"] for p in pts], marker="o", label=label)
        ax_l.plot(x, [p["latency_mean"] * 1e6 for p in pts], marker="o", label=f"{label}: mean")
        ax_l.plot(x, [p["latency_p99"] * 1e6 for p in pts], marker="x", linestyle="--", label=f"{label}: p99")
    hi = max([p["load"] for d in data for p in d["points"]] + [0.0])
    ax_t.plot([0, hi], [0, hi], color="grey", linewidth=0.8, linestyle=":", label="accepted = offered")
    ax_t.set_xlabel("offered load (fraction of injection bandwidth)")
    ax_t.set_ylabel("accepted throughput (fraction of injection bandwidth)")
    ax_t.set_xlim(left=0)
    ax_t.set_ylim(bottom=0)
    ax_t.legend(fontsize="small")
    ax_l.set_xlabel("offered load (fraction of injection bandwidth)")
    ax_l.set_ylabel("latency (us)")
    ax_l.set_xlim(left=0)
    ax_l.set_yscale("log")
    ax_l.legend(fontsize="small")
    machines = sorted({d["machine"] for d in data})
    fig.suptitle(title or f"offered-load sweep on {', '.join(machines)}")
    return fig
