"""Processes: greenlets owned by an entity that block and resume in simulated time.

A process is a plain function run in its own greenlet. It blocks with :meth:`Process.sleep`,
:meth:`Process.hibernate`, :meth:`Process.join`, :meth:`Process.receive` or
:meth:`Mailbox.get` and is resumed by the event loop, so model code reads as straight-line
code with no ``yield``.

Every resumption is an ordinary event of the owning entity: its heap key comes from the
entity's own key counter, which is what keeps runs deterministic.

How resumption works (and why it is fast): an event that resumes a process is simply
``process.switch(value)``. Kernel resumptions (the end of a sleep, a wake, a join, a
mailbox hand-over, the start) pass a :class:`_Resume` marker; anything else is a message for
the process's own inbox (see :meth:`Entity.spawn` with ``inbox=``). A message that arrives
while the process is blocked elsewhere is queued in its inbox, so a message event costs one
greenlet switch, no intermediate handler.
"""

from __future__ import annotations

from collections import deque
from heapq import heappush
from typing import TYPE_CHECKING, Any, Callable

from greenlet import GreenletExit, getcurrent, greenlet

from .errors import ProcessError

if TYPE_CHECKING:  # pragma: no cover
    from .entity import Entity
    from .simulator import Simulator


class _Resume:
    """Marks a kernel resumption (as opposed to an inbox message) and carries its value."""

    __slots__ = ("value",)

    def __init__(self, value: Any = None):
        self.value = value


_WAKE = _Resume(None)  # the shared marker of sleep ends and starts (value None)


