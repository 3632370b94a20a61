"""Network topologies and their routing: fat-tree, torus/mesh and dragonfly.

Every family derives from :class:`Topology` and shares its vertex and link numbering (see
:mod:`models.topology.base`); :mod:`models.topology.metrics` holds APH, MIND and hop-bytes.
"""

from .base import (
    KIND_DOWN,
    KIND_EJECT,
    KIND_GLOBAL,
    KIND_INJECT,
    KIND_LOCAL,
    KIND_NAMES,
    KIND_UP,
    Topology,
)
from .dragonfly import Dragonfly
from .fattree import FatTree
from .metrics import aph, hop_bytes, mind
from .torus import Torus

#: Topology families by name (``Topology.name``).
FAMILIES: dict[str, type[Topology]] = {cls.name: cls for cls in (FatTree, Torus, Dragonfly)}

__all__ = [
    "FAMILIES",
    "KIND_DOWN",
    "KIND_EJECT",
    "KIND_GLOBAL",
    "KIND_INJECT",
    "KIND_LOCAL",
    "KIND_NAMES",
    "KIND_UP",
    "Dragonfly",
    "FatTree",
    "Topology",
    "Torus",
    "aph",
    "hop_bytes",
    "mind",
]
