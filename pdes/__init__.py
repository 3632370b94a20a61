"""pdes: a process-oriented parallel discrete-event simulation kernel.

Entities addressed by (type name, index) exchange events that invoke their services;
processes are greenlets that sleep, hibernate and wake in simulated time. One
:class:`Simulator` owns all state. Runs are deterministic and give identical results
sequentially and under ``mpirun -n P`` (conservative windows over mpi4py).
"""

from .entity import Entity, stream_seed
from .errors import (
    ConfigError,
    Interrupted,
    PdesError,
    ProcessError,
    RemoteRankError,
    SendError,
    SimulationError,
    UnknownEntityError,
    UnknownServiceError,
    UserError,
)
from .placement import place
from .process import Mailbox, Process
from .simulator import BlockedProcess, EntityType, RunStats, Simulator

__all__ = [
    "BlockedProcess",
    "ConfigError",
    "Entity",
    "EntityType",
    "Interrupted",
    "Mailbox",
    "PdesError",
    "Process",
    "ProcessError",
    "RemoteRankError",
    "RunStats",
    "SendError",
    "SimulationError",
    "Simulator",
    "UnknownEntityError",
    "UnknownServiceError",
    "UserError",
    "place",
    "stream_seed",
]
