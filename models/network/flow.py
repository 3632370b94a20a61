"""The flow model's solver: every message a flow on its route, rates shared max-min fairly.

One :class:`FlowSolver` entity (on rank 0) holds every flow in the network. A NIC sends it a
flow start after the send overhead and the route's latency, ``o_s + sum(L)`` (the latency is
paid up front); the flow then transfers its bytes at its max-min fair rate over the
capacities of its route's links, the NIC's injection and ejection links included. When flows
start or end, only the flows connected to them through shared links (their connected
component in the link-flow graph) get new rates, computed by :func:`~.maxmin.maxmin_rates`
over a CSR incidence; all starts and ends of one instant are handled in one recomputation.
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
from typing import TYPE_CHECKING, Any

import numpy as np

from pdes import Entity

from .maxmin import maxmin_rates, maxmin_small

if TYPE_CHECKING:  # pragma: no cover
    from .network import Network

#: Entity type name of the flow solver.
SOLVER_TYPE = "flow_solver"


class _Flow:
    """One message in flight: its current segment's route and bytes. Its rate, the bytes
    still to go and its version live in the solver's arrays, at row ``slot``."""

    __slots__ = ("fid", "slot", "msg", "dst", "route", "restricted", "extra", "size", "left")

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


class FlowSolver(Entity):
    """Holds the network's flows and their max-min fair rates (see the module docstring)."""

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
        self._changed: set[int] = set()  # links whose flows' rates wait for the next boundary
        self._on_link: dict[int, set[int]] = {}
        self._flows: dict[int, _Flow] = {}
        self._fid = 0
        self._starts: list[tuple] = []
        self._resolving = False
        self._due: list[tuple[float, int, int]] = []  # (finish, fid, version)
        self._wakes: list[float] = []  # times of the wake-ups already scheduled
        # The flows in flight as rows of arrays, so that a recomputation gathers its
        # components, their incidence and their new rates with numpy. A row's route is padded
        # with the sentinel link ``n_links`` (never carrying a flow); free rows are reused
        # last-freed first.
        self._nl = len(self._cap)
        self._routes = np.full((64, 8), self._nl, dtype=np.int64)
        self._rate = np.zeros(64)
        self._rem = np.zeros(64)  # bytes of the current segment still to go, as of _t
        self._t = np.zeros(64)
        self._ver = np.zeros(64, dtype=np.int64)  # bumped on every rate change: older due entries are stale
        self._fid_of = np.full(64, -1, dtype=np.int64)
        self._alive = np.zeros(64, dtype=bool)
        self._free = list(range(63, -1, -1))

    # -- services ----------------------------------------------------------------------------
    def flow_start(self, d: tuple) -> None:
        """A message's latency has elapsed: its first byte may flow now."""
        self._starts.append(d)
        self._soon()

    def _wake(self, _: Any) -> None:
        if self._q:
            self._ends()
        self._soon()

    def _soon(self) -> None:
        # NIC entities have smaller ids than the solver, so every start of this instant runs
        # before the solver's own events of the instant: one recomputation takes them all.
        if not self._resolving:
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
        """End every segment due by ``now`` (entries made stale by a rate change skipped)."""
        due = self._due
        flows = self._flows
        while due and due[0][0] <= now:
            _, fid, ver = heapq.heappop(due)
            f = flows.get(fid)
            if f is None or self._ver[f.slot] != ver:
                continue
            self._segment_done(f, changed)

    def _schedule_wake(self, now: float) -> None:
        """A wake-up at the earliest live completion, unless one is already due by then."""
        due = self._due
        flows = self._flows
        vers = self._ver
        wakes = self._wakes
        while wakes and wakes[0] <= now:
            heapq.heappop(wakes)
        while due and (flows.get(due[0][1]) is None or vers[flows[due[0][1]].slot] != due[0][2]):
            heapq.heappop(due)
        if due and (not wakes or wakes[0] > due[0][0]):
            top = due[0][0]
            # The wake-up's own time, as the kernel computes it: now + (top - now) may fall
            # an ulp short of top, and then that wake-up schedules the next.
            heapq.heappush(wakes, now + (top - now))
            self.after(top - now, self._wake, None)

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
        if changed:
            self._recompute(changed, now)
        self._schedule_wake(now)

    def _start(self, d: tuple, changed: set[int]) -> None:
        msg, dst, route, restricted, sum_lat = d
        st = self._st
        extra = 0.0
        if self._adaptive and not restricted:
            on_link = self._on_link
            r = self._topo.route_adaptive(msg[0], dst, msg[1], lambda l: len(on_link.get(l, ())))
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
        self._flows[f.fid] = f
        if not self._free:
            self._grow_rows()
        f.slot = slot = self._free.pop()
        self._fid_of[slot] = f.fid
        self._alive[slot] = True
        self._next_segment(f, changed)

    def _grow_rows(self) -> None:
        n = len(self._rate)
        self._routes = np.concatenate([self._routes, np.full_like(self._routes, self._nl)])
        for name in ("_rate", "_rem", "_t", "_ver", "_fid_of", "_alive"):
            a = getattr(self, name)
            setattr(self, name, np.concatenate([a, np.zeros_like(a)]))
        self._fid_of[n:] = -1
        self._free.extend(range(2 * n - 1, n - 1, -1))

    def _set_route(self, f: _Flow) -> None:
        r = f.route
        routes = self._routes
        if len(r) > routes.shape[1]:
            pad = np.full((len(routes), len(r) - routes.shape[1]), self._nl, dtype=np.int64)
            routes = self._routes = np.concatenate([routes, pad], axis=1)
        row = routes[f.slot]
        row[:] = self._nl
        row[:len(r)] = r

    def _next_segment(self, f: _Flow, changed: set[int]) -> None:
        size = f.left if f.left <= self._seg else self._seg
        f.left -= size
        f.size = size
        slot = f.slot
        self._rem[slot] = float(size)
        self._rate[slot] = 0.0
        self._t[slot] = self.sim.now
        self._ver[slot] += 1
        self._set_route(f)
        self._st.flows += 1
        on_link = self._on_link
        for l in f.route:
            s = on_link.get(l)
            if s is None:
                on_link[l] = {f.fid}
            else:
                s.add(f.fid)
        changed.update(f.route)

    def _segment_done(self, f: _Flow, changed: set[int]) -> None:
        st = self._st
        on_link = self._on_link
        b = st.link_bytes
        for l in f.route:
            b[l] += f.size
            s = on_link[l]
            s.discard(f.fid)
            if not s:
                del on_link[l]
        changed.update(f.route)
        if f.left > 0:
            if self._adaptive and not f.restricted:
                f.route = self._topo.route_adaptive(f.msg[0], f.dst, f.msg[1], lambda l: len(on_link.get(l, ())))
            self._next_segment(f, changed)
            return
        del self._flows[f.fid]
        slot = f.slot
        self._alive[slot] = False
        self._fid_of[slot] = -1
        self._routes[slot] = self._nl
        self._free.append(slot)
        self._complete(f)

    def _complete(self, f: _Flow) -> None:
        msg = f.msg
        la = self.sim.lookahead
        d = self._o_r + f.extra
        self.send(self._st.dst_eid[f.route[-1]], "flow_in", msg, d if d >= la else la)
        if msg[5]:
            self.send(self._node_off + msg[0], "flow_sent", msg, la)

    def _recompute(self, changed: set[int], now: float) -> None:
        """New rates for every flow connected to ``changed`` links through shared links:
        each connected component of them solved on its own: one of at most ``_SMALL`` flows
        in plain Python, the larger ones together in one vectorised pass."""
        on_link = self._on_link
        flows = self._flows
        st = self._st
        seen: set[int] = set()
        small: list[list[int]] = []
        big: list[np.ndarray] = []
        for seed in sorted(changed):
            s = on_link.get(seed)
            if s is None or next(iter(s)) in seen:
                continue
            got = self._walk(seed)
            if got is None:
                rows = self._sweep(seed)
                big.append(rows)
                seen.update(self._fid_of[rows].tolist())
                n = len(rows)
            else:
                seen.update(got)
                n = len(got)
                if n <= _SMALL:
                    small.append(got)
                else:
                    big.append(np.fromiter((flows[f].slot for f in got), dtype=np.int64, count=n))
            st.touched += n
            if n > st.touched_max:
                st.touched_max = n
        st.recomputes += len(small) + len(big)
        if small:
            self._recompute_small(small, now)
        if big:
            self._recompute_big(big, now)

    def _recompute_small(self, comps: list[list[int]], now: float) -> None:
        """:meth:`_recompute` for components of at most ``_SMALL`` flows, one by one, by
        :func:`~.maxmin.maxmin_small` (the rates of :func:`~.maxmin.maxmin_rates`, bit for
        bit, without numpy's cost per call, which dominates for a few flows)."""
        flows = self._flows
        cap = self._capl
        rate_a, rem_a, t_a, ver_a = self._rate, self._rem, self._t, self._ver
        due = self._due
        push = heapq.heappush
        for fids in comps:
            rate = maxmin_small([flows[f].route for f in fids], cap)
            for fid, r in zip(fids, rate):
                slot = flows[fid].slot
                old = float(rate_a[slot])
                if r == old:  # its completion entry still holds
                    continue
                rem = float(rem_a[slot]) - old * (now - float(t_a[slot]))
                if rem < 0.0:
                    rem = 0.0
                rem_a[slot] = rem
                t_a[slot] = now
                rate_a[slot] = r
                ver = int(ver_a[slot]) + 1
                ver_a[slot] = ver
                push(due, (now + rem / r, fid, ver))

    def _recompute_big(self, comps: list[np.ndarray], now: float) -> None:
        """:meth:`_recompute` for the larger components: one vectorised pass over all."""
        label = np.full(len(self._rate), -1, dtype=np.int64)  # component of each row, -1: untouched
        for i, rows in enumerate(comps):
            label[rows] = i
        sel = np.flatnonzero(label >= 0)
        sub = self._routes[sel]
        real = sub < self._nl
        ptr = np.zeros(len(sel) + 1, dtype=np.int64)
        np.cumsum(real.sum(axis=1), out=ptr[1:])
        uniq, inv = np.unique(sub[real], return_inverse=True)
        rate = maxmin_rates(ptr, inv.astype(np.int64, copy=False), self._cap[uniq], label[sel])
        old = self._rate[sel]
        moved = rate != old  # the others' completion entries still hold
        if not moved.any():
            return
        rows = sel[moved]
        r = rate[moved]
        rem = self._rem[rows] - old[moved] * (now - self._t[rows])
        np.maximum(rem, 0.0, out=rem)
        self._rem[rows] = rem
        self._t[rows] = now
        self._rate[rows] = r
        self._ver[rows] += 1
        finish = now + rem / r
        due = self._due
        push = heapq.heappush
        for t, fid, ver in zip(finish.tolist(), self._fid_of[rows].tolist(), self._ver[rows].tolist()):
            push(due, (t, fid, ver))

    def _walk(self, seed: int) -> list[int] | None:
        """The flows connected to link ``seed`` through shared links, found by a walk over
        the link sets, in the order found; None once they are more than ``_WALK``."""
        on_link = self._on_link
        flows = self._flows
        seen = {seed}
        stack = [seed]
        got: list[int] = []
        have: set[int] = set()
        while stack:
            for fid in on_link[stack.pop()]:
                if fid not in have:
                    have.add(fid)
                    got.append(fid)
                    for l in flows[fid].route:
                        if l not in seen:
                            seen.add(l)
                            stack.append(l)
            if len(got) > _WALK:
                return None
        return got

    def _sweep(self, seed: int) -> np.ndarray:
        """``_component`` by sweeps: mark the flows on marked links, then their links, until
        nothing new is marked."""
        routes = self._routes
        alive = np.flatnonzero(self._alive)
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


#: Largest component found by walking the link sets before switching to numpy sweeps.
_WALK = 64
#: Largest component solved by ``maxmin_small`` (Python floats) rather than ``maxmin_rates``
#: (numpy): about where the two cost the same.
_SMALL = 32


__all__ = ["FlowSolver", "SOLVER_TYPE"]