class Process(greenlet):
    """A greenlet owned by an entity; created with :meth:`Entity.spawn`.

    Attributes:
        entity: the owning entity.
        name: a label used in reports.
        done: True once the function returned (or the process was killed).
        killed: True if it was ended by :meth:`kill`.
        result: the function's return value once done.
        waiting_for: what a blocked process waits for; models (the MPI layer) set a precise
            description so that deadlock reports can say it.
    """

    __slots__ = (
        "entity", "name", "done", "killed", "result", "waiting_for",
        "_sim", "_hub_switch", "_keys", "_fn", "_args", "_kwargs", "_hibernating", "_joiners", "_inbox",
    )

    def __init__(self, entity: "Entity", fn: Callable[..., Any], args: tuple, kwargs: dict, name: str):
        sim = entity.sim
        super().__init__(parent=sim._hub or getcurrent())
        self.entity = entity
        self.name = name
        self.done = False
        self.killed = False
        self.result: Any = None
        self.waiting_for = ""
        self._sim = sim
        # The event loop's greenlet is known once the run starts (Simulator.run sets it).
        self._hub_switch = sim._hub.switch if sim._hub is not None else None
        self._keys = entity._keys
        self._fn = fn
        self._args = args
        self._kwargs = kwargs
        self._hibernating = False
        self._joiners: list[Process] | None = None
        # Created on the first message that arrives while the process is busy: most
        # processes receive only while waiting and never need one.
        self._inbox: deque | None = None

    # -- greenlet entry point -------------------------------------------------------------
    def run(self, first: Any = _WAKE) -> Any:  # noqa: D401 - greenlet protocol
        sim = self._sim
        try:
            if first.__class__ is not _Resume:
                # A message reached the inbox before the start event: keep it and wait.
                self._inbox = deque((first,))
                self._block()
            args, kwargs = self._args, self._kwargs
            if args or kwargs:
                result = self._fn(*args, **kwargs)
            else:
                # A plain call is inlined by the interpreter (no nested C frame), which keeps
                # the C stack that every switch of this greenlet saves and restores small.
                result = self._fn()
        except GreenletExit:
            result = None
            self.killed = True
        except BaseException as exc:
            # Remember which process failed: the event loop only sees the event that switched
            # into it, which may belong to another entity (a mailbox put, a wake). The
            # exception is kept too, so that one a service caught is never blamed later.
            sim._failed_process = (self, exc)
            raise
        self._finish(result)
        return result

    def _finish(self, result: Any) -> None:
        self.done = True
        self.result = result
        self.waiting_for = ""
        sim = self._sim
        sim._live.pop(self, None)
        joiners = self._joiners
        if joiners:
            self._joiners = None
            now = sim.now
            heap = sim._heap
            keys = self._keys
            r = _Resume(result)
            for p in joiners:
                p._hibernating = False
                heappush(heap, (now, next(keys), p.switch, r))

    def _block(self) -> Any:
        """Give control back to the event loop until a kernel resumption arrives."""
        hub_switch = self._hub_switch
        while True:
            v = hub_switch()
            if v.__class__ is _Resume:
                return v.value
            if self._inbox is None:
                self._inbox = deque()
            self._inbox.append(v)

    # -- blocking calls (only from inside this process) -----------------------------------
    def _not_current(self, what: str) -> ProcessError:
        return ProcessError(
            f"{what}() was called outside process {self.name!r} of {self.entity!r}: "
            "blocking calls are only valid inside the process itself"
        )

    def sleep(self, dt: float) -> None:
        """Block this process for ``dt`` seconds of simulated time."""
        if getcurrent() is not self:
            raise self._not_current("sleep")
        if not dt >= 0.0:
            raise ProcessError(f"sleep({dt!r}) in {self.entity!r}: the duration must be >= 0")
        sim = self._sim
        heappush(sim._heap, (sim.now + dt, next(self._keys), self.switch, _WAKE))
        self._block()

    def hibernate(self) -> Any:
        """Block until another party calls :meth:`wake`; returns the value given to ``wake``."""
        if getcurrent() is not self:
            raise self._not_current("hibernate")
        self._hibernating = True
        return self._block()

    def wake(self, value: Any = None) -> None:
        """Resume a hibernating process at the current time (as an event of its own entity).

        Only valid for a process that is hibernating; waking it twice before it runs is an
        error, since the second wake would resume it from a later, unrelated block.
        """
        if not self._hibernating:
            raise ProcessError(
                f"wake() on process {self.name!r} of {self.entity!r}, which is not hibernating"
            )
        self._hibernating = False
        sim = self._sim
        heappush(sim._heap, (sim.now, next(self._keys), self.switch, _Resume(value)))

    def resume(self, value: Any = None) -> None:
        """Wake a hibernating process, at once when called from a service.

        From a service (event context) the process runs immediately, inside the current
        event, and this call returns when it blocks again: no extra event. From inside a
        process it behaves like :meth:`wake` (a resume event at the current time).
        """
        if not self._hibernating:
            raise ProcessError(
                f"resume() on process {self.name!r} of {self.entity!r}, which is not hibernating"
            )
        self._hibernating = False
        sim = self._sim
        if getcurrent() is sim._hub:
            self.switch(_Resume(value))
        else:
            heappush(sim._heap, (sim.now, next(self._keys), self.switch, _Resume(value)))

    @property
    def hibernating(self) -> bool:
        """True while the process is blocked in :meth:`hibernate` and not yet woken."""
        return self._hibernating

    def receive(self) -> Any:
        """Take the oldest message of this process's inbox, blocking while it is empty.

        Messages reach the inbox through the entity service named by ``spawn(..., inbox=)``.
        """
        inbox = self._inbox
        if inbox:
            return inbox.popleft()
        if getcurrent() is not self:
            raise self._not_current("receive")
        # Only inbox messages resume a receiving process: every kernel resumption targets a
        # process blocked in _block(), so the value needs no check here.
        return self._hub_switch()

    @property
    def pending(self) -> int:
        """Number of messages waiting in the inbox."""
        return len(self._inbox) if self._inbox is not None else 0

    def join(self) -> Any:
        """Block the calling process until this one finishes; returns its result."""
        if self.done:
            return self.result
        cur = getcurrent()
        if not isinstance(cur, Process):
            raise ProcessError(f"join() on {self.name!r} was called outside any process")
        if cur is self:
            raise ProcessError(f"process {self.name!r} cannot join itself")
        if self._joiners is None:
            self._joiners = []
        self._joiners.append(cur)
        cur._hibernating = True
        cur.waiting_for = cur.waiting_for or f"join({self.name})"
        return cur._block()

    def kill(self) -> None:
        """End the process now (it sees ``GreenletExit`` at its blocking call).

        Events already scheduled for it become no-ops. Only valid from event context (a
        service), not from inside another process.
        """
        if self.done:
            return
        if getcurrent() is not self._sim._hub:
            raise ProcessError("kill() must be called from a service, not from inside a process")
        if not self:  # never started: nothing to unwind
            self.killed = True
            self._finish(None)
            return
        self.throw(GreenletExit)

    def __repr__(self) -> str:
        state = "done" if self.done else ("hibernating" if self._hibernating else "active")
        return f"<Process {self.name} of {self.entity!r} {state}>"


class Mailbox:
    """A FIFO of items with at most one blocked reader, shared by code of one entity.

    ``put`` may be called from a service or a process; ``get`` only from a process. When a
    reader waits and ``put`` runs inside an event (a service), the reader resumes at once,
    within that event, which costs no extra event.
    """

    __slots__ = ("_items", "_waiter", "_sim", "owner")

    def __init__(self, owner: "Entity"):
        self.owner = owner
        self._sim: "Simulator" = owner.sim
        self._items: deque = deque()
        self._waiter: Process | None = None

    def put(self, item: Any) -> None:
        """Append an item, resuming the waiting reader if there is one."""
        w = self._waiter
        if w is None:
            self._items.append(item)
            return
        self._waiter = None
        sim = self._sim
        if getcurrent() is sim._hub:
            w.switch(_Resume(item))
        else:
            heappush(sim._heap, (sim.now, next(w._keys), w.switch, _Resume(item)))

    def get(self) -> Any:
        """Take the oldest item, blocking the calling process while the mailbox is empty."""
        items = self._items
        if items:
            return items.popleft()
        cur = getcurrent()
        if not isinstance(cur, Process):
            raise ProcessError(f"Mailbox.get() of {self.owner!r} was called outside a process")
        if self._waiter is not None:
            raise ProcessError(f"Mailbox of {self.owner!r} already has a waiting reader")
        self._waiter = cur
        return cur._block()

    def __len__(self) -> int:
        return len(self._items)
