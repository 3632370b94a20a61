"""The simulator object: clock, event queue, entity registry and RNG seed, with no globals.

Events run in ``(time, key)`` order. The key packs the id of the entity that created the
event with that entity's own counter, so the order of events never depends on insertion
order or on how entities are spread over MPI ranks. Runs are therefore bit-identical
sequentially and under ``mpirun -n P`` for any P. The heap holds :class:`~pdes.event.Event`
objects (floats carrying key, callable and data) ordered by time; events due at one time are
put in key order by :meth:`Simulator._first_tied`.
"""

from __future__ import annotations

import gc
import math
import signal
import sys
import time as _time
import traceback
from bisect import bisect_right
from dataclasses import dataclass, field
from heapq import heappop, heappush
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterator, TypeVar

from greenlet import getcurrent

from .entity import FIRST, KEY_SHIFT, STOP_KEY, Entity
from .errors import ConfigError, Interrupted, RemoteRankError, SimulationError, UnknownEntityError, UnknownServiceError
from .placement import PlacementSpec, place
from .predict import RankPrediction, WindowProfile, check_predict_ranks
from .event import Event, make_event
from .process import Process, blocked_at, event_callable

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

E = TypeVar("E", bound=Entity)


# Tied events sort by key: descending in the list (see Simulator._first_tied).
_KEY = attrgetter("key")


def _is_int(x: Any) -> bool:
    """An int or a numpy integer (numpy is only imported by runs that place entities on ranks)."""
    if isinstance(x, int):
        return True
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.integer)


class _Stop(Exception):
    """Raised by the end-of-run sentinel event; never escapes the kernel."""


@dataclass(frozen=True)
class EntityType:
    """One registered entity type: its class, global id range, rank of each index and the
    placement that gave them (evaluated again for other rank counts by predict_ranks)."""

    name: str
    cls: type
    offset: int
    count: int
    ranks: np.ndarray | None  # None in a sequential run (everything local)
    placement: PlacementSpec = "block"


@dataclass
class BlockedProcess:
    """A process that had not finished when the run ended."""

    entity: str
    process: str
    state: str  # "hibernating" (no pending event) or "scheduled" (resumes at or after end)
    waiting_for: str
    rank: int
    # The blocking call and the model lines it was made from (see pdes.process.blocked_at).
    location: str = ""


@dataclass
class RunStats:
    """What a run did; identical on every rank after the run (gathered and shared)."""

    events: int = 0
    end_time: float = 0.0
    wall_s: float = 0.0
    ranks: int = 1
    windows: int = 0
    remote_events: int = 0
    events_per_rank: list[int] = field(default_factory=list)
    exec_s_per_rank: list[float] = field(default_factory=list)
    sync_s_per_rank: list[float] = field(default_factory=list)
    remote_bytes: int = 0
    blocked: list[BlockedProcess] = field(default_factory=list)
    #: With ``Simulator(predict_ranks=...)``: the parallel figures of each rank count
    #: (:class:`pdes.predict.RankPrediction`), measured on one rank.
    predicted: dict[int, RankPrediction] = field(default_factory=dict)

    @property
    def events_per_s(self) -> float:
        return self.events / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def events_per_window(self) -> float:
        return self.events / self.windows if self.windows else float(self.events)

    @property
    def remote_fraction(self) -> float:
        return self.remote_events / self.events if self.events else 0.0


