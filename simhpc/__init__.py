"""simhpc: the face of the simulator that users touch.

The command line (``simhpc`` console script, :mod:`simhpc.cli`), experiments as data
(:mod:`simhpc.experiment`), interference studies (:mod:`simhpc.studies`), the HDF5 results
file shared by ``run``, ``replay`` and ``study`` (:mod:`simhpc.results`) and the figures
(:mod:`simhpc.plots`). The Python user API is available from the package itself (imported on
first use, so that the command line starts fast)::

    import simhpc
    res = simhpc.run_experiment(simhpc.load_experiment("exp.toml"))
    rep = simhpc.replay("trace.swf", machine="cab", backfill="easy")
    app = simhpc.run_app("tiny-fattree3", "allreduce", 16)
    same = simhpc.load_results("results.h5")

Layers (imports point down only): simhpc -> scheduler -> apps -> models -> pdes.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> (module, name there)
_EXPORTS = {
    "UserError": ("pdes.errors", "UserError"),
    "Experiment": ("simhpc.experiment", "Experiment"),
    "load_experiment": ("simhpc.experiment", "load"),
    "loads_experiment": ("simhpc.experiment", "loads"),
    "run_experiment": ("simhpc.experiment.runner", "run_experiment"),
    "replay": ("simhpc.trace_replay", "replay"),
    "run_app": ("apps.run", "run_app"),
    "Results": ("simhpc.results", "Results"),
    "load_results": ("simhpc.results", "read_results"),
    "write_results": ("simhpc.results", "write_results"),
    "InterferenceStudy": ("simhpc.studies", "InterferenceStudy"),
    "load_study": ("simhpc.studies", "load_study"),
    "run_study": ("simhpc.studies", "run_study"),
    "get_machine": ("models.presets", "get_machine"),
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module 'simhpc' has no attribute {name!r}")
    return getattr(importlib.import_module(where[0]), where[1])


def __dir__() -> list[str]:
    return sorted(__all__)
