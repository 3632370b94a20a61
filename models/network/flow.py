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
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from pdes import Entity

from .maxmin import maxmin_rates

if TYPE_CHECKING:  # pragma: no cover
    from .network import Network

#: Entity type name of the flow solver.
SOLVER_TYPE = "flow_solver"


class _Flow:
    """One message in flight: its current segment's route, bytes and rate."""

    __slots__ = ("fid", "msg", "dst", "route", "restricted", "extra", "size", "left", "rem", "rate", "t", "ver")

    def __init__(self, fid: int, msg: tuple, dst: int, route: tuple, restricted: bool, extra: float):
        self.fid = fid
        self.msg = msg
        self.dst = dst
        self.route = route
        self.restricted = restricted
        self.extra = extra  # latency of the chosen route beyond the one the NIC paid
        self.size = 0  # bytes of the current segment
        self.left = msg[2]  # bytes not yet in a segment
        self.rem = 0.0  # bytes of the current segment still to go, as of time t
        self.rate = 0.0
        self.t = 0.0
        self.ver = 0  # bumped on every rate change: older completion entries are stale


class FlowSolver(Entity):
    """Holds the network's flows and their max-min fair rates (see the module docstring)."""

    def __init__(self, net: "Network"):
        self.net = net
        st = self._st = net.state
        topo = net.topology
        self._topo = topo
        self._cap = np.asarray(topo.link_bw, dtype=np.float64)
        self._node_off = net.node_offset
        seg = net.config.flow_segment
        self._seg = math.inf if seg is None else seg
        self._adaptive = topo.is_adaptive
        self._o_r = st.o_r
        self._on_link: dict[int, set[int]] = {}
        self._flows: dict[int, _Flow] = {}
        self._fid = 0
        self._starts: list[tuple] = []
        self._resolving = False
        self._due: list[tuple[float, int, int]] = []  # (finish, fid, version)
        self._wakes: list[float] = []  # times of the wake-ups already scheduled

    # -- services ----------------------------------------------------------------------------
    def flow_start(self, d: tuple) -> None:
        """A message's latency has elapsed: its first byte may flow now."""
        self._starts.append(d)
        self._soon()

    def _wake(self, _: Any) -> None:
        self._soon()

    def _soon(self) -> None:
        # NIC entities have smaller ids than the solver, so every start of this instant runs
        # before the solver's own events of the instant: one recomputation takes them all.
        if not self._resolving:
            self._resolving = True
            self.after(0.0, self._resolve, None)

    # -- the recomputation -----------------------------------------------------------------
    def _resolve(self, _: Any) -> None:
        self._resolving = False
        now = self.sim.now
        st = self._st
        flows = self._flows
        on_link = self._on_link
        wakes = self._wakes
        while wakes and wakes[0] <= now:
            heapq.heappop(wakes)
        changed: set[int] = set()
        due = self._due
        while due and due[0][0] <= now:
            _, fid, ver = heapq.heappop(due)
            f = flows.get(fid)
            if f is None or f.ver != ver:
                continue
            self._segment_done(f, changed)
        starts = self._starts
        if starts:
            self._starts = []
            for d in starts:
                self._start(d, changed)
        if changed:
            self._recompute(changed, now)
        while due and (flows.get(due[0][1]) is None or flows[due[0][1]].ver != due[0][2]):
            heapq.heappop(due)
        if due and (not wakes or wakes[0] > due[0][0]):
            top = due[0][0]
            # The wake-up's own time, as the kernel computes it: now + (top - now) may fall
            # an ulp short of top, and then that wake-up schedules the next.
            heapq.heappush(wakes, now + (top - now))
            self.after(top - now, self._wake, None)

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
        self._next_segment(f, changed)

    def _next_segment(self, f: _Flow, changed: set[int]) -> None:
        size = f.left if f.left <= self._seg else self._seg
        f.left -= size
        f.size = size
        f.rem = float(size)
        f.rate = 0.0
        f.t = self.sim.now
        f.ver += 1
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
        b = st.bytes
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
        each connected component of them solved on its own (in one vectorised pass)."""
        flows = self._flows
        on_link = self._on_link
        seen: set[int] = set()
        label: dict[int, int] = {}
        st = self._st
        n_comp = 0
        for seed in sorted(changed):
            if seed in seen or seed not in on_link:
                continue
            seen.add(seed)
            stack = [seed]
            size = 0
            while stack:
                for fid in on_link[stack.pop()]:
                    if fid not in label:
                        label[fid] = n_comp
                        size += 1
                        for l in flows[fid].route:
                            if l not in seen:
                                seen.add(l)
                                stack.append(l)
            n_comp += 1
            st.touched += size
            if size > st.touched_max:
                st.touched_max = size
        if not label:
            return
        st.recomputes += n_comp
        order = sorted(label)
        fl = [flows[i] for i in order]
        c = len(fl)
        comp = np.fromiter((label[i] for i in order), dtype=np.int64, count=c)
        lens = np.fromiter((len(f.route) for f in fl), dtype=np.int64, count=c)
        ptr = np.zeros(c + 1, dtype=np.int64)
        np.cumsum(lens, out=ptr[1:])
        links = np.fromiter(chain.from_iterable(f.route for f in fl), dtype=np.int64, count=int(ptr[-1]))
        uniq, inv = np.unique(links, return_inverse=True)
        rate = maxmin_rates(ptr, inv.astype(np.int64, copy=False), self._cap[uniq], comp)
        due = self._due
        for i, r in enumerate(rate.tolist()):
            f = fl[i]
            if r == f.rate:
                continue  # its completion entry still holds
            rem = f.rem - f.rate * (now - f.t)
            if rem < 0.0:
                rem = 0.0
            f.rem = rem
            f.t = now
            f.rate = r
            f.ver += 1
            heapq.heappush(due, (now + rem / r, f.fid, f.ver))


__all__ = ["FlowSolver", "SOLVER_TYPE"]