class Simulator:
    """Owns one simulation: clock, event heap, entities, RNG seed and (optionally) MPI.

    Args:
        end_time: events at or after this time are not executed (the run stops there).
        lookahead: the minimum delay of a send between entities of different locality
            groups; it is also the width of the conservative windows of a parallel run.
        seed: the run seed; every entity derives its own streams from (seed, entity id).
        comm: ``"auto"`` (MPI world when launched under mpirun with >1 rank, else none;
            mpi4py is not imported for a sequential run), ``None`` (sequential), or an
            mpi4py communicator.
        parallel: force the windowed parallel loop even on one rank (``True``), or the
            plain sequential loop (``False``, only valid on one rank). ``None`` picks the
            windowed loop exactly when there is more than one rank.
        gc_threshold: while :meth:`run` executes, Python's cyclic garbage collector starts
            a young-generation collection only after this many net new container objects
            (at least; a larger threshold already set is kept), and the previous setting
            is restored afterwards. ``None`` leaves the collector's settings alone.
        predict_ranks: rank counts whose parallel figures to measure (the statistics mode,
            :mod:`pdes.predict`): the run executes on one rank in the windows of a parallel
            run and reports, in ``stats.predicted``, each count's windows, events per window
            per rank, remote fraction, load balance and speedup bound. Needs one rank and
            a lookahead > 0; results are the same as without it.
    """

    def __init__(
        self,
        *,
        end_time: float = math.inf,
        lookahead: float = 0.0,
        seed: int = 0,
        comm: Any = "auto",
        parallel: bool | None = None,
        gc_threshold: int | None = 100_000,
        predict_ranks: tuple[int, ...] | list[int] = (),
    ):
        if not (isinstance(end_time, (int, float)) and end_time > 0):
            raise ConfigError(f"end_time must be a number > 0 (seconds), got {end_time!r}")
        if not (isinstance(lookahead, (int, float)) and 0 <= lookahead < math.inf):
            raise ConfigError(f"lookahead must be a finite number >= 0 (seconds), got {lookahead!r}")
        if not _is_int(seed):
            raise ConfigError(f"seed must be an int, got {seed!r}")
        if gc_threshold is not None and (isinstance(gc_threshold, bool) or not (_is_int(gc_threshold) and gc_threshold >= 1)):
            raise ConfigError(f"gc_threshold must be an int >= 1 or None, got {gc_threshold!r}")
        self.gc_threshold = gc_threshold
        if comm == "auto":
            from .parallel import world_comm

            comm = world_comm()
        self.comm = comm
        self.rank: int = comm.rank if comm is not None else 0
        self.size: int = comm.size if comm is not None else 1
        self.predict_ranks = check_predict_ranks(predict_ranks)
        if self.predict_ranks:
            if self.size > 1:
                raise ConfigError("predict_ranks measures a parallel run on one rank; this run has several")
            if lookahead <= 0:
                raise ConfigError("predict_ranks needs lookahead > 0 (the width of the windows it measures)")
            parallel = True
        if parallel is None:
            parallel = self.size > 1
        if not parallel and self.size > 1:
            raise ConfigError("parallel=False needs a single rank; this run has several")
        if parallel and lookahead <= 0:
            raise ConfigError("a parallel run needs lookahead > 0 (the width of a synchronization window)")
        self.parallel = bool(parallel)
        self.end_time = float(end_time)
        self.lookahead = float(lookahead)
        self.seed = int(seed)
        self.now: float = 0.0
        self._heap: list = []
        self._local: dict[Any, Entity] = {}
        # service name -> list indexed by entity id of the resolved bound service (or None).
        self._svc_tables: dict[str, list] = {}
        # service name -> list indexed by entity id of the rank of a remote entity already
        # checked to offer that service (or None): later remote sends skip the checks.
        self._remote_tables: dict[str, list] = {}
        self._types: dict[str, EntityType] = {}
        self._offsets: list[int] = []
        self._type_order: list[EntityType] = []
        self._next_eid = 0
        self._live: dict[Process, None] = {}
        self._hub = None
        self._hub_switch = None  # the hub's bound switch, shared by every process
        # Events due at one time, being run in key order: a list sorted by descending key
        # (the next one is the last), and a heap of (key, event) of those that joined the
        # group after it was sorted.
        self._tied: list = []
        self._join: list = []
        # A blocking process runs the next event itself when it resumes another process, is
        # due before the horizon (the end time, or the end of the current window) and
        # _direct is set: only while the loop runs, not while a service runs a process in
        # place (resume(), Mailbox.put, kill) nor during a group of tied events. See
        # Process._pass.
        self._horizon = -math.inf
        self._direct = False
        # What _direct returns to when a group of tied events is done (False in the
        # statistics mode, which must see every event).
        self._direct_ok = False
        self._failed_process: tuple[Process, BaseException] | None = None
        self._outboxes: list[list] = [[] for _ in range(self.size)]
        self._min_sent = math.inf
        self._ran = False
        # Hooks of models that keep deferred events (see on_idle).
        self._idle_hooks: list[Callable[[float], Any]] = []
        self.stats = RunStats()

    # -- entities ---------------------------------------------------------------------------
    def add_entities(
        self,
        cls: type[E],
        count: int = 1,
        *args: Any,
        name: str | None = None,
        placement: PlacementSpec = "block",
        group: Callable[[int], Hashable] | None = None,
        **kwargs: Any,
    ) -> list[E]:
        """Add ``count`` entities of class ``cls`` named ``name`` (default: the class name).

        Every rank must add the same types in the same order (ids are assigned from it); each
        rank constructs only the entities placed on it, calling ``cls(*args, **kwargs)``
        after binding ``sim``, ``type_name``, ``index``, ``eid`` and ``group``.
        ``group(index)`` gives the locality group; entities of one group must be placed on
        one rank. Returns the entities constructed on this rank.
        """
        if self._ran:
            raise ConfigError("entities must be added before run()")
        if not (isinstance(cls, type) and issubclass(cls, Entity)):
            raise ConfigError(f"add_entities needs a subclass of pdes.Entity, got {cls!r}")
        if not _is_int(count) or count < 1:
            raise ConfigError(f"count of {cls.__name__} must be an int >= 1, got {count!r}")
        name = name or cls.__name__
        if name in self._types:
            raise ConfigError(f"entity type {name!r} was already added")
        count = int(count)
        ranks = place(placement, name, count, self.size) if self.size > 1 else None
        offset = self._next_eid
        etype = EntityType(name, cls, offset, count, ranks, placement)
        groups = [group(i) for i in range(count)] if group is not None else None
        if ranks is not None and groups is not None:
            self._check_groups(name, groups, ranks)
        self._types[name] = etype
        self._type_order.append(etype)
        self._offsets.append(offset)
        self._next_eid += count
        for table in self._svc_tables.values():
            table.extend([None] * count)
        for table in self._remote_tables.values():
            table.extend([None] * count)
        made: list[E] = []
        local = self._local
        my = self.rank
        for i in range(count):
            if ranks is not None and ranks[i] != my:
                continue
            ent = cls.__new__(cls)
            Entity._bind(ent, self, name, i, offset + i, groups[i] if groups is not None else None)
            local[offset + i] = ent
            local[(name, i)] = ent
            made.append(ent)
        for ent in made:
            ent.__init__(*args, **kwargs)
        return made

    def add_entity(self, cls: type[E], *args: Any, name: str | None = None, rank: int = 0, **kwargs: Any) -> E | None:
        """Add a single entity on ``rank``; returns it there and None on the other ranks."""
        made = self.add_entities(cls, 1, *args, name=name, placement=rank, **kwargs)
        return made[0] if made else None

    def _check_groups(self, name: str, groups: list, ranks: np.ndarray) -> None:
        seen = getattr(self, "_group_rank", None)
        if seen is None:
            seen = self._group_rank = {}
        for i, g in enumerate(groups):
            if g is None:
                continue
            r = int(ranks[i])
            prev = seen.setdefault(g, r)
            if prev != r:
                raise ConfigError(
                    f"{name}[{i}] is in locality group {g!r} but placed on rank {r}, while that "
                    f"group already lives on rank {prev}: a group must be placed on one rank"
                )

    @property
    def n_entities(self) -> int:
        """Entity ids assigned so far (all ranks); the next type added starts at this id."""
        return self._next_eid

    def entity_type(self, name: str) -> EntityType:
        try:
            return self._types[name]
        except KeyError:
            raise UnknownEntityError(f"no entity type {name!r}; known: {', '.join(self._types) or 'none'}") from None

    def eid(self, name: str, index: int = 0) -> int:
        """The global id of entity ``(name, index)``."""
        t = self.entity_type(name)
        if not 0 <= index < t.count:
            raise UnknownEntityError(f"{name}[{index}] does not exist: valid indices are 0..{t.count - 1}")
        return t.offset + index

    def entity(self, name: str, index: int = 0) -> Entity:
        """The local entity ``(name, index)``; raises if it does not exist or lives on another rank."""
        ent = self._local.get((name, index))
        if ent is None:
            eid = self.eid(name, index)
            raise UnknownEntityError(f"{name}[{index}] (id {eid}) lives on rank {self.rank_of(eid)}, not on rank {self.rank}")
        return ent

    def entities(self, name: str | None = None) -> Iterator[Entity]:
        """The entities on this rank (of one type, or all), in id order."""
        if name is not None:
            t = self.entity_type(name)
            rng = range(t.offset, t.offset + t.count)
        else:
            rng = range(self._next_eid)
        local = self._local
        for eid in rng:
            ent = local.get(eid)
            if ent is not None:
                yield ent

    def is_local(self, eid: int) -> bool:
        return eid in self._local

    def local_entity(self, eid: int) -> Entity | None:
        """The entity with id ``eid`` when it lives on this rank, else None."""
        return self._local.get(eid)

    def _type_of(self, eid: int) -> EntityType:
        if not _is_int(eid) or not 0 <= eid < self._next_eid:
            raise UnknownEntityError(f"no entity with id {eid!r} (ids are 0..{self._next_eid - 1})")
        return self._type_order[bisect_right(self._offsets, eid) - 1]

    def rank_of(self, eid: int) -> int:
        """The rank that owns entity ``eid``."""
        t = self._type_of(eid)
        return 0 if t.ranks is None else int(t.ranks[eid - t.offset])

    def _send_remote(self, src: Entity, dest: Any, service: str, data: Any, t: float) -> None:
        if isinstance(dest, tuple):
            if len(dest) != 2:
                raise UnknownEntityError(f"{src!r} sent {service!r} to {dest!r}: an address is (type name, index)")
            eid = self.eid(*dest)
        else:
            eid = dest
        etype = self._type_of(eid)
        if service not in etype.cls.inboxes and not callable(getattr(etype.cls, service, None)):
            raise UnknownServiceError(
                f"{src!r} sent to {etype.name}[{eid - etype.offset}] service {service!r}, which "
                f"{etype.cls.__name__} does not define"
            )
        if etype.ranks is None or not self.parallel:
            # Every entity of a sequential run is local, so a miss here means a bad address.
            raise UnknownEntityError(f"{src!r} sent {service!r} to {dest!r}, which is not a known local entity")
        r = int(etype.ranks[eid - etype.offset])
        if r == self.rank:  # pragma: no cover - local entities are always registered
            raise UnknownEntityError(f"{dest!r} should be local to rank {self.rank} but is missing")
        self._outboxes[r].append((t, src._next_key(), eid, service, data))
        if t < self._min_sent:
            self._min_sent = t
        self._remember(self._remote_tables, service, eid, r)

    def _remember(self, tables: dict[str, list], service: str, eid: int, value: Any) -> None:
        """Record ``value`` for (service, entity id) in one of the per-service tables."""
        table = tables.get(service)
        if table is None:
            table = tables[service] = [None] * self.n_entities
        table[eid] = value

    # -- running ----------------------------------------------------------------------------
    def run(self) -> RunStats:
        """Execute events in (time, key) order until ``end_time`` or until none are left.

        Returns the run statistics (also kept in :attr:`stats`). An exception in a service
        or process stops the run and is raised as :class:`SimulationError` naming the
        entity, the simulated time (and rank), with the original exception chained.
        """
        if self._ran:
            raise ConfigError("run() may be called once per Simulator")
        self._ran = True
        hub = self._hub = getcurrent()
        hub_switch = self._hub_switch = hub.switch
        for p in self._live:
            p.parent = hub
            p._hub_switch = hub_switch
        # Events are container objects the collector tracks. Python's default (a young
        # collection per 700 net allocations) scans every event created since the last
        # collection, and a parallel run creates its remote events in bursts at each
        # window's exchange: with the default, a 2-rank PHOLD spent about a sixth of its
        # time in the collector. A higher threshold keeps cyclic garbage bounded at a
        # fraction of that cost (see docs/kernel.md).
        gc_old = None
        if self.gc_threshold is not None:
            gc_old = gc.get_threshold()
            if self.gc_threshold > gc_old[0]:
                gc.set_threshold(self.gc_threshold, *gc_old[1:])
        t0 = _time.perf_counter()
        try:
            if self.parallel:
                events = self._run_windows()
            else:
                events = self._run_sequential()
        finally:
            if gc_old is not None:
                gc.set_threshold(*gc_old)
        wall = _time.perf_counter() - t0
        self._finish_stats(events, wall)
        return self.stats

    def _run_sequential(self) -> int:
        heap = self._heap
        tied = self._tied
        join = self._join
        pop = heappop
        end = self.end_time
        if end < math.inf:
            # STOP_KEY sorts before every model key, so events at exactly end_time never run.
            heappush(heap, make_event(end, STOP_KEY, self._stop, None))
        self._horizon = end
        self._direct = self._direct_ok = True
        # The loop keeps no counters: events are counted afterwards from the entities' key
        # counters (see _count_events), which keeps the hot path to pop, clock, call.
        e = None
        more = True
        while more:
            more = False
            try:
                while True:
                    if tied:
                        # (_next_tied, inlined unless new events joined the group.)
                        if join or (heap and heap[0] == tied[-1]):
                            e = self._next_tied()
                        else:
                            e = tied.pop()
                            if not tied:
                                self._direct = True
                    else:
                        e = pop(heap)
                        if heap and heap[0] == e:
                            e = self._first_tied(e)
                    self.now = e.t
                    e.fn(e.data)
            except _Stop:
                self.now = end
                self._idle(end)
            except IndexError as exc:
                # An empty heap ends a run without end time; any other IndexError is the model's.
                if heap or tied or exc.__traceback__.tb_next is not None:
                    self._reset_loop()
                    raise self._wrap(exc, e.fn if e is not None else None) from exc
                # Deferred events made real go on running.
                more = self._idle(self.now)
            except Exception as exc:
                self._reset_loop()
                raise self._wrap(exc, e.fn if e is not None else None) from exc
            except BaseException:
                self._reset_loop()
                raise
        self._reset_loop()
        return self._count_events(0, 0)

    def _reset_loop(self) -> None:
        self._horizon = -math.inf
        self._direct = self._direct_ok = False
        self._untie()

    # -- deferred events -----------------------------------------------------------------------
    def on_idle(self, hook: Callable[[float], Any]) -> None:
        """Register ``hook(t)`` of a model that keeps deferred events (see
        :meth:`Entity.first_key`): the kernel calls it when this rank has nothing else due
        (its heap is empty) and when the run reaches its end time. The hook must apply the
        effect of every deferred event due before ``t`` and :meth:`post` the others, so a run
        ends at the same time, with the same event count, as if they had been sent."""
        self._idle_hooks.append(hook)

    def post(self, t: float, key: int, dest: int, service: str, data: Any) -> None:
        """Schedule deferred event ``key`` (from :meth:`Entity.first_key`): ``service`` of local
        entity ``dest`` (an id) with ``data`` at time ``t`` (not before now)."""
        table = self._svc_tables.get(service)
        fn = table[dest] if table is not None else None
        if fn is None:
            fn = self._resolve_delivery(dest, service)
        heappush(self._heap, make_event(t, key, fn, data))

    def _idle(self, t: float) -> bool:
        """Run the idle hooks; whether they scheduled events."""
        if not self._idle_hooks:
            return False
        n = len(self._heap)
        for hook in self._idle_hooks:
            hook(t)
        return len(self._heap) > n

    # -- events due at one time ----------------------------------------------------------
    def _first_tied(self, e: Any) -> Any:
        """``e`` was popped and the heap holds more events at its time: return the first by key.

        All events at that time move to ``_tied``, sorted once by descending key, until they
        have run (each is popped from the end); events created meanwhile for the same time
        join them through the heap ``_join`` (see _next_tied). ``_tied`` is never empty
        while ``_join`` is not.
        """
        heap = self._heap
        tied = self._tied
        tied.append(e)
        while heap and heap[0] == e:
            tied.append(heappop(heap))
        tied.sort(key=_KEY, reverse=True)
        self._direct = False
        return self._take_tied()

    def _next_tied(self) -> Any:
        """The next event of the current group of tied events (joined by any new ones)."""
        heap = self._heap
        tied = self._tied
        join = self._join
        t = tied[-1]
        while heap and heap[0] == t:
            x = heappop(heap)
            heappush(join, (x.key, x))
        if join and join[0][0] < t.key:
            e = heappop(join)[1]
        else:
            e = tied.pop()
        if not tied:
            if join:
                join.sort(reverse=True)
                tied.extend([x for _, x in join])
                join.clear()
            else:
                self._direct = self._direct_ok
        return e

    def _take_tied(self) -> Any:
        tied = self._tied
        e = tied.pop()
        if not tied:
            self._direct = self._direct_ok
        return e

    def _untake(self, e: Any) -> None:
        """Give back the event just taken from the tied group (it stays first)."""
        self._tied.append(e)
        self._direct = False

    def _untie(self) -> None:
        """Put the events of an unfinished group of tied events back in the heap."""
        tied = self._tied
        if tied:
            heap = self._heap
            for x in tied:
                heappush(heap, x)
            tied.clear()
            for _, x in self._join:
                heappush(heap, x)
            self._join.clear()

    def _count_events(self, remote_sent: int, remote_received: int, guards: int = 0) -> int:
        """Events executed on this rank: keys created here, minus those sent away or still queued."""
        created = 0
        for k, ent in self._local.items():
            if k.__class__ is int:
                created += ent._evkey - (ent.eid << KEY_SHIFT)
        return created - remote_sent + remote_received - (len(self._heap) + len(self._tied) + len(self._join) - guards)

    @staticmethod
    def _stop(_data: Any) -> None:
        raise _Stop

    def _wrap(self, exc: BaseException, fn: Any) -> SimulationError:
        failed, self._failed_process = self._failed_process, None
        proc = failed[0] if failed is not None and failed[1] is exc else None
        owner = getattr(fn, "__self__", None)
        if proc is not None:
            where = f"process {proc.name!r} of {proc.entity!r}"
        elif isinstance(owner, Process):
            where = f"process {owner.name!r} of {owner.entity!r}"
        elif isinstance(owner, Entity):
            where = f"service {getattr(fn, '__name__', fn)!r} of {owner!r}"
        else:
            where = f"event {fn!r}"
        rank = f" on rank {self.rank}" if self.size > 1 else ""
        msg = f"{type(exc).__name__}: {exc} (in {where} at t={self.now!r}{rank})"
        return SimulationError(msg, entity=where, time=self.now, rank=self.rank)

    def _run_windows(self) -> int:
        comm = self.comm
        if comm is None:
            return self._window_loop(None, None)
        from .parallel import StopSignals, WindowExchange

        exchange = WindowExchange(comm)
        try:
            with StopSignals() as stop:
                return self._window_loop(exchange, stop)
        finally:
            exchange.close()

    def _window_loop(self, exchange: Any, stop: Any) -> int:
        """The windows of a run; ``exchange`` and ``stop`` are None without a communicator."""
        heap = self._heap
        tied = self._tied
        join = self._join
        pop = heappop
        heappush(heap, make_event(math.inf, -1, None, None))  # guard: the heap is never empty
        la = self.lookahead
        end = self.end_time
        outboxes = self._outboxes
        prof = self._window_profile() if self.predict_ranks else None
        # A blocking process may run the next event itself (Process._pass); the statistics
        # mode sends every event through this loop so that each is counted.
        direct = prof is None
        windows = 0
        sync_s = 0.0
        error: SimulationError | None = None
        idle = self._idle if self._idle_hooks else None
        while True:
            t0 = _time.perf_counter()
            if idle is not None and heap[0].t == math.inf:
                idle(self.now)
            local_min = min(heap[0].t, self._min_sent)
            self._min_sent = math.inf
            if exchange is not None:
                payloads = None
                if error is None:
                    try:
                        payloads = exchange.pack(outboxes)
                    except Exception as exc:
                        error = self._transfer_error(exc, outboxes)
                tmin, failed, signum, chunks = exchange.exchange(payloads, local_min, error is not None, stop.signum)
                if failed:
                    self._raise_failure(error, exchange)
                if signum:
                    # Every rank saw the same table: all stop here together, none is left
                    # waiting in a collective.
                    raise Interrupted(signum, collective=True)
                if chunks:
                    ev = None
                    try:
                        svc_tables = self._svc_tables
                        for ev in exchange.unpack(chunks):
                            t, key, dest, service, data = ev
                            table = svc_tables.get(service)
                            fn = table[dest] if table is not None else None
                            if fn is None:
                                fn = self._resolve_delivery(dest, service)
                            # The event, built inline (see pdes.event.make_event).
                            e = Event(t)
                            e.t = t
                            e.key = key
                            e.fn = fn
                            e.data = data
                            heappush(heap, e)
                    except Exception as exc:
                        # Every rank learns of it at the next exchange (no window runs here).
                        error = self._delivery_error(exc, ev)
                        continue
            else:
                tmin = local_min
            sync_s += _time.perf_counter() - t0
            if tmin >= end:
                # Like the sequential loop: a run with an end time stops with the clock there.
                if end < math.inf:
                    self.now = end
                    if idle is not None:
                        idle(end)
                break
            windows += 1
            wend = tmin + la
            if wend > end:
                wend = end
            self._horizon = wend
            self._direct = self._direct_ok = direct
            e = None
            try:
                if stop is not None:
                    stop.in_window = True
                while True:
                    if tied:
                        # (_next_tied, inlined unless new events joined the group.)
                        if join or heap[0] == tied[-1]:
                            e = self._next_tied()
                        else:
                            e = tied.pop()
                            if not tied:
                                self._direct = direct
                    elif heap[0] < wend:
                        e = pop(heap)
                        if heap[0] == e:
                            e = self._first_tied(e)
                    else:
                        break
                    self.now = e.t
                    if prof is not None:
                        prof.count(e)
                    e.fn(e.data)
            except BaseException as exc:
                if exchange is None:
                    if not isinstance(exc, Exception):
                        raise  # SystemExit, KeyboardInterrupt: as in the sequential loop
                    raise self._wrap(exc, e.fn if e is not None else None) from exc
                stop.in_window = False
                if isinstance(exc, KeyboardInterrupt):
                    # SIGINT/SIGTERM (see StopSignals): the next exchange stops every rank.
                    stop.signum = stop.signum or getattr(exc, "signum", signal.SIGINT)
                else:
                    # Under MPI every failure, sys.exit() in a model included, goes through the
                    # next exchange: a rank leaving alone would leave the others in a collective.
                    error = self._wrap(exc, e.fn if e is not None else None)
                    error.__cause__ = exc
            finally:
                if stop is not None:
                    stop.in_window = False
                self._horizon = -math.inf
                self._direct = self._direct_ok = False
                self._untie()
            if prof is not None:
                prof.end_window()
        if prof is not None:
            self.stats.predicted = prof.result()
        self.stats.windows = windows
        self._sync_s = sync_s
        self._exchange = exchange
        if exchange is None:
            return self._count_events(0, 0, guards=1)
        return self._count_events(exchange.sent_events, exchange.recv_events, guards=1)

    def _window_profile(self) -> WindowProfile:
        """The counters of the statistics mode: every entity's rank for each predicted count."""
        owners = []
        for p in self.predict_ranks:
            ranks: list[int] = []
            for t in self._type_order:
                ranks += place(t.placement, t.name, t.count, p).tolist()
            owners.append(ranks)
        return WindowProfile(self.predict_ranks, owners)

    def _resolve_delivery(self, dest: int, service: str) -> Any:
        """The callable of a remote event's first delivery to (dest, service), cached like a local send's."""
        fn = event_callable(getattr(self._local[dest], service))
        self._remember(self._svc_tables, service, dest, fn)
        return fn

    def _transfer_error(self, exc: Exception, outboxes: list[list]) -> SimulationError:
        """The error of a window whose remote events could not be packed (e.g. unpicklable data)."""
        import pickle

        what = "remote events"
        for box in outboxes:
            for t, key, dest, service, data in box:
                try:
                    pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
                except Exception:
                    what = self._event_name(t, key, dest, service)
                    break
            else:
                continue
            break
        msg = (f"{type(exc).__name__}: {exc} (packing {what} for another rank at t={self.now!r} on rank "
               f"{self.rank}; data sent across ranks must be picklable)")
        err = SimulationError(msg, entity=what, time=self.now, rank=self.rank)
        err.__cause__ = exc
        return err

    def _delivery_error(self, exc: Exception, ev: Any) -> SimulationError:
        """The error of remote events that arrived but could not be queued on this rank."""
        what = self._event_name(*ev[:4]) if ev is not None else "remote events"
        msg = f"{type(exc).__name__}: {exc} (delivering {what} on rank {self.rank} at t={self.now!r})"
        err = SimulationError(msg, entity=what, time=self.now, rank=self.rank)
        err.__cause__ = exc
        return err

    def _event_name(self, t: float, key: int, dest: int, service: str) -> str:
        """An in-flight remote event as a report names it (its key holds the sender's id)."""
        if key < -1:
            key += FIRST  # a first event (Entity.send_first)
        return f"event {service!r} from {self._name_of(key >> KEY_SHIFT)} to {self._name_of(dest)} due at t={t!r}"

    def _name_of(self, eid: int) -> str:
        try:
            t = self._type_of(eid)
        except UnknownEntityError:
            return f"entity {eid!r}"
        return f"{t.name}[{eid - t.offset}]"

    def _raise_failure(self, error: SimulationError | None, exchange: Any) -> None:
        """Every rank learns of every failure; the failing rank raises its own error."""
        mine = None
        if error is not None:
            cause = error.__cause__
            tb = "".join(traceback.format_exception(cause)) if cause is not None else ""
            mine = f"{error}\n{tb}"
        reports = exchange.comm.allgather(mine)
        if error is not None:
            raise error
        failed = [(r, m) for r, m in enumerate(reports) if m is not None]
        text = "\n".join(f"[rank {r}] {m}" for r, m in failed)
        first = failed[0][0] if failed else -1
        raise RemoteRankError(
            f"rank {first} failed; rank {self.rank} stopped with it:\n{text}", rank=first, time=self.now
        )

    def _finish_stats(self, events: int, wall: float) -> None:
        st = self.stats
        # Events still queued may be sleep wake-ups of live processes: those are "scheduled".
        scheduled = {e.fn.__self__ for e in self._heap if isinstance(getattr(e.fn, "__self__", None), Process)}
        blocked = [
            BlockedProcess(
                entity=repr(p.entity),
                process=p.name,
                state="scheduled" if p in scheduled else "hibernating",
                waiting_for=str(p.waiting_for),
                rank=self.rank,
                location=blocked_at(p),
            )
            for p in self._live
            if not p.done
        ]
        exchange = getattr(self, "_exchange", None)
        sync_s = getattr(self, "_sync_s", 0.0)
        mine = (events, wall - sync_s, sync_s, blocked,
                exchange.sent_events if exchange else 0, exchange.bytes_sent if exchange else 0, self.now)
        if self.comm is not None and self.size > 1:
            allv = self.comm.allgather(mine)
        else:
            allv = [mine]
        st.ranks = self.size
        st.events_per_rank = [a[0] for a in allv]
        st.events = sum(st.events_per_rank)
        st.exec_s_per_rank = [a[1] for a in allv]
        st.sync_s_per_rank = [a[2] for a in allv]
        st.blocked = [b for a in allv for b in a[3]]
        st.remote_events = sum(a[4] for a in allv)
        st.remote_bytes = sum(a[5] for a in allv)
        # The run's final time is the latest clock of any rank (each rank stops at its own
        # last event when there is no end time), so every rank reports the same value.
        st.end_time = min(max(a[6] for a in allv), self.end_time)
        self.now = st.end_time
        if self.comm is not None and self.size > 1:
            wall = self.comm.allreduce(wall, op=_mpi_max())
        st.wall_s = wall

    def events_so_far(self) -> int:
        """About how many events this rank has executed so far (for progress displays).

        Reads the entities' key counters without consuming them: O(local entities). In a
        parallel run it counts events sent to other ranks as executed here.
        """
        created = 0
        for k, ent in self._local.items():
            if k.__class__ is int:
                created += ent._evkey - (ent.eid << KEY_SHIFT)
        return created - len(self._heap) - len(self._tied) - len(self._join)

    def blocked_processes(self) -> list[BlockedProcess]:
        """Processes of this run that had not finished when it ended (all ranks)."""
        return list(self.stats.blocked)


def _mpi_max():
    from mpi4py import MPI

    return MPI.MAX
