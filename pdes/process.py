"""Processes: greenlets owned by an entity that block and resume in simulated time.

A process is a plain function run in its own greenlet. It blocks with :meth:`Process.sleep`,
:meth:`Process.hibernate`, :meth:`Process.join`, :meth:`Process.receive` or
:meth:`Mailbox.get` and is resumed by the event loop, so model code reads as straight-line
code with no ``yield``.

Every resumption is an ordinary event of the owning entity: its heap key comes from the
entity's own key counter, which is what keeps runs deterministic.

How resumption works (and why it is fast): an event that resumes a process is simply
``process.switch(value)``. Kernel resumptions (the end of a sleep, a wake, a join, a
mailbox hand-over) pass a :class:`_Resume` marker; anything else is a message for the
process's own inbox (see :meth:`Entity.spawn` with ``inbox=``). A message that arrives
while the process is blocked elsewhere is queued in its inbox, so a message event costs one
greenlet switch, no intermediate handler.

A process that blocks does not always return to the event loop: when the next event due
resumes another process, the blocking process pops it and switches there itself (see
:meth:`Process._pass`), so a chain of process events costs one switch per event rather than
two (process, loop, process). The event order is the loop's own ((time, key)).
"""

from __future__ import annotations

import os
from collections import deque
from heapq import heappop, heappush
from typing import TYPE_CHECKING, Any, Callable

from greenlet import GreenletExit, getcurrent, greenlet

from .errors import ProcessError
from .event import BuiltinMethod, make_event

if TYPE_CHECKING:  # pragma: no cover
    from .entity import Entity
    from .simulator import Simulator


class _Resume:
    """Marks a kernel resumption (as opposed to an inbox message) and carries its value."""

    __slots__ = ("value",)

    def __init__(self, value: Any = None):
        self.value = value


_WAKE = _Resume(None)  # the shared marker of sleep ends and starts (value None)


