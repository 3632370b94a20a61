"""Entities: the logical processes of a simulation, addressed by (type name, index).

A subclass defines *services* (plain methods taking one ``data`` argument) and may spawn
*processes*. The kernel creates entities itself (see :meth:`Simulator.add_entities`): it binds
``sim``, ``type_name``, ``index``, ``eid`` and ``group`` before the subclass ``__init__`` runs,
so ``__init__`` takes only the model's own arguments and may already send, spawn and draw
random numbers.
"""

from __future__ import annotations

import hashlib
import random
from heapq import heappush
from typing import TYPE_CHECKING, Any, Callable, Hashable

from greenlet import getcurrent

from .errors import ProcessError, SendError, UnknownEntityError, UnknownServiceError
from .event import Event, make_event
from .process import _WAKE, Process, event_callable

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from .simulator import Simulator

# Keys pack (entity id, that entity's event counter) into one int: entity id in the high bits.
KEY_SHIFT = 40
# A "first" event's key is its ordinary key minus FIRST: below every ordinary key (>= 0), so
# at one time first events run before all others, in (entity, counter) order among themselves.
FIRST = 1 << 100
# The end-time stop event sorts below every key, first events included: nothing due at
# exactly end_time runs, as in a parallel run (whose windows stop before end_time).
STOP_KEY = -(1 << 102)


def stream_seed(seed: int, eid: int) -> int:
    """The seed of entity ``eid``'s RNG streams, derived from the run seed alone."""
    digest = hashlib.blake2b(f"simhpc:{seed}:{eid}".encode(), digest_size=16).digest()
    return int.from_bytes(digest, "little")


