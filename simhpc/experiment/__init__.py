"""Experiments as data: specs, TOML files, and running them (``simhpc run``)."""

from .spec import (
    AppChoice,
    ConfigError,
    DistSpec,
    Experiment,
    ForegroundSpec,
    MachineSpec,
    MetricsSpec,
    OutputSpec,
    SchedulerSpec,
    WorkloadSpec,
)
from .toml_io import default_experiment_text, dumps, from_dict, load, loads

__all__ = [
    "AppChoice",
    "ConfigError",
    "DistSpec",
    "Experiment",
    "ForegroundSpec",
    "MachineSpec",
    "MetricsSpec",
    "OutputSpec",
    "SchedulerSpec",
    "WorkloadSpec",
    "default_experiment_text",
    "dumps",
    "from_dict",
    "load",
    "loads",
]
