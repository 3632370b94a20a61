"""A minimal reference scheduler for the benchmarks: FCFS with none / EASY / EASY-SJBF /
conservative backfilling on node counts, one ``heapq`` event loop, no kernel, no allocator, no
metrics.

It is the named baseline of ``bench_scheduler.py``: what a plain trace simulator costs on the
same trace, so that simhpc's CPU time can be read as a multiple of it. It follows simhpc's
definitions (``docs/scheduling.md``): jobs run for ``min(run, request)`` (killed at the
request), plan with ``start + request``, all ends and submissions of an instant are seen
before that instant's starts are decided; EASY reserves for the blocked head and backfills
jobs that end by the shadow time or fit the extra nodes (in queue order; EASY-SJBF: shortest
request first, ties in submission order); conservative backfilling gives
every queued job the earliest slot of a free-node profile, compresses the plan in queue
order after an early end, and starts jobs at their reservations. ``schedule`` returns the
start time of every job, so a benchmark can also say how many starts agree with simhpc's.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from typing import Sequence

__all__ = ["schedule"]

_INF = math.inf


def _slot_end(s: float, r: float) -> float:
    return s + r if r > 0 else math.nextafter(s, _INF)


class _Profile:
    """Free nodes over time: ``free[k]`` on ``[times[k], times[k + 1])``."""

    def __init__(self, now: float, free_now: int, deltas: list[tuple[float, int]]):
        deltas.sort()
        self.times = [now]
        self.free = [free_now]
        for t, d in deltas:
            if t == self.times[-1]:
                self.free[-1] += d
            else:
                self.times.append(t)
                self.free.append(self.free[-1] + d)

    def trim(self, now: float) -> None:
        k = bisect_right(self.times, now) - 1
        if k > 0:
            del self.times[:k]
            del self.free[:k]
        self.times[0] = now

    def _split(self, t: float) -> int:
        k = bisect_left(self.times, t)
        if k < len(self.times) and self.times[k] == t:
            return k
        self.times.insert(k, t)
        self.free.insert(k, self.free[k - 1])
        return k

    def add(self, a: float, b: float, d: int) -> None:
        i = self._split(a)
        j = self._split(b)
        for k in range(i, j):
            self.free[k] += d

    def find(self, n: int, dur: float, before: float = _INF, own: tuple[float, float] | None = None) -> float | None:
        """Earliest breakpoint < before with n nodes free for dur (own slot counted free)."""
        times, free = self.times, self.free
        os_, oe = own if own is not None else (_INF, _INF)
        m = len(times)
        k = 0
        while k < m:
            t = times[k]
            if t >= before:
                return None
            end = t + dur
            j = k
            while j < m and (j == k or times[j] < end):
                if free[j] + (n if os_ <= times[j] < oe else 0) < n:
                    break
                j += 1
            else:
                return t
            # Every start up to segment j would cover it: try the next one after it.
            k = j + 1
        return None


def schedule(jobs: Sequence[tuple[float, int, float, float]], n_nodes: int, backfill: str) -> list[float]:
    """Start times of ``jobs`` = (submit, nodes, run, request) under FCFS with ``backfill``
    (``none``, ``easy``, ``easy-sjbf`` or ``conservative``); jobs are taken in submission
    order."""
    if backfill not in ("none", "easy", "easy-sjbf", "conservative"):
        raise ValueError(f"backfill {backfill!r}; valid: none, easy, easy-sjbf, conservative")
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i][0], i))
    rank = [0] * len(jobs)  # place in submission order: SJBF's tie-break
    for k, i in enumerate(order):
        rank[i] = k
    start = [math.nan] * len(jobs)
    events: list[tuple[float, int, int]] = []  # (time, kind 0 end / 1 submit / 2 wake, job)
    for i in order:
        heapq.heappush(events, (jobs[i][0], 1, i))
    queue: list[int] = []
    running: dict[int, float] = {}  # job -> expected end
    free = n_nodes
    res: dict[int, float] = {}
    prof: _Profile | None = None
    cons = backfill == "conservative"
    early = False  # an early end since the last pass (kept over passes with an empty queue)
    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, kind, i = heapq.heappop(events)
            if kind == 0:
                free += jobs[i][1]
                exp = running.pop(i)
                early = early or now < exp or start[i] == now
            elif kind == 1:
                queue.append(i)
        if not queue:
            continue

        def launch(i: int) -> None:
            nonlocal free
            _, n, run, req = jobs[i]
            free -= n
            start[i] = now
            running[i] = now + req
            heapq.heappush(events, (now + min(run, req), 0, i))

        if cons:
            compress = early
            early = False
            if compress or prof is None:
                deltas = [(e, jobs[i][1]) for i, e in running.items()]
                for i, s in res.items():
                    deltas += [(s, -jobs[i][1]), (_slot_end(s, jobs[i][3]), jobs[i][1])]
                prof = _Profile(now, free, deltas)
            else:
                prof.trim(now)
            if compress:
                for i in queue:
                    s = res.get(i)
                    if s is None or s <= now:
                        continue
                    n, req = jobs[i][1], jobs[i][3]
                    e = _slot_end(s, req)
                    t = prof.find(n, req, before=s, own=(s, e))
                    if t is not None:
                        prof.add(s, e, n)
                        prof.add(t, _slot_end(t, req), -n)
                        res[i] = t
                        heapq.heappush(events, (t, 2, i))
            for i in queue:
                if i not in res:
                    n, req = jobs[i][1], jobs[i][3]
                    t = prof.find(n, req)
                    prof.add(t, _slot_end(t, req), -n)
                    res[i] = t
                    heapq.heappush(events, (t, 2, i))
            due = [i for i in queue if res[i] <= now]
            for i in due:
                del res[i]
                launch(i)
            if due:
                queue = [i for i in queue if i in res]
            continue
        k = 0
        while k < len(queue) and jobs[queue[k]][1] <= free:
            launch(queue[k])
            k += 1
        queue = queue[k:]
        if backfill != "none" and queue and free > 0:
            head = jobs[queue[0]][1]
            avail = free
            shadow = extra = None
            ends = sorted((e, i) for i, e in running.items())
            m = len(ends)
            j = 0
            while j < m:
                t = ends[j][0]
                while j < m and ends[j][0] == t:
                    avail += jobs[ends[j][1]][1]
                    j += 1
                if avail >= head:
                    shadow, extra = t, avail - head
                    break
            cands = queue[1:]
            if backfill == "easy-sjbf":
                cands.sort(key=lambda i: (jobs[i][3], rank[i]))
            started = set()
            for i in cands:
                n = jobs[i][1]
                if n <= free and now + jobs[i][3] <= shadow:
                    launch(i)
                    started.add(i)
                elif n <= free and n <= extra:
                    extra -= n
                    launch(i)
                    started.add(i)
            if started:
                queue = [i for i in queue if i not in started]
    return start
