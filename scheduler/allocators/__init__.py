"""Node allocators, node orderings, placement metrics and rank mapping.

Importing this package registers every allocator in
:data:`scheduler.allocator.ALLOCATORS` (``scheduler.allocator`` imports it at its end), so
``make_allocator(name, n_nodes=..., topology=..., seed=..., **options)`` finds them all:

======================  ==============================  ================================
name                    module                          options
======================  ==============================  ================================
random                  :mod:`.oblivious`               --
roundrobin, fifo0       :mod:`.oblivious`               ordering, box
dualend                 :mod:`.oblivious`               ordering, box, by, threshold
vpart                   :mod:`.oblivious`               ordering, box, parts
firstfit                :mod:`.contiguous`              ordering, box, gap, fallback
bestfit, largestfit,    :mod:`.contiguous`              ordering, box
closestfit
closestfit-mind         :mod:`.contiguous`              ordering, box, max_windows
treefit                 :mod:`.treefit`                 -- (fat-tree, dragonfly)
t123, jigsaw            :mod:`.isolating`               -- (fat-tree)
bgq-native, bgq-mesh,   :mod:`.torus_partitions`        block, sensitive_fraction (torus)
bgq-cfca, bgq-hybrid
======================  ==============================  ================================

See ``docs/allocators.md`` for the rules of each. The network side reads a running job's
reserved links from a :class:`JigsawState` (``routes_for``, ``allowed_links``) and its
partition from a :class:`PartitionState` (``placement_of`` -> :class:`PartitionInfo`).
"""

from . import contiguous, isolating, oblivious, torus_partitions, treefit
from .base import Placement, PlacementState, job_rng
from .isolating import JigsawInfo, JigsawState, T123Info, reserved_link_ids
from .mapping import RANK_MAPPINGS, cartesian_neighbors, map_ranks
from .metrics import (
    PlacementMetrics,
    allocation_metrics,
    allocation_metrics_by_size,
    placement_metrics,
    size_bins,
)
from .orderings import hilbert_index, node_ordering
from .torus_partitions import PartitionInfo, PartitionState

__all__ = [
    "Placement",
    "PlacementState",
    "job_rng",
    "JigsawInfo",
    "JigsawState",
    "T123Info",
    "reserved_link_ids",
    "PartitionInfo",
    "PartitionState",
    "node_ordering",
    "hilbert_index",
    "PlacementMetrics",
    "placement_metrics",
    "allocation_metrics",
    "allocation_metrics_by_size",
    "size_bins",
    "RANK_MAPPINGS",
    "map_ranks",
    "cartesian_neighbors",
    "contiguous",
    "isolating",
    "oblivious",
    "torus_partitions",
    "treefit",
]