def event_callable(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``fn`` as the callable of an event.

    A bound C method in the heap must be the ``switch`` of a process that has started: a
    blocking process switches to such events directly (:meth:`Process._pass`), and a process
    must never be started from inside another one (its greenlet would begin deeper in the C
    stack, which every later switch would copy). Any other bound C method is wrapped.
    """
    if type(fn) is BuiltinMethod:
        owner = getattr(fn, "__self__", None)
        if not (type(owner) is Process and owner and fn == owner.switch):
            return _Call(fn)
    return fn


class _Call:
    """A bound C method as an event callable that a process never switches to directly."""

    __slots__ = ("fn", "__self__")

    def __init__(self, fn: Callable[[Any], Any]):
        self.fn = fn
        self.__self__ = getattr(fn, "__self__", None)  # the owner, as error reports name it

    def __call__(self, data: Any) -> Any:
        return self.fn(data)

    def __repr__(self) -> str:
        return repr(self.fn)


def _switch_within_event(sim: "Simulator", p: "Process", value: Any) -> None:
    """Run process ``p`` now, inside the current service; returns when it blocks again.

    While it runs, blocking must hand control back to the service rather than run later
    events, which the simulator's ``_direct`` flag tells :meth:`Process._pass`.
    """
    direct = sim._direct
    sim._direct = False
    try:
        p.switch(value)
    finally:
        sim._direct = direct


class Process(greenlet):
    """A greenlet owned by an entity; created with :meth:`Entity.spawn`.

    Attributes:
        entity: the owning entity.
        name: a label used in reports.
        done: True once the function returned (or the process was killed).
        killed: True if it was ended by :meth:`kill`.
        result: the function's return value once done.
        waiting_for: what a blocked process waits for; models (the MPI layer) set a precise
            description so that deadlock reports can say it: a string, or any object whose
            ``str()`` gives it, made only when a report asks (a blocked process waits often).
    """

    # The slots read on every message come first, next to the greenlet header that a switch
    # touches anyway.
    __slots__ = (
        "_inbox", "_sim", "_hub_switch", "entity", "name", "done", "killed", "result",
        "waiting_for", "_fn", "_args", "_kwargs", "_hibernating", "_joiners", "_inbox_name",
    )

    def __init__(self, entity: "Entity", fn: Callable[..., Any], args: tuple, kwargs: dict, name: str,
                 inbox: str | None = None):
        sim = entity.sim
        super().__init__(None, sim._hub or getcurrent())
        # The greenlet runs a plain function rather than a ``run`` method: greenlet calls a
        # bound method through extra C frames, and every switch of this greenlet saves and
        # restores its whole C stack (1.43 KB instead of 1.58 KB per switch, each way).
        self.run = _entry(self)
        # Created on the first message that arrives while the process is busy: most
        # processes receive only while waiting and never need one.
        self._inbox: deque | None = None
        self._sim = sim
        # The event loop's greenlet is known once the run starts (Simulator.run sets it);
        # all processes share one bound ``switch`` of it.
        self._hub_switch = sim._hub_switch
        self.entity = entity
        self.name = name
        self.done = False
        self.killed = False
        self.result: Any = None
        self.waiting_for = ""
        self._fn = fn
        self._args = args
        self._kwargs = kwargs
        self._hibernating = False
        self._joiners: list[Process] | None = None
        self._inbox_name = inbox

    # -- events that reach a process before it runs ----------------------------------------
    def _start(self, value: Any) -> None:
        """The start event (a no-op for a process killed before it started)."""
        if not self.done:
            self.switch(value)

    def _deliver(self, message: Any) -> None:
        """The inbox service until the process starts (then it is ``switch`` itself)."""
        if not self.done:
            self.switch(message)

    def _started(self) -> None:
        """Now running: messages for the inbox resume it directly from here on."""
        name = self._inbox_name
        if name is not None:
            ent = self.entity
            switch = self.switch
            setattr(ent, name, switch)
            table = self._sim._svc_tables.get(name)
            if table is not None and table[ent.eid] is not None:
                table[ent.eid] = switch

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
            ent = self.entity
            r = _Resume(result)
            for p in joiners:
                p._hibernating = False
                heappush(heap, make_event(now, ent._next_key(), p.switch, r))

    def _block(self) -> Any:
        """Give control away until a kernel resumption arrives (messages meanwhile are queued)."""
        while True:
            v = self._pass()
            if v.__class__ is _Resume:
                return v.value
            if self._inbox is None:
                self._inbox = deque()
            self._inbox.append(v)

    def _pass(self) -> Any:
        """Suspend the calling process (this one) and return the value it is resumed with.

        When the next event due resumes a process that has started (a message, a sleep end,
        a wake), this process pops it and switches there directly, exactly as the event loop
        would have (clock, then call): one greenlet switch per event instead of two (process
        -> loop -> process). Anything else (a service, the end of the run or of a window, a
        group of events at one time, a process run in place by a service's ``resume()``)
        goes back to the loop. :meth:`receive` inlines the same steps.
        """
        sim = self._sim
        if sim._direct:
            heap = sim._heap
            try:
                e = heap[0]
            except IndexError:
                return self._hub_switch()
            fn = e.fn
            if type(fn) is BuiltinMethod and e < sim._horizon:
                heappop(heap)
                if heap and heap[0] == e:
                    # Events at one time run in key order: the simulator picks the first.
                    e = sim._first_tied(e)
                    fn = e.fn
                    if type(fn) is not BuiltinMethod:
                        sim._untake(e)
                        return self._hub_switch()
                sim.now = e.t
                data = e.data
                # Hold nothing of the event while suspended (this frame lives until this
                # process resumes, long after): only the callable and the message remain.
                e = None
                return fn(data)
        return self._hub_switch()

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
        heappush(sim._heap, make_event(sim.now + dt, self.entity._next_key(), self.switch, _WAKE))
        self._block()

    def hibernate(self) -> Any:
        """Block until another party calls :meth:`wake`; returns the value given to ``wake``."""
        if getcurrent() is not self:
            raise self._not_current("hibernate")
        self._hibernating = True
        # (_block, inlined: the MPI layer hibernates a rank once per message it waits for.)
        while True:
            v = self._pass()
            if v.__class__ is _Resume:
                return v.value
            if self._inbox is None:
                self._inbox = deque()
            self._inbox.append(v)

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
        heappush(sim._heap, make_event(sim.now, self.entity._next_key(), self.switch, _Resume(value)))

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
            # (_switch_within_event, inlined: the MPI layer resumes a rank once per message.)
            direct = sim._direct
            sim._direct = False
            try:
                self.switch(_Resume(value))
            finally:
                sim._direct = direct
        else:
            heappush(sim._heap, make_event(sim.now, self.entity._next_key(), self.switch, _Resume(value)))

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
        # Only inbox messages resume a receiving process (every kernel resumption targets a
        # process blocked in _block()), so the value needs no check. What follows is
        # _pass(), inlined: this is the hot path of process-style models.
        sim = self._sim
        if sim._direct:
            heap = sim._heap
            try:
                e = heap[0]
            except IndexError:
                return self._hub_switch()
            fn = e.fn
            if type(fn) is BuiltinMethod and e < sim._horizon:
                heappop(heap)
                if heap and heap[0] == e:
                    e = sim._first_tied(e)
                    fn = e.fn
                    if type(fn) is not BuiltinMethod:
                        sim._untake(e)
                        return self._hub_switch()
                sim.now = e.t
                data = e.data
                e = None
                return fn(data)
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
        sim = self._sim
        if getcurrent() is not sim._hub:
            raise ProcessError("kill() must be called from a service, not from inside a process")
        if not self:  # never started: nothing to unwind
            self.killed = True
            self._finish(None)
            return
        direct = sim._direct
        sim._direct = False
        try:
            self.throw(GreenletExit)
        finally:
            sim._direct = direct

    def __repr__(self) -> str:
        state = "done" if self.done else ("hibernating" if self._hibernating else "active")
        return f"<Process {self.name} of {self.entity!r} {state}>"


def _entry(p: Process) -> Callable[..., Any]:
    """The function a process's greenlet runs: the process body with the kernel's bookkeeping."""

    def run(first: Any = _WAKE) -> Any:
        try:
            p._started()
            if first.__class__ is not _Resume:
                # A message reached the inbox before the start event: keep it and wait.
                p._inbox = deque((first,))
                p._block()
            fn, args, kwargs = p._fn, p._args, p._kwargs
            # Calls with a fixed number of positional arguments are inlined by the
            # interpreter (no nested C frame), which keeps the C stack that every switch of
            # this greenlet saves and restores small; ``fn(*args)`` would add a C frame.
            if kwargs:
                result = fn(*args, **kwargs)
            elif not args:
                result = fn()
            elif len(args) == 1:
                result = fn(args[0])
            elif len(args) == 2:
                result = fn(args[0], args[1])
            elif len(args) == 3:
                result = fn(args[0], args[1], args[2])
            else:
                result = fn(*args)
        except GreenletExit:
            result = None
            p.killed = True
        except BaseException as exc:
            # Remember which process failed: the event loop only sees the event that switched
            # into it, which may belong to another entity (a mailbox put, a wake). The
            # exception is kept too, so that one a service caught is never blamed later.
            p._sim._failed_process = (p, exc)
            raise
        p._finish(result)
        return result

    return run


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
            _switch_within_event(sim, w, _Resume(item))
        else:
            heappush(sim._heap, make_event(sim.now, w.entity._next_key(), w.switch, _Resume(item)))

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


_KERNEL_DIR = os.path.dirname(os.path.abspath(__file__))
# The blocking calls a suspended process can be in, named as a report shows them.
_BLOCKING = {"receive": "receive()", "get": "Mailbox.get()", "sleep": "sleep()", "hibernate": "hibernate()",
             "join": "join()"}


def blocked_at(proc: Process, depth: int = 3, skip: tuple[str, ...] = (), with_call: bool = True) -> str:
    """Where a suspended process waits, read from its greenlet's frames at report time (the
    hot path records nothing): the kernel call it blocks in and up to ``depth`` of the model
    frames that led there, innermost first, e.g.
    ``receive() in Server.loop (server.py:42) < Server.serve (server.py:30)``. Frames of
    files in the directories ``skip`` (say, a library layer between the model and the
    kernel) are passed over like the kernel's own; ``with_call=False`` leaves out the kernel
    call (when the caller describes the wait itself).
    """
    f = proc.gr_frame
    call = ""
    frames: list[str] = []
    while f is not None and len(frames) < depth:
        code = f.f_code
        d = os.path.dirname(os.path.abspath(code.co_filename))
        if d == _KERNEL_DIR or d in skip:
            if not frames and code.co_name in _BLOCKING:
                call = _BLOCKING[code.co_name]
        else:
            frames.append(f"{getattr(code, 'co_qualname', code.co_name)} ({os.path.basename(code.co_filename)}:{f.f_lineno})")
        f = f.f_back
    where = " < ".join(frames)
    if not with_call:
        return where
    if call and where:
        return f"{call} in {where}"
    return call or where
