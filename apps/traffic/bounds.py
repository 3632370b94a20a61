"""Channel-load bound of a traffic pattern under an oblivious routing.

A link carries, per unit of offered load (every node injecting at the fraction ``load`` of its
injection bandwidth), the expected bytes per second of the routes that cross it; its
*channel load* is that over its bandwidth. With every node offering the same load, the
busiest channel saturates at ``1 / max load`` of the injection bandwidth (Dally & Towles,
ch. 3): the bound on the saturation throughput that measurements are compared against
(``docs/traffic.md``, "Known results"). Past it the accepted throughput of an unbalanced
pattern may still grow, from the flows that avoid the busiest channels.

The expectation is estimated the way the ``traffic`` app draws: ``samples`` destinations per
source from the pattern (with a seeded stream), each routed with its sample index as the
message key (so Valiant's intermediate groups and ECMP's ports vary as they do per message).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.presets import Machine, get_machine
from models.topology import KIND_INJECT, KIND_NAMES

from ..errors import AppConfigError
from .patterns import build_pattern

__all__ = ["ChannelBound", "channel_bound"]


@dataclass(frozen=True, kw_only=True)
class ChannelBound:
    """The channel loads of a pattern on a machine.

    Attributes:
        bound: ``1 / max_load``: the highest load (fraction of injection bandwidth) that
            every node can offer and have accepted in full with this routing.
        max_load: the largest channel load per unit offered load.
        link: the id of a link with that load; ``kind``: its kind (``local``, ``global``,
            ``eject``, ...).
        loads: the channel load of every link per unit offered load (float array).
    """

    bound: float
    max_load: float
    link: int
    kind: str
    loads: np.ndarray


def channel_bound(machine: str | Machine, pattern: str, *, routing: str | None = None, samples: int = 256,
                  seed: int = 0, shift: int | None = None, hot_nodes: int = 1,
                  hot_fraction: float = 0.1) -> ChannelBound:
    """The channel-load bound of ``pattern`` on every node of ``machine`` (a preset name or
    a Machine) with its routing (or ``routing``); see the module docstring. Adaptive
    routings have no route per message until they run: they raise AppConfigError."""
    m = machine if isinstance(machine, Machine) else get_machine(machine)
    t = m.topology
    if routing is not None and routing != t.routing:
        if routing not in t.ROUTINGS:
            raise AppConfigError(f"routing {routing!r} is not one of the {t.name} routings: {', '.join(t.ROUTINGS)}")
        t = t.replace(routing=routing)
    if t.is_adaptive:
        raise AppConfigError(f"channel_bound: routing {t.routing!r} is adaptive (its routes depend on the run); "
                             f"valid: an oblivious routing of {', '.join(r for r in t.ROUTINGS if r not in t.ADAPTIVE_ROUTINGS)}")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise AppConfigError(f"channel_bound: samples must be an integer >= 1, got {samples!r}")
    n = t.n_nodes
    pat = build_pattern(pattern, nodes=range(n), topology=t, shift=shift, hot_nodes=hot_nodes,
                        hot_fraction=hot_fraction)
    srcs, dsts, keys = [], [], []
    for i in range(n):
        rng = random.Random(seed * 1_000_003 + i)
        for k in range(samples):
            j = pat.dest(i, rng)
            if j is not None:
                srcs.append(i)
                dsts.append(j)
                keys.append(k)
    s = np.asarray(srcs, dtype=np.int64)
    off, links = t.routes(s, np.asarray(dsts, dtype=np.int64), np.asarray(keys, dtype=np.int64))
    bw = np.asarray(t.link_bw, dtype=float)
    lens = np.diff(off)
    # Bytes/s per unit load: each sample stands for 1/samples of its source's injection rate.
    inj = bw[links[off[:-1]]] / samples
    per_hop = np.repeat(inj, lens)
    load = np.bincount(links, weights=per_hop, minlength=t.n_links) / bw
    kinds = np.asarray(t.link_kind)
    # Injection links carry exactly the offered load: never the bound of interest.
    masked = np.where(kinds == KIND_INJECT, 0.0, load)
    l = int(np.argmax(masked))
    mx = float(masked[l])
    return ChannelBound(bound=(1.0 / mx) if mx > 0 else float("inf"), max_load=mx, link=l,
                        kind=KIND_NAMES[int(kinds[l])], loads=load)
