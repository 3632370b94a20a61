"""The flow model's solver: every message a flow on its route, rates shared max-min fairly.

One :class:`FlowSolver` entity (on rank 0) holds every flow in the network. A NIC sends it a
flow start after the send overhead and the route's latency, ``o_s + sum(L)`` (the latency is
paid up front); the flow then transfers its bytes at its max-min fair rate over the
capacities of its route's links, the NIC's injection and ejection links included. When flows
start or end, only the flows connected to them through shared links (their connected
component in the link-flow graph) get new rates: a small component, found by walking the
flows on each link, by :func:`~.maxmin.maxmin_local` in plain Python, larger ones by
:func:`~.maxmin.maxmin_rates` over a CSR incidence (the same rates, bit for bit); all starts
and ends of one instant are handled in one recomputation. Components are also kept between
recomputations (:class:`_Comp`), so that a recomputation walks only the small ones and those
an end may have split. In a large component, a start or end that provably leaves every other
flow's rate as it is (:meth:`FlowSolver._end_is_local`, :meth:`FlowSolver._start_rate`)
recomputes nothing, and the changes of an instant are first solved with the flows beside
them alone (:meth:`FlowSolver._solve_near`); see docs/network.md.
When a message's last byte is through, the solver tells the destination NIC (delivery after
``o_r``) and, for ``notify``, the sender.

Placement: the solver is one entity, so every flow sees every other, for any number of MPI
ranks; its remote sends carry at least the simulator's lookahead (the start: ``max(o_s +
sum(L), lookahead)``, the delivery: ``max(o_r, lookahead)`` after the last byte, the buffer
release: ``lookahead`` after it), a rule that does not depend on the number of ranks, so
neither do the results.
"""

from __future__ import annotations

import heapq
import math
from math import fsum
from itertools import repeat
from operator import attrgetter, is_not
from typing import TYPE_CHECKING, Any

import numpy as np

from pdes import Entity
from pdes.event import Event

from .maxmin import maxmin_incidence, maxmin_local, maxmin_rates

if TYPE_CHECKING:  # pragma: no cover
    from .network import Network

#: Entity type name of the flow solver.
SOLVER_TYPE = "flow_solver"


class _Comp:
    """A set of flows that holds a connected component of the link-flow graph: ``slots``,
    their rows (see :class:`FlowSolver`). Starts merge the components their links join (the
    smaller into the larger: ``up``, the one it went into; ``slots`` is an ordered set); an
    end removes its flow, or makes the component ``dirty`` where it may have split (its slots
    may then hold flows that ended). A component that
    is not dirty is exactly the flows connected to any of its own, so a recomputation takes
    its flows without walking the link sets. ``stamp``: that of the last recomputation that
    took it."""

    __slots__ = ("up", "slots", "dirty", "stamp", "pend", "fall")

    def __init__(self, slots: dict[int, None]):
        self.up: _Comp | None = None
        self.slots = slots
        self.dirty = False
        self.stamp = 0
        # The last batch (FlowSolver._batch) in which a start or end changed it, and the
        # last in which one could not be kept by itself (a check failed, or it was not the
        # batch's first change there): such a component is settled at the batch's end from
        # all its changes (FlowSolver._settle).
        self.pend = -1
        self.fall = -1


class _Due(float):
    """An entry of the solver's due heap: a float (the time a flow's segment comes due), so
    the heap compares floats, not tuples; ``f``: the flow, whose ``entry`` it is while live."""

    __slots__ = ("f",)


class _Flow:
    """One message in flight: its current segment's route, bytes and rate. ``slot`` is its row
    in the solver's arrays (routes, for the vectorised pass over large components)."""

    __slots__ = ("fid", "slot", "msg", "dst", "route", "restricted", "extra", "size", "left",
                 "rate", "rem", "t", "fin", "entry", "due", "mark", "comp")

    def __init__(self, fid: int, msg: tuple, dst: int, route: tuple, restricted: bool, extra: float):
        self.fid = fid
        self.slot = -1
        self.msg = msg
        self.dst = dst
        self.route = route
        self.restricted = restricted
        self.extra = extra  # latency of the chosen route beyond the one the NIC paid
        self.size = 0  # bytes of the current segment
        self.left = msg[2]  # bytes not yet in a segment
        self.rate = 0.0
        self.rem = 0.0  # bytes of the current segment still to go, as of t
        self.t = 0.0
        self.fin = math.inf  # when the segment ends at the current rate
        # The flow's one live entry in the solver's due heap (others are stale; None: none)
        # and its time (inf: none), at most ``fin``: an entry that comes due before ``fin``
        # (the rate fell since) is put back at ``fin``, not the moment the rate falls.
        self.entry: _Due | None = None
        self.due = math.inf
        self.mark = 0  # the stamp of the last walk that found it
        self.comp: _Comp | None = None  # its component, or one that went into it (``up``)