class Entity:
    """Base class of simulation entities.

    Attributes bound by the kernel: ``sim`` (the owning :class:`Simulator`), ``type_name``,
    ``index``, ``eid`` (global integer id) and ``group`` (the locality group: entities of one
    group always share an MPI rank, so they may send to each other with any delay >= 0).
    """

    # Names of services that deliver straight into a process inbox (see spawn(inbox=)).
    inboxes: tuple[str, ...] = ()

    sim: "Simulator"
    type_name: str
    index: int
    eid: int
    group: Hashable | None

    def __init__(self) -> None:
        """Subclasses take their own arguments; the kernel has bound the base attributes."""

    def _bind(self, sim: "Simulator", type_name: str, index: int, eid: int, group: Hashable | None) -> None:
        self.sim = sim
        self.type_name = type_name
        self.index = index
        self.eid = eid
        self.group = group
        self._evkey = eid << KEY_SHIFT  # the key of this entity's next event
        self._rng: random.Random | None = None
        self._np_rng = None

    def _next_key(self) -> int:
        """Take the key of a new event of this entity."""
        key = self._evkey
        self._evkey = key + 1
        return key

    # -- identity, time, randomness --------------------------------------------------------
    @property
    def now(self) -> float:
        """The current simulated time in seconds."""
        return self.sim.now

    @property
    def rng(self) -> random.Random:
        """This entity's own random stream, seeded from (run seed, entity id)."""
        r = self._rng
        if r is None:
            r = self._rng = random.Random(stream_seed(self.sim.seed, self.eid))
        return r

    @property
    def np_rng(self) -> "np.random.Generator":
        """A numpy generator of this entity, independent of :attr:`rng`, for vectorised draws."""
        g = self._np_rng
        if g is None:
            import numpy as np

            g = self._np_rng = np.random.Generator(
                np.random.PCG64(np.random.SeedSequence([stream_seed(self.sim.seed, self.eid), 1]))
            )
        return g

    def __repr__(self) -> str:
        return f"{self.type_name}[{self.index}]"

    # -- events ----------------------------------------------------------------------------
    def send(self, dest: int | tuple[str, int], service: str, data: Any = None, delay: float = 0.0) -> None:
        """Invoke ``service`` of entity ``dest`` with ``data`` after ``delay`` seconds.

        ``dest`` is a global entity id (fast) or a ``(type name, index)`` pair. A send to
        another entity needs ``delay >= sim.lookahead`` unless both share a locality group;
        a send to self may use any delay >= 0.
        """
        sim = self.sim
        if not delay >= sim.lookahead:  # also catches a NaN delay
            self._check_short_delay(dest, service, delay)
        # Resolved services live in one list per service name, indexed by entity id: a
        # compact table keeps the lookup cheap (and cache-friendly) with many entities.
        try:
            fn = sim._svc_tables[service][dest]
        except (KeyError, IndexError, TypeError):
            fn = None
        if fn is None or dest < 0:
            self._send_slow(dest, service, data, delay)
            return
        # The event, built inline (see pdes.event.make_event).
        key = self._evkey
        self._evkey = key + 1
        t = sim.now + delay
        e = Event(t)
        e.t = t
        e.key = key
        e.fn = fn
        e.data = data
        heappush(sim._heap, e)

    def send_first(self, dest: int | tuple[str, int], service: str, data: Any = None, delay: float = 0.0) -> None:
        """:meth:`send`, but the event runs before every ordinary event due at the same time.

        For state updates that other events at that time must see whichever entity created
        them (e.g. credits of flow control): the order stays (time, key), with first events
        keyed below all others, so it is still independent of the number of ranks.
        """
        key = self._evkey
        self._evkey = key - FIRST
        try:
            self.send(dest, service, data, delay)
        finally:
            self._evkey = key + 1

    def first_key(self) -> int:
        """Take the key of a first event (see :meth:`send_first`) that a model keeps deferred:
        it applies the event's effect lazily and schedules it with :meth:`Simulator.post`
        only when something must wait for it (see :meth:`Simulator.on_idle`). Taking the key
        keeps every later key, and so the order of all events, as if it had been sent."""
        key = self._evkey
        self._evkey = key + 1
        return key - FIRST

    def _send_slow(self, dest: Any, service: str, data: Any, delay: float) -> None:
        """First send of a service to a local entity (resolve and cache it) or a remote send."""
        sim = self.sim
        # A remote (entity, service) already checked once: straight to its rank's outbox.
        table = sim._remote_tables.get(service)
        if table is not None and dest.__class__ is int and 0 <= dest < len(table):
            r = table[dest]
            if r is not None:
                t = sim.now + delay
                key = self._evkey
                self._evkey = key + 1
                sim._outboxes[r].append((t, key, dest, service, data))
                if t < sim._min_sent:
                    sim._min_sent = t
                return
        try:
            ent = sim._local.get(dest)
        except TypeError:
            raise UnknownEntityError(f"{self!r} sent {service!r} to {dest!r}: address entities by id or (type name, index)") from None
        if ent is None:
            sim._send_remote(self, dest, service, data, sim.now + delay)
            return
        try:
            fn = getattr(ent, service)
        except AttributeError:
            raise UnknownServiceError(
                f"{self!r} sent to {ent!r} service {service!r}, which {type(ent).__name__} does not define"
            ) from None
        if not callable(fn):
            raise UnknownServiceError(f"{self!r} sent to {ent!r} service {service!r}, which is not a method")
        fn = event_callable(fn)
        # Bound services are resolved once per (entity, name): later sends find them in the table.
        sim._remember(sim._svc_tables, service, ent.eid, fn)
        heappush(sim._heap, make_event(sim.now + delay, self._next_key(), fn, data))

    def req_service(self, delay: float, service: str, data: Any, type_name: str, index: int = 0) -> None:
        """Simian's ``reqService(minDelay, eventName, data, entityName, entityID)``."""
        self.send((type_name, index), service, data, delay)

    def after(self, delay: float, fn: Callable[[Any], Any], data: Any = None) -> None:
        """Call ``fn(data)`` (a callable of this entity's own) after ``delay`` seconds.

        A local timer: cheaper than a self-send by name, never crosses ranks.
        """
        if not delay >= 0.0:
            raise SendError(f"{self!r}.after() with delay {delay!r}: the delay must be >= 0")
        sim = self.sim
        heappush(sim._heap, make_event(sim.now + delay, self._next_key(), event_callable(fn), data))

    def _check_short_delay(self, dest: Any, service: str, delay: float) -> None:
        if not delay >= 0.0:
            what = "negative" if delay < 0.0 else "invalid"
            raise SendError(f"{self!r} sent {service!r} to {dest!r} with {what} delay {delay!r}: the delay must be >= 0")
        sim = self.sim
        ent = sim._local.get(dest)
        if ent is self:
            return
        if ent is not None and self.group is not None and ent.group == self.group:
            return
        raise SendError(
            f"{self!r} sent {service!r} to {dest!r} with delay {delay!r} below the lookahead "
            f"{sim.lookahead!r}: a send to another entity must carry delay >= lookahead "
            "(unless both entities share a locality group)"
        )

    # -- processes -------------------------------------------------------------------------
    def spawn(
        self,
        fn: Callable[..., Any],
        *args: Any,
        name: str | None = None,
        delay: float = 0.0,
        inbox: str | None = None,
        **kwargs: Any,
    ) -> Process:
        """Start ``fn(*args, **kwargs)`` as a process of this entity after ``delay`` seconds.

        With ``inbox="svc"``, events sent to this entity's service ``svc`` become messages of
        the process, taken with :meth:`Process.receive` (each costs one greenlet switch, no
        handler). The class must declare the name in its ``inboxes`` tuple so that senders on
        other ranks can check it.
        """
        if not delay >= 0.0:
            raise ProcessError(f"{self!r}.spawn() with delay {delay!r}: the delay must be >= 0")
        sim = self.sim
        if inbox is not None:
            if inbox not in type(self).inboxes:
                raise ProcessError(
                    f"spawn(inbox={inbox!r}) on {self!r}: declare it in the class, "
                    f"e.g. inboxes = ({inbox!r},)"
                )
            if getattr(self, inbox, None) is not None:
                raise ProcessError(f"{self!r} already has a service or inbox named {inbox!r}")
        p = Process(self, fn, args, kwargs, name or getattr(fn, "__name__", "process"), inbox)
        if inbox is not None:
            # Until the process starts, its messages go through _deliver (which starts it if
            # one arrives first); from its start on, the inbox is the process's switch.
            setattr(self, inbox, p._deliver)
        sim._live[p] = None
        heappush(sim._heap, make_event(sim.now + delay, self._next_key(), p._start, _WAKE))
        return p

    def current_process(self) -> Process:
        """The calling process, which must belong to this entity."""
        return self._current_process("current_process")

    def _current_process(self, what: str) -> Process:
        cur = getcurrent()
        if not isinstance(cur, Process) or cur.entity is not self:
            raise ProcessError(f"{what}() on {self!r} was called outside a process of {self!r}")
        return cur

    def sleep(self, dt: float) -> None:
        """Block the calling process (which must belong to this entity) for ``dt`` seconds."""
        self._current_process("sleep").sleep(dt)

    def hibernate(self) -> Any:
        """Block the calling process of this entity until it is woken; returns the wake value."""
        return self._current_process("hibernate").hibernate()

    def wake(self, process: Process, value: Any = None) -> None:
        """Wake a hibernating process (Simian's ``wakeProcess``)."""
        process.wake(value)
