"""The compute-node model: how long a rank computes, given seconds or flops and bytes.

A rank runs on one core. Its work of ``flops`` floating-point operations touching ``bytes``
of memory takes the roofline time

    t = max(flops / F_rank, bytes / B_rank)

with ``F_rank = flops_per_node / max(cores, ranks_on_node)`` (the per-core peak; ranks beyond
the core count share the cores) and ``B_rank = mem_bw_per_node / ranks_on_node`` (the ranks
of one node share its memory bandwidth). Compute never overlaps with itself on a rank, and
the model has no caches, no frequency scaling and no noise: it is the simple bound that
skeleton studies use to put computation between communication phases.

Intra-node messages use the node's memory bandwidth too, but through the network layer's
copy channel (:mod:`models.network.node`), not through this model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pdes.validate import check_int

from .errors import TopologyError
from .units import UnitError, parse_bandwidth, parse_rate

if TYPE_CHECKING:  # pragma: no cover
    from .presets import Machine

__all__ = ["NodeModel", "NodeModelError"]


class NodeModelError(TopologyError):
    """An invalid node-model parameter or compute request."""


@dataclass(frozen=True, kw_only=True)
class NodeModel:
    """Roofline compute model of one node type.

    Attributes:
        cores: cores per node (ranks up to this count each get a full core).
        flops_per_node: peak flop/s of the node (accepts '153.6GF').
        mem_bw_per_node: memory bandwidth of the node in bytes/s (accepts '85.3GB/s').
    """

    cores: int
    flops_per_node: float | str
    mem_bw_per_node: float | str

    def __post_init__(self) -> None:
        object.__setattr__(self, "cores", check_int("NodeModel: cores", self.cores, lo=1, error=NodeModelError))
        try:
            fl = parse_rate(self.flops_per_node, what="flops_per_node")
            bw = parse_bandwidth(self.mem_bw_per_node, what="mem_bw_per_node")
        except UnitError as exc:
            raise NodeModelError(f"NodeModel: {exc}") from None
        if not (fl > 0 and math.isfinite(fl)):
            raise NodeModelError(f"NodeModel: flops_per_node must be a finite number > 0, got {self.flops_per_node!r}")
        if not (bw > 0 and math.isfinite(bw)):
            raise NodeModelError(f"NodeModel: mem_bw_per_node must be a finite number > 0, got {self.mem_bw_per_node!r}")
        object.__setattr__(self, "flops_per_node", float(fl))
        object.__setattr__(self, "mem_bw_per_node", float(bw))

    @classmethod
    def from_machine(cls, machine: "Machine") -> "NodeModel":
        """The node model of a machine preset."""
        return cls(cores=machine.cores_per_node, flops_per_node=machine.flops_per_node,
                   mem_bw_per_node=machine.mem_bw_per_node)

    def rank_flops(self, ranks_on_node: int = 1) -> float:
        """Peak flop/s of one rank when ``ranks_on_node`` ranks share the node."""
        return self.flops_per_node / max(self.cores, ranks_on_node)  # type: ignore[operator]

    def rank_mem_bw(self, ranks_on_node: int = 1) -> float:
        """Memory bandwidth of one rank when ``ranks_on_node`` ranks share the node."""
        return self.mem_bw_per_node / ranks_on_node  # type: ignore[operator]

    def compute_time(self, flops: float = 0.0, bytes: float = 0.0, ranks_on_node: int = 1) -> float:
        """Seconds one rank needs for ``flops`` operations over ``bytes`` of memory traffic."""
        if not (isinstance(ranks_on_node, int) and ranks_on_node >= 1):
            raise NodeModelError(f"compute_time: ranks_on_node must be an integer >= 1, got {ranks_on_node!r}")
        if not (flops >= 0 and math.isfinite(flops)):
            raise NodeModelError(f"compute_time: flops must be a finite number >= 0, got {flops!r}")
        if not (bytes >= 0 and math.isfinite(bytes)):
            raise NodeModelError(f"compute_time: bytes must be a finite number >= 0, got {bytes!r}")
        tf = flops * max(self.cores, ranks_on_node) / self.flops_per_node  # type: ignore[operator]
        tb = bytes * ranks_on_node / self.mem_bw_per_node  # type: ignore[operator]
        return tf if tf > tb else tb