class FlowSolver(Entity):
    """Holds the network's flows and their max-min fair rates (see the module docstring)."""

    #: Starts and ends that provably leave every other flow's rate as it is recompute
    #: nothing (see :meth:`_end_is_local` and :meth:`_start_rate`), in the exact mode (no
    #: rate quantum); False: every start and end recomputes its component (tests compare
    #: the two).
    local = True

    def __init__(self, net: "Network"):
        self.net = net
        st = self._st = net.state
        topo = net.topology
        self._topo = topo
        self._cap = np.asarray(topo.link_bw, dtype=np.float64)
        self._capl: list[float] = self._cap.tolist()
        self._node_off = net.node_offset
        seg = net.config.flow_segment
        self._seg = math.inf if seg is None else seg
        self._adaptive = topo.is_adaptive
        self._o_r = st.o_r
        # Rate quantum (seconds, 0: exact): starts and rate changes wait for the next multiple.
        self._q = net.config.flow_quantum or 0.0
        # Local updates in the exact mode only: with a quantum every change waits for the
        # next boundary, where one recomputation takes them all.
        self._loc = self.local and not self._q
        self._changed: set[int] = set()  # links whose flows' rates wait for the next boundary
        # The flows on each link, in the order they came (a dict as an ordered set, so that
        # walks meet the flows in the same order in every run; made on a link's first flow,
        # dropped with its last, so that idle links keep no objects alive), and their number.
        n_links = len(self._capl)
        self._on_link: list[dict[_Flow, None] | None] = [None] * n_links
        self._n_on: list[int] = [0] * n_links
        # Per link: the stamp of the last walk that met it and its local number there.
        self._lmark: list[int] = [0] * n_links
        self._lidx: list[int] = [0] * n_links
        self._fid = 0
        self._stamp = 0  # stamps of the walks: a flow found by one has its ``mark``
        self._starts: list[tuple] = []
        self._resolving = False
        self._batch = 0  # the changes waiting for the next recomputation (see _Comp.pend)
        # The batch's starts and ends (local updates on): (component, links whose load
        # changed, whether a start).
        self._locals: list[tuple[_Comp, Any, bool]] = []
        # Due entries; those of one time are ended in flow id order (as tuples would be).
        self._due: list[_Due] = []
        self._wakes: list[float] = []  # times of the wake-ups already scheduled
        self._wake_fn = self._wake  # (bound once: the wake-ups' events call it)
        # The routes of the flows in flight as rows of an array, so that a recomputation of
        # large components gathers them and their incidence with numpy. A row is padded with
        # the sentinel link ``n_links`` (never carrying a flow); free rows are reused
        # last-freed first.
        self._nl = len(self._cap)
        self._local = np.zeros(self._nl + 1, dtype=np.int64)  # link numbers of _problems
        self._routes = np.full((64, 8), self._nl, dtype=np.int64)
        self._pad: tuple[int, ...] = ()  # a row's worth of sentinels
        self._ratev = np.zeros(64)  # each row's flow's rate (as ``_Flow.rate``)
        self._row: list[_Flow | None] = [None] * 64
        self._free = list(range(63, -1, -1))

    # -- services ----------------------------------------------------------------------------
    def flow_start(self, d: tuple) -> None:
        """A message's latency has elapsed: its first byte may flow now."""
        self._starts.append(d)
        if not self._resolving:
            self._soon()

    def _wake(self, _: Any) -> None:
        if self._q:
            self._ends()
        if not self._resolving:
            self._soon()

    def _soon(self) -> None:
        # NIC entities have smaller ids than the solver, so every start of this instant runs
        # before the solver's own events of the instant: one recomputation takes them all.
        self._resolving = True
        q = self._q
        if q:
            # The next multiple of the quantum (now itself if it is one).
            now = self.sim.now
            tb = math.ceil(now / q) * q
            if tb < now:
                tb += q
            self.after(tb - now, self._resolve, None)
        else:
            self.after(0.0, self._resolve, None)

    def _ends(self) -> None:
        """With a rate quantum: the segments due by now end now (their bytes are through at
        their own time); the other flows' rates change only at the next boundary."""
        now = self.sim.now
        # A segment with more to send starts its next segment now, at rate 0 until the boundary.
        self._end_due(now, self._changed)
        self._schedule_wake(now)

    def _end_due(self, now: float, changed: set[int]) -> None:
        """End every segment due by ``now`` (stale entries skipped, early ones put back), in
        the order of (time, flow id)."""
        due = self._due
        # Segments due within a few ulps of now end now: the same instant reached through other
        # roundings (rates set by a local update, or by another component's solve) stays one
        # instant, as it is in exact arithmetic.
        lim = now + now * _END_TOL
        if not due or due[0] > lim:
            return
        pop = heapq.heappop
        ready = []
        while due and due[0] <= lim:
            e = pop(due)
            f = e.f
            if f.entry is not e:
                continue
            fin = f.fin
            if e == fin:
                # Unlinked now, so that flow and entry (a cycle) go by reference counting,
                # not by the cyclic collector, with the message they hold.
                f.entry = None
                ready.append(f)
            else:
                f.due = fin
                e = f.entry = _Due(fin)
                e.f = f
                heapq.heappush(due, e)
        if len(ready) > 1:
            ready.sort(key=_FIN_FID)
        for f in ready:
            self._segment_done(f, changed)

    def _schedule_wake(self, now: float) -> None:
        """A wake-up at the earliest live completion, unless one is already due by then."""
        due = self._due
        wakes = self._wakes
        while wakes and wakes[0] <= now:
            heapq.heappop(wakes)
        while due:
            e = due[0]
            f = e.f
            if f.entry is not e:
                heapq.heappop(due)
            elif e != f.fin:
                fin = f.fin
                f.due = fin
                e = f.entry = _Due(fin)
                e.f = f
                heapq.heapreplace(due, e)
            else:
                break
        if due and (not wakes or wakes[0] > due[0]):
            top = float(due[0])
            # The wake-up's own time, as the kernel computes it: now + (top - now) may fall
            # an ulp short of top, and then that wake-up schedules the next.
            heapq.heappush(wakes, now + (top - now))
            # Entity.after, inline (one wake-up per few segments that end): its event.
            sim = self.sim
            key = self._evkey
            self._evkey = key + 1
            t = sim.now + (top - now)
            e = Event(t)
            e.t = t
            e.key = key
            e.fn = self._wake_fn
            e.data = None
            heapq.heappush(sim._heap, e)

    # -- the recomputation -----------------------------------------------------------------
    def _resolve(self, _: Any) -> None:
        self._resolving = False
        now = self.sim.now
        changed = self._changed
        self._changed = set()
        self._end_due(now, changed)
        starts = self._starts
        if starts:
            self._starts = []
            for d in starts:
                self._start(d, changed)
        if self._locals:
            self._settle(changed, now)
        if changed:
            self._recompute(changed, now)
        self._batch += 1
        self._schedule_wake(now)

    def _start(self, d: tuple, changed: set[int]) -> None:
        msg, dst, route, restricted, sum_lat = d
        st = self._st
        extra = 0.0
        if self._adaptive and not restricted:
            n_on = self._n_on
            r = self._topo.route_adaptive(msg[0], dst, msg[1], n_on.__getitem__)
            if r != route:
                lat = st.lat
                extra = sum(lat[l] for l in r) - sum_lat
                # The NIC counted hop-bytes on its default route (on its own rank).
                js = st.jobs.get(msg[3])
                if js is None:
                    js = st.jobs[msg[3]] = [0.0, 0.0, 0]
                js[1] += msg[2] * (len(r) - len(route))
                route = r
        f = _Flow(self._fid, msg, dst, route, restricted, extra)
        self._fid += 1
        if msg[2] <= 0:
            self._complete(f)
            return
        if not self._free:
            self._grow_rows()
        f.slot = slot = self._free.pop()
        self._row[slot] = f
        self._next_segment(f, changed)

    def _grow_rows(self) -> None:
        n = len(self._row)
        self._routes = np.concatenate([self._routes, np.full_like(self._routes, self._nl)])
        self._ratev = np.concatenate([self._ratev, np.zeros_like(self._ratev)])
        self._row.extend([None] * n)
        self._free.extend(range(2 * n - 1, n - 1, -1))

    def _set_route(self, f: _Flow) -> None:
        r = f.route
        routes = self._routes
        if len(r) > routes.shape[1]:
            pad = np.full((len(routes), len(r) - routes.shape[1]), self._nl, dtype=np.int64)
            routes = self._routes = np.concatenate([routes, pad], axis=1)
        w = routes.shape[1]
        if len(self._pad) != w:
            self._pad = (self._nl,) * w
        routes[f.slot] = r + self._pad[len(r):]  # one assignment of the whole padded row

    def _next_segment(self, f: _Flow, changed: set[int]) -> None:
        size = f.left if f.left <= self._seg else self._seg
        f.left -= size
        f.size = size
        f.rem = float(size)
        f.rate = 0.0
        f.t = self.sim.now
        f.fin = f.due = math.inf
        f.entry = None
        self._set_route(f)
        self._ratev[f.slot] = 0.0
        self._st.flows += 1
        on_link = self._on_link
        batch = self._batch
        n_on = self._n_on
        root = None  # the component the segment joins
        for l in f.route:
            n_on[l] += 1
            s = on_link[l]
            if s is None:
                on_link[l] = {f: None}
                continue
            # The link's flows' component joins f's.
            g = next(iter(s))
            r = g.comp
            if r is not root:
                while r.up is not None:
                    r = r.up
                g.comp = r
                if r is not root:
                    if root is None:
                        root = r
                    else:
                        if len(r.slots) > len(root.slots):
                            r, root = root, r
                        root.slots.update(r.slots)
                        r.up = root
                        if r.dirty:
                            root.dirty = True
                        if r.pend == batch:
                            root.pend = batch
                        if r.fall == batch:
                            root.fall = batch
            s[f] = None
        if root is None:
            root = f.comp = _Comp({f.slot: None})
        else:
            root.slots[f.slot] = None
            f.comp = root
        if not self._loc:
            # One link finds the whole component the segment joins.
            changed.add(f.route[0])
            return
        if root.pend != batch:
            root.pend = batch
            # Its rate without changing any other's, if the flows it joins have max-min fair
            # rates now (no change of theirs waits) and its component is large enough to be
            # worth it. (Local updates are on in the exact mode only, where every start and
            # end happens in _resolve: rates may change at once.)
            if len(root.slots) > _LOCAL_MIN:
                r0 = self._start_rate(f)
                if r0 > 0.0:
                    self._st.local += 1
                    self._set_rates((f,), (r0,), self.sim.now)
                    self._locals.append((root, f.route, True))
                    return
        root.fall = batch
        self._locals.append((root, f.route, True))

    def _segment_done(self, f: _Flow, changed: set[int]) -> None:
        on_link = self._on_link
        n_on = self._n_on
        b = self._st.link_bytes
        size = f.size
        route = f.route
        r = f.comp
        while r.up is not None:
            r = r.up
        # Whether the others' rates stay as they are (only where they are max-min fair now:
        # no change of its component waits).
        batch = self._batch
        fair = self._loc and r.pend != batch  # its rates are max-min fair now
        r.pend = batch
        keep = fair and len(r.slots) > _LOCAL_MIN and self._end_is_local(f)
        rest = []  # the flows left on f's links that others share
        shared = []  # those links
        for l in route:
            b[l] += size
            c = n_on[l] = n_on[l] - 1
            if c:  # its other flows may get new rates
                s = on_link[l]
                del s[f]
                shared.append(l)
                rest.append(s)
            else:
                on_link[l] = None
        if not self._loc:
            changed.update(shared)
        else:
            if keep:
                self._st.local += 1
            else:
                r.fall = batch
            if shared:
                self._locals.append((r, shared, False))
        if not r.dirty:
            # The flows left stay connected when the flow sets of f's links that others share
            # are joined by flows they have in common (a flow connected to f was so through
            # one of those links); else the component may have split: it is walked when next
            # needed.
            if len(rest) > 1:
                first = rest[0].keys()
                for s in rest[1:]:
                    if first.isdisjoint(s):
                        if not _joined(rest):
                            r.dirty = True
                        break
            if not r.dirty:
                del r.slots[f.slot]
        if f.left > 0:
            if self._adaptive and not f.restricted:
                f.route = self._topo.route_adaptive(f.msg[0], f.dst, f.msg[1], n_on.__getitem__)
            self._next_segment(f, changed)
            return
        slot = f.slot
        self._row[slot] = None  # (its row of routes is rewritten when reused; dead rows are not read)
        self._free.append(slot)
        self._complete(f)

    def _end_is_local(self, f: _Flow) -> bool:
        """Whether the rates of the other flows, as they are, are still max-min fair once
        ``f`` (in the link sets yet) has ended, the rates being max-min fair now.

        A feasible allocation in which every flow has a bottleneck (a saturated link on
        which no flow has a higher rate) is the max-min fair one. Without ``f`` every link
        carries less or the same, and only ``f``'s links change; so if each flow sharing a
        link with ``f`` has a bottleneck off ``f``'s route, every flow still has one. Links
        count as saturated, and rates as equal, within ``_SAT`` (above the solver's tie
        margin). False also once the check would read more than ``_SCAN`` flows."""
        route = f.route
        on_link = self._on_link
        capl = self._capl
        budget = _SCAN
        lo = 1.0 - _SAT
        for l in route:
            s = on_link[l]
            if len(s) == 1:
                continue
            for g in s:
                if g is f:
                    continue
                gr = g.rate
                for l2 in g.route:
                    if l2 in route:
                        continue
                    s2 = on_link[l2]
                    budget -= len(s2)
                    if budget < 0:
                        return False
                    # (Exact sums: the same whatever order the flows came in.)
                    rs = [h.rate for h in s2]
                    if fsum(rs) >= capl[l2] * lo and gr >= max(rs) * lo:
                        break  # g's bottleneck, which f's end leaves as it is
                else:
                    return False
        return True

    def _start_rate(self, f: _Flow) -> float:
        """The rate ``f`` (just started, at rate 0) would start at if no other flow's rate
        changed, where that is the max-min fair outcome, else 0.0.

        With every link of ``f`` unsaturated (no flow's bottleneck), ``f`` at the smallest
        residual capacity of its links saturates those at the minimum and no other: every
        other flow keeps its bottleneck, and ``f`` has one if no flow on those links runs
        faster than it. Margins and the budget as in :meth:`_end_is_local`."""
        on_link = self._on_link
        capl = self._capl
        budget = _SCAN
        lo = 1.0 - _SAT
        r = math.inf
        res = []
        for l in f.route:
            s = on_link[l]
            c = capl[l]
            if len(s) == 1:  # f alone
                res.append((c, 0.0))
                if c < r:
                    r = c
                continue
            budget -= len(s)
            if budget < 0:
                return 0.0
            rs = [h.rate for h in s]  # (f's is 0.0)
            load = fsum(rs)
            if load >= c * lo:
                return 0.0  # saturated: its flows may have their bottleneck here
            x = c - load
            res.append((x, max(rs)))
            if x < r:
                r = x
        hi = r * (1.0 + _SAT)
        for x, top in res:
            if x <= hi and top > hi:
                return 0.0
        return r

    def _settle(self, changed: set[int], now: float) -> None:
        """At the end of a batch: the components a start or end could not leave or set by
        itself (a check failed, or a second change came) get new rates for the flows on the
        links their changes loaded or unloaded (:meth:`_solve_near`), where that is the
        max-min fair outcome and at most ``_NEAR_GROUPS`` components changed; or they are
        recomputed whole (their links join ``changed``). Both
        depend only on the batch's final flows and links, not on the order of its changes."""
        batch = self._batch
        groups: dict[_Comp, list[tuple[Any, bool]]] = {}
        for c, links, start in self._locals:
            while c.up is not None:
                c = c.up
            if c.fall == batch:
                g = groups.get(c)
                if g is None:
                    g = groups[c] = []
                g.append((links, start))
        self._locals = []
        if len(groups) > _NEAR_GROUPS:
            # Several components changed at one instant (an all-to-all's step ending in
            # several at once): one vectorised recomputation takes them all, for about what
            # one region solve costs in Python.
            for g in groups.values():
                self._recompute_changes(g, changed)
            return
        # The largest region worth solving on its own grows with the flows in flight (a
        # count that does not depend on the order of the batch's changes): a component's
        # recomputation grows with them too.
        limit = max(_NEAR, (len(self._row) - len(self._free)) // _NEAR_SHARE)
        for c, g in groups.items():
            seeds = sorted({l for links, _ in g for l in links})
            size = len(c.slots)
            # A region solved in Python pays only while it is a small part of its component,
            # whose recomputation is vectorised.
            if size > _LOCAL_MIN and self._solve_near(seeds, now, min(limit, size // _NEAR_PART)):
                self._st.local += 1
                continue
            self._recompute_changes(g, changed)

    @staticmethod
    def _recompute_changes(g: list[tuple[Any, bool]], changed: set[int]) -> None:
        """Send a component's starts and ends ``g`` to the recomputation: one link finds a
        start's component, and each of an end's links the parts of one it may have split."""
        for links, start in g:
            if start:
                changed.add(links[0])
            else:
                changed.update(links)

    def _solve_near(self, seeds: Any, now: float, limit: int) -> bool:
        """New rates for the flows on the links ``seeds`` alone (the region), every other
        flow's rate fixed, where they are the max-min fair rates of all flows: then they are
        set and True is returned; False (nothing changed): the component must be recomputed.
        Where the region alone is not enough, it is tried again with the flows on all its
        flows' links (one ring wider), up to ``_RINGS`` rings and ``limit`` flows.
        """
        for _ in range(_RINGS):
            got = self._near(seeds, now, limit)
            if got is True:
                return True
            if got is None or len(got) == len(seeds):
                return False
            seeds = got
        return False

    def _near(self, seeds: Any, now: float, limit: int) -> bool | list[int] | None:
        """One try of :meth:`_solve_near` over the flows on ``seeds``: True (solved and
        set), the sorted links of the region's flows (not solved: the next ring's seeds), or
        None (too large: give up).

        The region is solved by :func:`~.maxmin.maxmin_local` over its links' capacities
        less the other flows' rates. That is feasible; it is the max-min fair allocation if
        every flow has a bottleneck (see :meth:`_end_is_local`), which only the flows on the
        region's links (its own and those beside it) may have lost: each is checked with the
        new rates. Regions of more than ``limit`` flows, or checks that would read more than
        ``_SCAN_NEAR`` flows per ``_NEAR`` of the limit, give up (None)."""
        on_link = self._on_link
        capl = self._capl
        # In an order of their own (flow ids, link ids, exact sums), so that the rates do
        # not depend on the order in which the flows came.
        found: set[_Flow] = set()
        for l in seeds:
            s = on_link[l]
            if s:
                found.update(s)
        if not found or len(found) > limit:
            return None
        fl = sorted(found, key=_FID)
        region = {g: i for i, g in enumerate(fl)}
        links = sorted({l for g in fl for l in g.route})
        num = {l: i for i, l in enumerate(links)}
        routes = [[num[l] for l in g.route] for g in fl]
        n = [0] * len(num)
        rc = [0.0] * len(num)
        budget = _SCAN_NEAR * limit // _NEAR
        beside: set[_Flow] = set()  # flows on the region's links, not in it
        for l, i in num.items():
            s = on_link[l]
            budget -= len(s)
            if budget < 0:
                return None
            out = [h for h in s if h not in region]
            n[i] = len(s) - len(out)
            beside.update(out)
            x = capl[l] - fsum([h.rate for h in out])
            if not x > capl[l] * _SAT:
                return links  # full without the region: the others' rates must change
            rc[i] = x
        new = maxmin_local(routes, n, rc)
        lo = 1.0 - _SAT

        def rate(h: _Flow) -> float:
            i = region.get(h)
            return h.rate if i is None else new[i]

        for g in (*fl, *beside):
            gr = rate(g)
            for l in g.route:
                s = on_link[l]
                budget -= len(s)
                if budget < 0:
                    return None
                rs = [rate(h) for h in s]
                if fsum(rs) >= capl[l] * lo and gr >= max(rs) * lo:
                    break  # g's bottleneck
            else:
                return links
        self._set_rates(fl, new, now)
        return True

    def _complete(self, f: _Flow) -> None:
        msg = f.msg
        la = self.sim.lookahead
        d = self._o_r + f.extra
        self.send(self._st.dst_eid[f.route[-1]], "_deliver", msg, d if d >= la else la)
        if msg[5]:
            self.send(self._node_off + msg[0], "_sent", msg, la)

    def _recompute(self, changed: set[int], now: float) -> None:
        """New rates for every flow connected to ``changed`` links through shared links:
        each connected component of them solved on its own: one of at most ``_SMALL`` flows
        in plain Python, the larger ones together in one vectorised pass; with ``_BATCH``
        changed links or more, see :meth:`_recompute_batched`.

        A component whose :class:`_Comp` is not dirty is taken from it (no walk): its
        problem built from the flows' rows of routes (:meth:`_problems`) where it has more
        than ``_SMALL`` flows, else from its flows (:meth:`_gather`; a flow alone gets its
        narrowest link's capacity). The others are walked, and a walk of a dirty one gives
        its flows a new :class:`_Comp`, so that the next recomputation need not walk them."""
        if len(changed) >= _BATCH:
            self._recompute_batched(changed, now)
            return
        on_link = self._on_link
        st = self._st
        base = self._stamp + 1  # flows and components stamped from here on are found already
        sl: list[int] = []  # the rows of the larger components' flows, component after component
        sizes: list[int] = []  # flows per larger component
        big: list[np.ndarray] = []
        small = _SMALL
        touched = 0
        top = st.touched_max
        n_comp = 0
        for seed in sorted(changed):
            s = on_link[seed]
            if not s:
                continue
            g = next(iter(s))
            if g.mark >= base:
                continue
            r = g.comp
            while r.up is not None:
                r = r.up
            g.comp = r
            if r.stamp >= base:
                continue
            if not r.dirty:  # its flows are those connected to the seed: no walk
                n = len(r.slots)
                if n > small:
                    sl += r.slots
                    sizes.append(n)
                elif n == 1:
                    # Alone, a flow's rate is its narrowest link's capacity (as _solve_small).
                    f = self._row[next(iter(r.slots))]
                    self._set_rates((f,), (min(map(self._capl.__getitem__, f.route)),), now)
                else:
                    self._solve_small(self._gather(r.slots), now)
                r.stamp = self._stamp = self._stamp + 1
                n_comp += 1
                touched += n
                if n > top:
                    top = n
                continue
            got = self._walk(seed)
            stamp = self._stamp
            if got is None:
                # Too large to walk: numpy sweeps find it whole.
                rows = self._sweep(seed)
                big.append(rows)
                row = self._row
                fl = [row[i] for i in rows.tolist()]
                for f in fl:
                    f.mark = stamp
            else:
                fl = got[0]
            # The dirty component, found whole: its own _Comp, not dirty.
            comp = _Comp(dict.fromkeys([f.slot for f in fl]))
            comp.stamp = stamp
            for f in fl:
                f.comp = comp
            n = len(fl)
            if got is not None:
                if n <= small:
                    self._solve_small(got, now)
                else:
                    sl += comp.slots
                    sizes.append(n)
            n_comp += 1
            touched += n
            if n > top:
                top = n
        st.touched += touched
        st.touched_max = top
        st.recomputes += n_comp
        if sl:
            self._solve_rows(sl, sizes, now)
        if big:
            self._recompute_big(big, now)

    def _recompute_batched(self, changed: set[int], now: float) -> None:
        """:meth:`_recompute` when many links changed (as at every boundary of a rate
        quantum): each component's flows, from its :class:`_Comp` where no flow left it
        since it was last found (no walk), else by a walk that only finds them (each link
        marked once, the links of a single flow not followed), then the problems of all the
        components built together from the flows' rows of routes (:meth:`_problems`) and
        solved by one :func:`~.maxmin.maxmin_rates` pass, labelled by component (each at its
        own pace, so the rates of solving them one by one, bit for bit). Components above
        ``_WALK`` flows are left to numpy sweeps."""
        on_link = self._on_link
        n_on = self._n_on
        lmark = self._lmark
        st = self._st
        # One stamp for the whole recomputation: components are disjoint, so a walk never
        # meets a flow or link of an earlier one.
        stamp = self._stamp = self._stamp + 1
        sl: list[int] = []  # the rows of the flows taken, component after component
        sizes: list[int] = []  # flows per component taken
        big: list[np.ndarray] = []
        touched = 0
        top = st.touched_max
        lim = _WALK
        for seed in sorted(changed):
            s = on_link[seed]
            if not s:
                continue
            g = next(iter(s))
            if g.mark == stamp:
                continue
            r = g.comp
            while r.up is not None:
                r = r.up
            g.comp = r
            if not r.dirty:  # its flows are those connected to the seed: no walk
                if r.stamp == stamp:
                    continue
                r.stamp = stamp
                n = len(r.slots)
                if n > lim:
                    big.append(np.fromiter(r.slots, dtype=np.int64, count=n))
                else:
                    sl += r.slots
                    sizes.append(n)
            else:
                comp = _Comp({})  # the component walked (its slots are set below)
                comp.stamp = stamp
                fl = []
                lmark[seed] = stamp
                stack = [s]
                while stack:
                    for f in stack.pop():
                        if f.mark != stamp:
                            f.mark = stamp
                            f.comp = comp
                            fl.append(f)
                            for l in f.route:
                                if lmark[l] != stamp:
                                    lmark[l] = stamp
                                    if n_on[l] > 1:  # (a private link has only f)
                                        stack.append(on_link[l])
                    if len(fl) > lim:
                        break
                else:
                    comp.slots = dict.fromkeys([f.slot for f in fl])
                    sl += comp.slots
                    n = len(fl)
                    sizes.append(n)
                    touched += n
                    if n > top:
                        top = n
                    continue
                # Too large to walk: numpy sweeps find it whole.
                rows = self._sweep(seed)
                big.append(rows)
                comp.slots = dict.fromkeys(rows.tolist())
                row = self._row
                for i in comp.slots:
                    f = row[i]
                    f.mark = stamp
                    f.comp = comp
                n = len(rows)
            touched += n
            if n > top:
                top = n
        st.touched += touched
        st.touched_max = top
        st.recomputes += len(sizes) + len(big)
        if sl:
            self._solve_rows(sl, sizes, now)
        if big:
            self._recompute_big(big, now)

    def _solve_rows(self, sl: list[int], sizes: list[int], now: float) -> None:
        """New rates for whole components given by their flows' rows (``sl``, component
        after component, ``sizes`` flows each): their problems built together by
        :meth:`_problems` and solved by one :func:`~.maxmin.maxmin_incidence` pass, labelled
        by component (the rates of solving them one by one, bit for bit)."""
        idx = np.array(sl, dtype=np.int64)
        label = np.repeat(np.arange(len(sizes)), sizes)
        rates = maxmin_incidence(len(idx), *self._problems(idx), label)
        # Only the flows whose rate moved (often under half) go through _set_rates.
        ratev = self._ratev
        moved = np.flatnonzero(rates != ratev[idx])
        if len(moved):
            row = self._row
            rows = idx[moved]
            new = rates[moved]
            ratev[rows] = new
            self._set_rates([row[i] for i in rows.tolist()], new.tolist(), now, False)

    def _problems(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The problem that :meth:`_walk` builds, for whole components (their flows' rows,
        ``rows``) at once, from their rows of routes: the incidence (owner, idx) over link
        numbers of this call and the links' capacities, for
        :func:`~.maxmin.maxmin_incidence`. As in the walk, a flow crosses its shared links
        and, unless one of them is narrower by more than ``_MARGIN``, its narrowest private
        link, a link of its own (a component holds every flow on its links, so a link's
        count among the rows is its count in the network)."""
        nl = self._nl
        sub = self._routes[rows]
        real = sub < nl  # (the rest is padding)
        lk = sub[real]  # the flows' links, flow after flow
        per = np.count_nonzero(real, axis=1)
        start = np.zeros(len(rows), dtype=np.int64)
        np.cumsum(per[:-1], out=start[1:])
        cnt = np.bincount(lk, minlength=nl)
        shared = cnt[lk] > 1
        capm = self._cap[lk]
        inf = math.inf
        pc = np.minimum.reduceat(np.where(shared, inf, capm), start)
        sc = np.minimum.reduceat(np.where(shared, capm, inf), start)
        keep = np.flatnonzero(pc <= sc * (1.0 + _MARGIN))
        links = np.flatnonzero(cnt > 1)
        k = len(links)
        local = self._local
        local[links] = np.arange(k)
        owner = np.concatenate([np.repeat(np.arange(len(rows)), per)[shared], keep])
        idx = np.concatenate([local[lk[shared]], np.arange(k, k + len(keep))])
        return owner, idx, np.concatenate([self._cap[links], pc[keep]])

    def _solve_small(self, got: tuple, now: float) -> None:
        """New rates for one component of at most ``_SMALL`` flows, found by :meth:`_walk`,
        by :func:`~.maxmin.maxmin_local` (the rates of :func:`~.maxmin.maxmin_rates`, bit for
        bit, without numpy's cost per call, which dominates for a few flows)."""
        fl, routes, cnt, rc = got
        # Alone, a flow's rate is its narrowest link's capacity (one filling step from 0.0).
        self._set_rates(fl, [min(rc)] if len(fl) == 1 else maxmin_local(routes, cnt, rc), now)

    def _set_rates(self, fl: list[_Flow], rates: list[float], now: float, track: bool = True) -> None:
        """Give the flows their new rates: the bytes sent at the old rate since its last
        change counted, and a due entry for the new finish where it is sooner than the
        flow's entry. ``track``: also write the rates to ``_ratev`` (False: the caller did,
        for all at once)."""
        due = self._due
        push = heapq.heappush
        ratev = self._ratev
        for f, r in zip(fl, rates):
            old = f.rate
            if r == old:  # its completion entry still holds
                continue
            rem = f.rem - old * (now - f.t)
            if rem < 0.0:
                rem = 0.0
            f.rem = rem
            f.t = now
            f.rate = r
            if track:
                ratev[f.slot] = r
            fin = f.fin = now + rem / r
            if fin < f.due:
                f.due = fin
                e = f.entry = _Due(fin)
                e.f = f
                push(due, e)

    def _recompute_big(self, comps: list[np.ndarray], now: float) -> None:
        """:meth:`_recompute` for the larger components: one vectorised pass over all."""
        label = np.full(len(self._row), -1, dtype=np.int64)  # component of each row, -1: untouched
        for i, rows in enumerate(comps):
            label[rows] = i
        sel = np.flatnonzero(label >= 0)
        row = self._row
        fl = [row[i] for i in sel.tolist()]
        sub = self._routes[sel]
        real = sub < self._nl
        ptr = np.zeros(len(sel) + 1, dtype=np.int64)
        np.cumsum(real.sum(axis=1), out=ptr[1:])
        uniq, inv = np.unique(sub[real], return_inverse=True)
        rate = maxmin_rates(ptr, inv.astype(np.int64, copy=False), self._cap[uniq], label[sel])
        old = np.array([f.rate for f in fl])
        moved = rate != old  # the others' completion entries still hold
        if not moved.any():
            return
        self._ratev[sel[moved]] = rate[moved]
        idx = np.flatnonzero(moved).tolist()
        mf = [fl[i] for i in idx]
        r = rate[moved]
        rem = np.array([f.rem for f in mf]) - old[moved] * (now - np.array([f.t for f in mf]))
        np.maximum(rem, 0.0, out=rem)
        finish = now + rem / r
        due = self._due
        push = heapq.heappush
        for f, fin, x, rm in zip(mf, finish.tolist(), r.tolist(), rem.tolist()):
            f.rem = rm
            f.t = now
            f.rate = x
            f.fin = fin
            if fin < f.due:
                f.due = fin
                e = f.entry = _Due(fin)
                e.f = f
                push(due, e)

    def _walk(self, seed: int) -> tuple[list[_Flow], list[list[int]], list[int], list[float]] | None:
        """The flows connected to link ``seed`` through shared links, found by a walk over
        the link sets (they get the walk's stamp), with the problem that
        :func:`~.maxmin.maxmin_local` solves for them: the flows' routes over local link
        numbers, the number of flows on each link and its capacity; None once the flows are
        more than ``_WALK``.

        A link only one flow crosses (a private link) is left out of the problem when it
        cannot change the rates: all but the narrowest of a flow's private links (same flow
        set, more capacity: its share never falls below the narrowest's), and that one too
        when one of the flow's shared links is narrower by more than ``_MARGIN`` (its share
        then stays above every filling level the flow sees, by more than the tie margin and
        any rounding). The rates are those of the whole problem, bit for bit."""
        on_link = self._on_link
        n_on = self._n_on
        lmark = self._lmark
        lidx = self._lidx
        cap = self._capl
        stamp = self._stamp = self._stamp + 1
        limit = _WALK
        margin = 1.0 + _MARGIN
        c = n_on[seed]
        if c > 1:
            lmark[seed] = stamp
            lidx[seed] = 0
            cnt = [c]
            rc = [cap[seed]]
        else:  # a private seed is found again on its flow's route
            cnt = []
            rc = []
        stack = [on_link[seed]]
        got: list[_Flow] = []
        routes: list[list[int]] = []
        inf = math.inf
        while stack:
            for f in stack.pop():
                if f.mark == stamp:
                    continue
                f.mark = stamp
                got.append(f)
                lr = []
                pc = sc = inf
                for l in f.route:
                    c = n_on[l]
                    if c == 1:
                        c = cap[l]
                        if c < pc:
                            pc = c
                        continue
                    if lmark[l] == stamp:
                        lr.append(lidx[l])
                    else:
                        lmark[l] = stamp
                        lidx[l] = len(cnt)
                        lr.append(len(cnt))
                        cnt.append(c)
                        rc.append(cap[l])
                        stack.append(on_link[l])
                    c = cap[l]
                    if c < sc:
                        sc = c
                if pc <= sc * margin:
                    lr.append(len(cnt))
                    cnt.append(1)
                    rc.append(pc)
                routes.append(lr)
            if len(got) > limit:
                return None
        return got, routes, cnt, rc

    def _gather(self, slots: dict[int, None]) -> tuple[list[_Flow], list[list[int]], list[int], list[float]]:
        """The problem that :meth:`_walk` builds, for a component kept whole (its flows'
        rows, ``slots``), without the walk: the same links left out, in another order (the
        rates do not depend on it)."""
        # The per-flow loop is the walk's, without its pushes onto the walk's stack: kept
        # inline in both, as a shared helper would add a call per flow on the hot path.
        row = self._row
        n_on = self._n_on
        lmark = self._lmark
        lidx = self._lidx
        cap = self._capl
        stamp = self._stamp = self._stamp + 1
        margin = 1.0 + _MARGIN
        cnt: list[int] = []
        rc: list[float] = []
        fl: list[_Flow] = []
        routes: list[list[int]] = []
        inf = math.inf
        for i in slots:
            f = row[i]
            fl.append(f)
            lr = []
            pc = sc = inf
            for l in f.route:
                c = n_on[l]
                if c == 1:
                    c = cap[l]
                    if c < pc:
                        pc = c
                    continue
                if lmark[l] == stamp:
                    lr.append(lidx[l])
                else:
                    lmark[l] = stamp
                    lidx[l] = len(cnt)
                    lr.append(len(cnt))
                    cnt.append(c)
                    rc.append(cap[l])
                c = cap[l]
                if c < sc:
                    sc = c
            if pc <= sc * margin:
                lr.append(len(cnt))
                cnt.append(1)
                rc.append(pc)
            routes.append(lr)
        return fl, routes, cnt, rc

    def _sweep(self, seed: int) -> np.ndarray:
        """``_component`` by sweeps: mark the flows on marked links, then their links, until
        nothing new is marked."""
        routes = self._routes
        alive = np.flatnonzero(np.fromiter(map(is_not, self._row, repeat(None)), dtype=bool, count=len(self._row)))
        sub = routes[alive]
        mark = np.zeros(self._nl + 1, dtype=bool)
        mark[seed] = True
        n_marked = 1
        while True:
            hit = mark[sub].any(axis=1)
            mark[sub[hit]] = True
            mark[self._nl] = False
            n = int(np.count_nonzero(mark))
            if n == n_marked:
                return alive[hit]
            n_marked = n


def _joined(sets: list[dict]) -> bool:
    """Whether the flow sets are all connected through flows that two of them share."""
    todo = [sets[0].keys()]
    rest = sets[1:]
    while todo:
        a = todo.pop()
        left = []
        for s in rest:
            if a.isdisjoint(s):
                left.append(s)
            else:
                todo.append(s.keys())
        if not left:
            return True
        rest = left
    return False


_FIN_FID = attrgetter("fin", "fid")
_FID = attrgetter("fid")

#: Largest component found by walking the link sets before switching to numpy sweeps.
_WALK = 128
#: A private link is left out of a component's problem when it is wider than one of its flow's
#: shared links by more than this fraction (far above the tie margin and rounding).
_MARGIN = 1e-6
#: Fewest changed links of one recomputation (about three flows walked each) whose
#: components are solved together by ``maxmin_rates`` (numpy, one pass over all) rather than
#: one by one by ``maxmin_local``.
_BATCH = 128
#: The checks of starts and ends that change no other rate (FlowSolver._end_is_local): links
#: count as saturated, and rates as the same, within this relative margin (above the
#: solver's tie margin, maxmin._TIE), and a check reads at most ``_SCAN`` flows.
_SAT = 1e-8
_SCAN = 512
#: Largest region FlowSolver._solve_near solves on its own, the most flows it reads per region
#: of that size, and the most rings it tries (on fattree44's 1,024-rank stencil3d: 1 ring
#: 3.98 s, 2 rings 2.84 s, 3 rings 2.21 s, 5 rings 2.17 s; regions of 1,024 flows 2.7 s)...
_NEAR = 256
_SCAN_NEAR = 16384
_RINGS = 3
#: ... or, with many flows in flight, up to this fraction of them (Zhou's 4K halo, one
#: iteration: 25.9 s with regions of at most 256 flows, 18.8 s with 2,048; at 1K, regions over
#: 256 flows cost more than they save).
_NEAR_SHARE = 16
#: ... and at most this fraction of its component's flows. One iteration of the all-to-all on
#: Zhou's 1K torus (components of 64-1,024 flows), alternated: 48.0-51.4 s with the whole
#: component allowed, 48.8-55.8 s with half, 43.4-44.4 s with a quarter (without local updates
#: 42.0 s); with an eighth or less, the 1,024-rank Mira halo of bench_apps took 1.88 s against
#: 1.58-1.73 s.
_NEAR_PART = 4
#: ... and only where at most this many components changed at one instant: more are
#: recomputed together. One iteration of the all-to-all on Zhou's 1K torus, whose steps end
#: in 2-8 components at once: 48.2 s with region solves there, 41.3 s without (on the 2K
#: torus 452.9 s and 335.3 s, as without any local updates: 334.5 s); halos on fattree44 and
#: Zhou's 1K torus, where one component changes at a time, unchanged; the Mira halo of
#: bench_apps, whose instants change 8 components of 256-512 flows, 1.50 -> 1.74 s.
_NEAR_GROUPS = 1
#: Segments due at most this far after now (relative) end now: a few ulps, far below any
#: latency (1e-12 of 1 s is 1 ps).
_END_TOL = 1e-12
#: Components of at most this many flows are recomputed, never updated locally: their
#: recomputation costs less than the checks.
_LOCAL_MIN = 64
#: Largest component solved by ``maxmin_local`` (Python floats) rather than ``maxmin_rates``
#: (numpy): about where the two cost the same.
_SMALL = 32



__all__ = ["FlowSolver", "SOLVER_TYPE"]
