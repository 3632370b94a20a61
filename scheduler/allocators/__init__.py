"""Node allocation: the allocator interface, its registry, the allocators, node orderings and
placement metrics.

:class:`AllocState` and :class:`Allocator` (:mod:`.interface`) are the contract the scheduler
and the backfill policies talk to; :data:`ALLOCATORS` (:mod:`.registry`) maps names to classes.
Importing this package registers every allocator, so
``make_allocator(name, n_nodes=..., topology=..., seed=..., **options)`` finds them all:

======================  ==============================  ================================
name                    module                          options
======================  ==============================  ================================
firstfree, random       :mod:`.oblivious`               --
roundrobin, fifo0       :mod:`.oblivious`               ordering, box
dualend                 :mod:`.oblivious`               ordering, box, by, threshold
vpart                   :mod:`.oblivious`               ordering, box, parts
firstfit                :mod:`.contiguous`              ordering, box, gap, fallback
bestfit, largestfit,    :mod:`.contiguous`              ordering, box
closestfit
closestfit-mind         :mod:`.contiguous`              ordering, box, max_windows
treefit                 :mod:`.treefit`                 -- (fat-tree, dragonfly)
t123, jigsaw            :mod:`.isolating`               -- (fat-tree)
bgq-native, bgq-mesh,   :mod:`.torus_partitions`        block, sensitive_fraction, selection
bgq-cfca, bgq-hybrid                                    (torus)
======================  ==============================  ================================

See ``docs/allocators.md`` for the rules of each. The network side reads a running job's
reserved links from a :class:`JigsawState` (``routes_for``, ``allowed_links``) and its
partition from a :class:`PartitionState` (``placement_of`` -> :class:`PartitionInfo`).
Rank-to-node mapping, the scheduler's fourth hook, is :mod:`apps.mapping`.
"""

from .interface import AllocState, Allocator
from .registry import ALLOCATORS, make_allocator, register_allocator

# The allocator modules register themselves on import.
from . import contiguous, isolating, oblivious, torus_partitions, treefit
from .base import Placement, PlacementState, job_rng
from .isolating import JigsawInfo, JigsawState, T123Info, reserved_link_ids
from .metrics import (
    PlacementMetrics,
    allocation_metrics,
    allocation_metrics_by_size,
    placement_metrics,
    size_bins,
)
from .oblivious import FirstFreeAllocator
from .orderings import hilbert_index, node_ordering
from .torus_partitions import PartitionInfo, PartitionState

__all__ = [
    "AllocState",
    "Allocator",
    "ALLOCATORS",
    "make_allocator",
    "register_allocator",
    "FirstFreeAllocator",
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
    "contiguous",
    "isolating",
    "oblivious",
    "torus_partitions",
    "treefit",
]
