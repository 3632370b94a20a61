"""The scheduling environment: one Gymnasium step is one scheduling decision.

The simulation runs in a greenlet of its own. At each decision point the scheduler's
:class:`~scheduler.external.ExternalPolicy` calls :meth:`SchedulingEnv._choose`, which
switches back to the caller of :meth:`~SchedulingEnv.reset` or
:meth:`~SchedulingEnv.step` with the simulation paused in the middle of its scheduling pass;
the next ``step(action)`` switches back in with the action, and the simulation goes on until
the next decision or the end of the episode. Nothing is copied or replayed, so a step costs
what the simulation between two decisions costs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
from greenlet import getcurrent, greenlet
from gymnasium import spaces

from scheduler.external import ExternalPolicy

from .episode import (
    Episode,
    GymConfig,
    GymConfigError,
    bounded_slowdown,
    build_episode,
    load_trace,
    resolve_machine,
    window_jobs,
)

__all__ = ["SchedulingEnv", "RewardContext", "InvalidActionError", "JOB_FEATURES", "MACHINE_FEATURES"]

#: The features of each job slot, in order (all in [0, 1]).
JOB_FEATURES = ("present", "nodes", "request", "wait", "fits", "area")
#: The machine features after the slots, in order.
MACHINE_FEATURES = ("free_nodes", "queue", "next_end")

_DECIDE = object()
_DONE = object()
# Tries at drawing a window that asks for at least one decision.
_DRAWS = 20


class InvalidActionError(GymConfigError, ValueError):
    """An action outside the action space; the message gives the valid range."""


class _Abandoned(Exception):
    """Thrown into a paused simulation to end it (a reset before its end, or close())."""


@dataclass(frozen=True)
class RewardContext:
    """What a reward function sees after each step (times in trace seconds).

    ``ended``: the jobs that ended since the previous step (their ``start_time``,
    ``end_time``, ``run_time``, ``submit_time`` are simulated seconds: divide by ``scale``);
    ``jobs``: every job of the episode; ``terminated``: the episode has ended.
    """

    now: float
    ended: tuple[Any, ...]
    jobs: tuple[Any, ...]
    n_nodes: int
    free_nodes: int
    queue_length: int
    terminated: bool
    scale: float


class SchedulingEnv(gymnasium.Env):
    """A batch scheduler to learn: pick one of the first K waiting jobs (and an allocator).

    Give a :class:`~simhpc.gym.episode.GymConfig` or its settings as keywords
    (``SchedulingEnv(runtime="simulated", network="packet")``); ``docs/gym.md`` explains
    them. Spaces:

    * action: ``Discrete(K * A)``; action ``a`` picks the job in slot ``a // A`` of the
      waiting jobs (submit order) and allocator ``a % A`` of ``config.allocators``. An
      action outside ``0 .. K*A-1`` (or not an integer) raises :class:`InvalidActionError`.
      An action naming an empty slot is a *masked no-op*: nothing happens, the reward is 0,
      the observation is unchanged and ``info["invalid_action"]`` is True;
      ``info["action_mask"]`` and :meth:`action_masks` give the valid actions.
    * observation: ``Box(0, 1, (K * 6 + 3 [+ 2 G],), float32)``: per slot
      :data:`JOB_FEATURES`, then :data:`MACHINE_FEATURES`, then in simulated mode the free
      share of each of G node groups and the load of each group's links since the previous
      decision (bytes over capacity).
    """

    metadata = {"render_modes": []}

    def __init__(self, config: GymConfig | None = None, **settings: Any):
        if config is not None and settings:
            raise GymConfigError(f"give a GymConfig or settings, not both (settings: {', '.join(sorted(settings))})")
        cfg = config if config is not None else GymConfig(**settings)
        self.config = cfg
        self.machine = resolve_machine(cfg)
        size = cfg.nodes
        if self.machine is not None:
            if size is not None and size != self.machine.n_nodes:
                raise GymConfigError(f"nodes={size} differs from machine {self.machine.name!r} "
                                     f"({self.machine.n_nodes} nodes); give one of them")
            size = self.machine.n_nodes
        self._trace_jobs, self.n_nodes = load_trace(cfg, size)
        if len(self._trace_jobs) < cfg.jobs:
            raise GymConfigError(f"jobs={cfg.jobs} but trace {cfg.trace!r} has {len(self._trace_jobs)} jobs "
                                 f"that fit the machine; valid: 1..{len(self._trace_jobs)}")
        #: How many trace jobs fit the machine (an episode starts at an index below
        #: ``trace_length - config.jobs + 1``).
        self.trace_length = len(self._trace_jobs)
        k, a = cfg.slots, len(cfg.allocators)
        self.n_allocators = a
        self.action_space = spaces.Discrete(k * a)
        self._simulated = cfg.runtime == "simulated"
        n_obs = k * len(JOB_FEATURES) + len(MACHINE_FEATURES)
        if self._simulated:
            self._setup_groups()
            n_obs += 2 * self.n_groups
        self.observation_space = spaces.Box(0.0, 1.0, (n_obs,), dtype=np.float32)
        self._ep: Episode | None = None
        self._glet: greenlet | None = None
        self._paused: greenlet | None = None
        self._caller: greenlet | None = None
        self._window: list[Any] = []
        self._done = True
        self._obs = np.zeros(n_obs, dtype=np.float32)

    # -- set-up ---------------------------------------------------------------------------
    def _setup_groups(self) -> None:
        topo = self.machine.topology
        g = min(self.config.groups, topo.n_routers)
        part = np.asarray(topo.partition(g), dtype=np.int64)
        self.n_groups = g
        self._node_group = part[np.asarray(topo.node_router, dtype=np.int64)]
        n = topo.n_nodes
        src = np.asarray(topo.link_src, dtype=np.int64)
        self._link_group = np.where(src < n, self._node_group[np.minimum(src, n - 1)], part[np.maximum(src - n, 0)])
        self._group_nodes = np.maximum(np.bincount(self._node_group, minlength=g), 1).astype(float)
        self._group_bw = np.maximum(np.bincount(self._link_group, weights=topo.link_bw, minlength=g), 1.0)

    # -- the greenlet protocol --------------------------------------------------------------
    def _run(self, _start: Any = None) -> Any:
        self._ep.sim.run()
        return _DONE

    def _choose(self, sched: Any, window: list[Any]) -> tuple[int, int]:
        """The policy's chooser: pause the simulation until the next step's action."""
        self._window = window
        self._paused = getcurrent()
        return self._caller.switch(_DECIDE)

    def _advance(self, value: Any) -> bool:
        """Run the simulation to its next decision (True) or its end (False)."""
        here = getcurrent()
        self._caller = here
        glet = self._glet
        glet.parent = here
        target = self._paused if self._paused is not None else glet
        self._paused = None
        try:
            out = target.switch(value)
        except BaseException:
            # The simulation failed (its error goes to the caller): the episode is over.
            self._done = True
            self._paused = self._glet = None
            raise
        if out is _DECIDE:
            return True
        self._done = True
        return False

    def _abandon(self) -> None:
        """End a paused simulation (its greenlets unwind now, not at garbage collection)."""
        p, glet = self._paused, self._glet
        self._paused = self._glet = None
        self._done = True
        if p is not None and glet is not None and not glet.dead:
            glet.parent = getcurrent()
            try:
                p.throw(_Abandoned())
            except Exception as exc:  # the kernel wraps it as a SimulationError
                if not isinstance(exc, _Abandoned) and not isinstance(exc.__cause__, _Abandoned):
                    raise

    def close(self) -> None:
        self._abandon()
        self._ep = None

    # -- Gymnasium API --------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Start an episode: a window of ``config.jobs`` trace jobs from ``options["start"]``
        (a trace job index) or from a random start drawn from the environment's generator."""
        super().reset(seed=seed)
        self._abandon()
        cfg = self.config
        last = len(self._trace_jobs) - cfg.jobs
        given = (options or {}).get("start")
        if given is not None:
            from pdes.validate import check_int

            check_int("options['start']", given, lo=0, hi=last, error=GymConfigError)
        for _ in range(_DRAWS):
            start = int(given) if given is not None else int(self.np_random.integers(0, last + 1))
            if self._begin(start):
                return self._observe(), self._info()
            if given is not None:
                raise GymConfigError(f"the window of {cfg.jobs} jobs from trace job {start} asks for no decision "
                                     "(no two jobs ever wait together); choose another start or more jobs")
        raise GymConfigError(f"{_DRAWS} windows of {cfg.jobs} jobs drawn from {cfg.trace!r} asked for no decision; "
                             "use more jobs per episode")

    def _begin(self, start: int) -> bool:
        cfg = self.config
        rng = self.np_random
        bw = float(np.min(self.machine.topology.link_bw)) if self._simulated else 0.0
        jobs = window_jobs(self._trace_jobs, start, cfg, rng, link_bw=bw)
        policy = ExternalPolicy(chooser=self._choose, window=cfg.slots, backfill=cfg.backfill,
                                decide_single=cfg.decide_single)
        seed = int(rng.integers(0, 2**31 - 1))
        #: The simulator seed of the current episode.
        self.episode_seed = seed
        self._ep = build_episode(cfg, jobs, n_nodes=self.n_nodes, machine=self.machine, seed=seed, policy=policy)
        self.start = start
        self._jobs = tuple(self._ep.sched.jobs)
        self._seen = 0
        self._last_t = 0.0
        self._steps = 0
        if self._simulated:
            self._bytes = np.zeros(len(self._link_group))
            self._load = np.zeros(self.n_groups)
        self._done = False
        self._glet = greenlet(self._run)
        return self._advance(None)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._ep is None or self._done:
            raise GymConfigError("the episode has ended (or none was started): call reset() before step()")
        a = self._action_index(action)
        slot, which = divmod(a, self.n_allocators)
        if slot >= len(self._window):
            info = self._info()
            info["invalid_action"] = True
            return self._obs.copy(), 0.0, False, False, info
        self._steps += 1
        going = self._advance((slot, which))
        reward = self._reward(not going)
        obs = self._observe()
        info = self._info()
        if not going:
            info.update(self.episode_summary())
        return obs, reward, not going, False, info

    def _action_index(self, action: Any) -> int:
        n = int(self.action_space.n)
        a = action
        if isinstance(a, np.ndarray) and a.shape == () and a.dtype.kind in "iu":
            a = a.item()
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)) or not 0 <= a < n:
            k, al = self.config.slots, self.n_allocators
            how = f"slot * {al} + allocator index ({k} slots, {al} allocators)" if al > 1 else f"a slot of the {k} shown"
            raise InvalidActionError(f"action {action!r} is out of range: valid actions are the integers 0..{n - 1} "
                                     f"({how})")
        return int(a)

    @property
    def episode_jobs(self) -> tuple[Any, ...]:
        """The current episode's jobs (submission order; outcome fields as simulated so far).
        ``build_episode`` on their fresh copies with :attr:`episode_seed` runs the same
        episode under another policy."""
        return self._jobs

    def action_masks(self) -> np.ndarray:
        """Which actions pick a waiting job now (bool, one per action)."""
        m = np.zeros(int(self.action_space.n), dtype=bool)
        if not self._done:
            m[: len(self._window) * self.n_allocators] = True
        return m

    # -- observation, reward, info ----------------------------------------------------------
    def _observe(self) -> np.ndarray:
        cfg = self.config
        ep = self._ep
        sched = ep.sched
        n = self.n_nodes
        k = cfg.slots
        scale = cfg.scale
        ln = math.log1p(cfg.time_norm)
        area_ln = math.log1p(cfg.time_norm * n)
        now = ep.sim.now
        free = sched.state.n_free
        obs = np.zeros(self.observation_space.shape[0], dtype=np.float32)
        f = len(JOB_FEATURES)
        win = self._window
        m = len(win) if not self._done else 0
        if m:
            a = np.array([(j.nodes, j.request_time, j.submit_time) for j in win], dtype=float)
            nodes = a[:, 0]
            req = a[:, 1] / scale
            blk = np.empty((m, f))
            blk[:, 0] = 1.0
            blk[:, 1] = nodes / n
            blk[:, 2] = np.log1p(req) / ln
            blk[:, 3] = np.log1p((now - a[:, 2]) / scale) / ln
            blk[:, 4] = nodes <= free
            blk[:, 5] = np.log1p(req * nodes) / area_ln
            np.minimum(blk, 1.0, out=blk)
            obs[:m * f] = blk.ravel()
        b = k * f
        obs[b] = free / n
        q = self._ep.policy.waiting if m else 0
        obs[b + 1] = q / (q + k)
        ends = sched.ends
        if ends:
            obs[b + 2] = min(math.log1p(max(ends[0][0] - now, 0.0) / scale) / ln, 1.0)
        if self._simulated:
            g = self.n_groups
            b += len(MACHINE_FEATURES)
            freemask = sched.state.free
            obs[b:b + g] = np.bincount(self._node_group, weights=freemask, minlength=g) / self._group_nodes
            now_bytes = np.asarray(ep.platform.net.state.bytes, dtype=float)
            dt = now - self._last_t
            if dt > 0:
                moved = np.bincount(self._link_group, weights=now_bytes - self._bytes, minlength=g)
                self._load = np.minimum(moved / (self._group_bw * dt), 1.0)
                self._bytes = now_bytes
                self._last_t = now
            obs[b + g:b + 2 * g] = self._load
        self._obs = obs
        return obs.copy()

    def _reward(self, terminated: bool) -> float:
        cfg = self.config
        ended = self._ep.ended
        new = ended[self._seen:]
        self._seen = len(ended)
        r = cfg.reward
        if r == "bsld":
            s = cfg.scale
            return -sum(bounded_slowdown(j, s, cfg.bsld_bound) for j in new) / len(self._jobs)
        if r == "utilization":
            return self.episode_summary()["utilization"] if terminated else 0.0
        sched = self._ep.sched
        ctx = RewardContext(now=self._ep.sim.now / cfg.scale, ended=tuple(new), jobs=self._jobs, n_nodes=self.n_nodes,
                            free_nodes=sched.state.n_free,
                            queue_length=0 if terminated else self._ep.policy.waiting,
                            terminated=terminated, scale=cfg.scale)
        return float(r(ctx))

    def _info(self) -> dict[str, Any]:
        return {"time": self._ep.sim.now / self.config.scale, "start": self.start, "decisions": self._steps,
                "action_mask": self.action_masks()}

    def episode_summary(self) -> dict[str, float]:
        """Figures of the episode so far over its ended jobs, in trace seconds:
        ``mean_bounded_slowdown``, ``mean_wait``, ``utilization`` (node-seconds used over
        nodes times the span from the first submission to the last end), ``makespan``."""
        cfg = self.config
        s = cfg.scale
        done = [j for j in self._jobs if j.end_time is not None]
        if not done:
            return {"mean_bounded_slowdown": math.nan, "mean_wait": math.nan, "utilization": math.nan, "makespan": 0.0}
        span = (max(j.end_time for j in done) - min(j.submit_time for j in self._jobs)) / s
        used = sum(j.nodes * (j.end_time - j.start_time) for j in done) / s
        return {
            "mean_bounded_slowdown": float(np.mean([bounded_slowdown(j, s, cfg.bsld_bound) for j in done])),
            "mean_wait": float(np.mean([(j.start_time - j.submit_time) / s for j in done])),
            "utilization": used / (self.n_nodes * span) if span > 0 else 0.0,
            "makespan": span,
        }
