"""A Gymnasium environment for learning batch schedulers (optional extra ``gym``).

One step is one scheduling decision: pick one of the first K waiting jobs (and, with
several allocators, the allocator that places it). Job runtimes come from the trace
(``runtime="trace"``, as in the published RL schedulers) or emerge from MPI skeletons run on
the packet or flow network where the agent placed them (``runtime="simulated"``)::

    import gymnasium
    import simhpc.gym  # registers the environment

    env = gymnasium.make("simhpc/Scheduling-v0", runtime="trace", jobs=128)
    obs, info = env.reset(seed=1)
    obs, reward, terminated, truncated, info = env.step(0)

``gymnasium.make("simhpc.gym:simhpc/Scheduling-v0")`` imports this module itself. Importing
:mod:`simhpc` does not import Gymnasium; this package needs it (``pip install simhpc[gym]``).
See ``docs/gym.md``.
"""

from __future__ import annotations

try:
    import gymnasium
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError("simhpc.gym needs gymnasium: pip install 'simhpc[gym]'") from exc

from .env import JOB_FEATURES, MACHINE_FEATURES, InvalidActionError, RewardContext, SchedulingEnv
from .episode import GymConfig, GymConfigError, gym_machine

__all__ = ["ENV_ID", "SchedulingEnv", "GymConfig", "GymConfigError", "InvalidActionError", "RewardContext",
           "JOB_FEATURES", "MACHINE_FEATURES", "gym_machine"]

#: The id the environment is registered under.
ENV_ID = "simhpc/Scheduling-v0"

if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="simhpc.gym.env:SchedulingEnv")
