"""Events, as the event heap holds them.

An event is a float (its time) carrying its key, callable and data in slots. The heap orders
events by their float value alone: comparing two floats is several times cheaper than
comparing ``(time, key, ...)`` tuples, and touches one object instead of a tuple and its
float, which matters once the heap outgrows the caches. Events at equal times are put in
key order by the simulator (see ``Simulator._first_tied``), so execution follows
``(time, key)`` exactly, as with tuples.
"""

from __future__ import annotations

from typing import Any, Callable


class Event(float):
    """One scheduled call ``fn(data)`` at time ``t`` (the float value), ordered by ``key``.

    ``t`` is the time as a plain float (what the clock is set to); ``key`` packs the id of
    the entity that created the event with that entity's counter.
    """

    __slots__ = ("t", "key", "fn", "data")

    def __repr__(self) -> str:
        return f"Event(t={self.t!r}, key={self.key!r}, fn={self.fn!r})"


def make_event(t: float, key: int, fn: Callable[[Any], Any], data: Any) -> Event:
    """The event that calls ``fn(data)`` at time ``t`` (hot paths inline these lines)."""
    e = Event(t)
    e.t = t
    e.key = key
    e.fn = fn
    e.data = data
    return e


# The type of a bound C method such as ``process.switch``. In the heap, a callable of this type
# always resumes a process that has started (see ``process.event_callable``), which is what lets
# a blocking process run such an event itself.
BuiltinMethod = type(len)
