"""models layer of simhpc."""

from __future__ import annotations

import importlib
from typing import Any

# Exported names -> defining module, imported on first use so that importing a light module
# (e.g. models.units from the command line) does not load the topologies.
_EXPORTS = {
    "TopologyError": "models.errors",
    "Topology": "models.topology",
    "FatTree": "models.topology",
    "Torus": "models.topology",
    "Dragonfly": "models.topology",
    "aph": "models.topology",
    "mind": "models.topology",
    "hop_bytes": "models.topology",
    "Machine": "models.presets",
    "PRESETS": "models.presets",
    "get_machine": "models.presets",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    try:
        modname = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'models' has no attribute {name!r}") from None
    return getattr(importlib.import_module(modname), name)
