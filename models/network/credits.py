"""Credit-based flow control of the packet model: virtual channels and credit routers.

With ``NetworkConfig(buffers="credit")`` every router input port has one buffer of
``buffer_size`` bytes per virtual channel (VC). The sender of a link (a NIC or a router)
holds one credit counter per VC of the link, initially the buffer size: a chunk of ``c``
bytes may start on the link only when its VC has ``c`` bytes of credit, and takes them. The
chunk holds its place in the downstream input buffer until its tail has left that router on
its next link; the credit then travels back over the link, arriving one link latency later.
Ejection links (into a NIC) are never throttled: the NIC sinks at line rate.

A chunk that finds no credit waits in a FIFO per (output link, VC) of the router (or in the
NIC's injection queue) while still holding its own input buffer: back-pressure spreads
upstream hop by hop, and chunks of other flows sharing those buffers wait with it (tree
saturation). Chunks of other VCs on the same port pass: a blocked VC never blocks another.

Deadlock freedom by construction: each hop's VC comes from the route (:func:`vc_plan`) so
that the channel dependency graph over (link, VC) buffers is acyclic.

* **Fat-trees**: routes go up, then down; every dependency goes from a link to one a level
  higher on the way up or lower on the way down, so one VC suffices.
* **Tori** (dimension-order routing): dimensions are crossed in order, so dependencies only
  run from a lower dimension to a higher one; inside a ring of ``k > 2`` routers a route
  uses VC 0 until it crosses the ring's dateline (the wrap-around link) and VC 1 from that
  hop on, and a minimal route never crosses the dateline twice (two VCs when a wrapped
  dimension has more than two routers; meshes need one). Torus ``adaptive`` routing adds one
  adaptive VC above these escape VCs (Duato): a chunk takes an adaptive VC only when it has
  room, so no chunk ever waits for one; a chunk that finds none free waits for the escape
  network, dimension order from where it is with the dateline rule over its remaining path,
  and stays in it. The escape network alone is acyclic (dimension order, dateline) and
  always drains, so the chunks holding adaptive buffers move on too.
* **Dragonflies**: a hop's VC is the number of global links the route has taken before it.
  Local routes inside a group are acyclic by themselves (one hop in flat groups; row, then
  column in cascade groups), so dependencies only run local(v) -> global(v) -> local(v+1):
  minimal routes need two VCs, Valiant and UGAL (which may take a Valiant route) three.

Adaptive routings (dragonfly ``ugal``/``ugal-g``, fat-tree ``adaptive``) are decided per
chunk by the source router when the chunk's head arrives from its NIC (the NIC sends it
with the zero-load route): the router reads :meth:`CreditState.occupancy` of its own output
ports (credits in use: the downstream buffer and the bytes in flight or on their way back as
credit, plus the bytes waiting for credit), which is state only that router changes, so the
choice is the same for any number of ranks. Ties keep the zero-load route.

Credits are first events (:meth:`pdes.Entity.send_first`): a credit due at time ``t`` is
seen by every event at ``t``, whichever router sent it. Most credits find nobody waiting,
so when the sender of the link is on this rank a credit is kept *deferred*: its key is taken
(so every later key is unchanged), and it is added to the counter by the next read of that
counter at or after its time (:meth:`CreditState.settle`). Only when a chunk (or a NIC) must
wait for credit are the deferred credits of that (link, VC) scheduled as real events, with
their own keys (:meth:`CreditState.arm`); from then on, while something waits, credits are
sent as events. Results are the same as sending every credit, for any number of ranks; the
saving is one event per chunk hop.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Callable

import numpy as np

from pdes import Entity
from pdes.entity import FIRST

from ..topology import KIND_EJECT, KIND_GLOBAL, Dragonfly, FatTree, Topology, Torus
from .config import MAX_VCS, NetworkConfigError

if TYPE_CHECKING:  # pragma: no cover
    from .network import Network


def vc_plan(topology: Topology) -> tuple[int, Callable[[tuple[int, ...]], tuple[int, ...]], str]:
    """``(vcs needed, route -> VC per hop, why)`` for deadlock-free routing on ``topology``.

    The VC tuple is parallel to the route (injection link first, ejection link last; both
    on VC 0). ``why`` names the rule, for error messages.
    """
    if isinstance(topology, FatTree):
        return 1, lambda route: (0,) * len(route), f"up/down routing on a fattree ({topology.routing!r})"
    if isinstance(topology, Torus):
        return _torus_plan(topology)
    if isinstance(topology, Dragonfly):
        return _dragonfly_plan(topology)
    raise NetworkConfigError(
        f"buffers='credit' has no deadlock-free virtual-channel rule for a {topology.name}; "
        "valid topologies: fattree, torus, dragonfly"
    )


def _torus_plan(t: Torus) -> tuple[int, Callable, str]:
    D = t.n_dims
    s2l = np.asarray(t._s2l)
    slots = np.flatnonzero(s2l >= 0)
    links = s2l[slots]
    router, dim, direction = slots // (2 * D), (slots // 2) % D, slots % 2
    x = t.coords_of_router(router)[np.arange(len(slots)), dim]
    k = np.asarray(t.dims)[dim]
    wrapped = np.asarray(t.wrap)[dim]
    # The dateline of a ring is its wrap-around link in each direction (k-1 -> 0 going +,
    # 0 -> k-1 going -). A ring of two routers needs none: a route crosses it in one hop.
    dateline = wrapped & (k > 2) & np.where(direction == 0, x == k - 1, x == 0)
    ldim = [-1] * t.n_links
    lwrap = [False] * t.n_links
    for l, d, w in zip(links.tolist(), dim.tolist(), dateline.tolist()):
        ldim[l] = d
        lwrap[l] = w

    def vcs(route: tuple[int, ...]) -> tuple[int, ...]:
        out = [0]
        cur, v = -1, 0
        for l in route[1:-1]:
            d = ldim[l]
            if d != cur:
                cur, v = d, 0
            if lwrap[l]:
                v = 1
            out.append(v)
        out.append(0)
        return tuple(out)

    need = 2 if any(w and kk > 2 for w, kk in zip(t.wrap, t.dims)) else 1
    why = "dimension-order routing on a torus with wrap-around (dateline)" if need == 2 else "dimension-order routing on a mesh"
    if t.routing == "adaptive":
        # One adaptive VC above the escape VCs.
        return need + 1, vcs, f"adaptive routing on a {'torus' if need == 2 else 'mesh'} (escape VCs of {why}, plus one adaptive VC)"
    return need, vcs, why


def _dragonfly_plan(t: Dragonfly) -> tuple[int, Callable, str]:
    glob = (np.asarray(t.link_kind) == KIND_GLOBAL).tolist()

    def vcs(route: tuple[int, ...]) -> tuple[int, ...]:
        out = []
        v = 0
        for l in route:
            out.append(v)
            if glob[l]:
                v += 1
        out[-1] = 0
        return tuple(out)

    g = t.n_groups
    if g <= 1:
        need = 1
    elif t.routing == "minimal" or g <= 2:
        need = 2
    else:
        need = 3
    return need, vcs, f"{t.routing!r} routing on a dragonfly (one VC per global hop taken)"


class CreditState:
    """Per-rank credit counters, wait queues and VC assignment of a credit-based network."""

    def __init__(self, topology: Topology, *, vcs: int | None, buffer_size: int, link_src_eid: np.ndarray):
        need, fn, why = vc_plan(topology)
        if vcs is None:
            vcs = need
        elif vcs < need:
            raise NetworkConfigError(
                f"vcs = {vcs} is too few virtual channels for deadlock freedom: {why} needs {need}; "
                f"valid: an integer from {need} to {MAX_VCS}, or leave vcs unset"
            )
        self.nvc = vcs
        self.need = need
        self.buffer_size = float(buffer_size)
        self._fn = fn
        self._cache: dict[tuple[int, ...], tuple[int, ...]] = {}
        # Credits per (link, VC) at the link's sender; ejection links are never throttled.
        eject = (np.asarray(topology.link_kind) == KIND_EJECT).tolist()
        credit: list[float] = []
        inf = float("inf")
        for e in eject:
            credit.extend([inf if e else float(buffer_size)] * vcs)
        self.credit = credit
        # (link * nvc + vc) -> deque of (chunk data, arrival time), present only while non-empty.
        self.waitq: dict[int, deque] = {}
        self.src_eid: list[int] = link_src_eid.tolist()
        self.stalls = 0
        # Deferred credits: (link * nvc + vc) -> [(due time, first-event key, bytes), ...],
        # present only while non-empty, and only while nothing waits on that key.
        self.pend: dict[int, list] = {}
        # Per link: may a credit for it be deferred (its sender is on this rank)? None: never
        # (set by the network: deferring needs the kernel's idle hook).
        self.defer: list[bool] | None = None
        self._sim = None
        # The clock, for occupancy() (set by the router before it asks the routing).
        self.now = 0.0

    def enable_deferred(self, sim, local_src: list[bool]) -> None:
        """Keep credits deferred for the links whose sender is on this rank (``local_src``)."""
        self.defer = local_src
        self._sim = sim
        sim.on_idle(self.flush)

    def settle(self, k: int, now: float) -> None:
        """Add to counter ``k`` its deferred credits due by ``now`` (credit amounts are whole
        bytes, so the sum is exact in any order)."""
        p = self.pend[k]
        c = 0.0
        rest = None
        for e in p:
            if e[0] <= now:
                c += e[2]
            elif rest is None:
                rest = [e]
            else:
                rest.append(e)
        if rest is None:
            del self.pend[k]
        else:
            self.pend[k] = rest
        self.credit[k] += c

    def arm(self, k: int) -> None:
        """Something starts waiting on ``k`` (after :meth:`settle`): its deferred credits,
        all due later, become events of the link's sender."""
        sim = self._sim
        l = k // self.nvc
        dest = self.src_eid[l]
        for t, key, nb in self.pend.pop(k):
            sim.post(t, key, dest, "credit", (k, nb))

    def flush(self, t: float) -> None:
        """Idle hook: apply the deferred credits due before ``t``, schedule the others."""
        pend = self.pend
        credit = self.credit
        for k in list(pend):
            later = []
            for e in pend[k]:
                if e[0] < t:
                    credit[k] += e[2]
                else:
                    later.append(e)
            pend[k] = later
            self.arm(k)

    def occupancy(self, l: int) -> float:
        """Bytes of output port ``l`` in use: credits taken on every VC (downstream buffer,
        bytes in flight, credits on their way back) plus the bytes of the chunks waiting for
        credit. Read by the adaptive routings at the port's own router."""
        nvc = self.nvc
        k0 = l * nvc
        credit = self.credit
        pend = self.pend
        if pend:
            for k in range(k0, k0 + nvc):
                if k in pend:
                    self.settle(k, self.now)
        used = nvc * self.buffer_size - sum(credit[k0:k0 + nvc])
        waitq = self.waitq
        if waitq:
            for k in range(k0, k0 + nvc):
                q = waitq.get(k)
                if q is not None:
                    used += sum(e[0][2] for e in q)
        return used

    def vcs_of(self, route: tuple[int, ...]) -> tuple[int, ...]:
        """The VC of every hop of ``route`` (cached per route)."""
        v = self._cache.get(route)
        if v is None:
            v = self._fn(route)
            if max(v) >= self.nvc:  # pragma: no cover - vc_plan's need bounds every route
                raise RuntimeError(f"route {route} needs VC {max(v)} but the network has {self.nvc}")
            if len(self._cache) < 1 << 16:
                self._cache[route] = v
        return v


class CreditRouter(Entity):
    """A switch with finite input buffers per VC and credit-based flow control.

    The per-hop timing is the infinite-buffer router's (``max(t, next_free, tail - c/B)``
    plus serialisation and latency), with ``t`` the time the chunk got its credit.
    """

    def __init__(self, net: "Network"):
        self.net = net
        self._st = net.state
        self._cr = net.state.credits
        topo = net.topology
        if topo.is_adaptive:
            # Only adaptive routings pay for the check at the first hop (or every hop).
            self._topo = topo
            self._lsrc: list[int] = topo.link_src.tolist()
            self._ldst: list[int] = topo.link_dst.tolist()
            if topo.routing in topo.PER_HOP_ROUTINGS:
                self._avc = self._cr.need - 1
                self._nn = topo.n_nodes
                self._suffix: dict[tuple[int, int], tuple] = {}
                self.chunk = self._chunk_per_hop
            else:
                self.chunk = self._chunk_adaptive

    def _chunk_adaptive(self, d: tuple) -> None:
        """:meth:`chunk` for adaptive routings: at the source router (hop 1) the route is
        chosen from the occupancy of the ports; further on the chunk follows it."""
        if d[1] == 1:
            route, _, nb, tail, msg, _ = d
            st = self._st
            job = msg[3]
            if not (st.job_links and job in st.job_links):
                cs = self._cr
                cs.now = self.sim.now
                new = self._topo.route_adaptive(self._lsrc[route[0]], self._ldst[route[-1]], msg[1], cs.occupancy)
                if new != route:
                    st.jobs[job][1] += nb * (len(new) - len(route))
                    d = (new, 1, nb, tail, msg, cs.vcs_of(new))
        CreditRouter.chunk(self, d)

    def _chunk_per_hop(self, d: tuple) -> None:
        """:meth:`chunk` for minimal adaptive routing with an escape network (torus
        ``adaptive``): unless the chunk is in the escape network already or its next hop is
        its ejection, it takes the minimal port whose adaptive VC has the most room (ties:
        the lower dimension), if any has room for it; else it keeps its dimension-order
        route from here, on the escape VCs."""
        route, hop, nb, tail, msg, vcs = d
        avc = self._avc
        if hop < len(route) - 1 and (hop == 1 or vcs[hop - 1] == avc):
            cs = self._cr
            nvc = cs.nvc
            credit = cs.credit
            waitq = cs.waitq
            pend = cs.pend
            dst = route[-1] - self._nn
            best, room = -1, nb - 1
            for c in self._topo.minimal_ports(self.index, dst):
                k = c * nvc + avc
                if k in pend:
                    cs.settle(k, self.sim.now)
                r = credit[k]
                if r > room and k not in waitq:
                    best, room = c, r
            if best >= 0:
                rest, rvcs = self._escape_path(self._ldst[best] - self._nn, dst)
                d = (route[:hop] + (best,) + rest, hop, nb, tail, msg, vcs[:hop] + (avc,) + rvcs)
        CreditRouter.chunk(self, d)

    def _escape_path(self, router: int, dst: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Dimension order from router index ``router`` to node ``dst`` and its escape VCs
        (the dateline rule applied from that router on), cached."""
        key = (router, dst)
        v = self._suffix.get(key)
        if v is None:
            links = self._topo.route_from_router(router, dst)
            # vcs_of wants a whole route: an injection link in front, dropped again.
            v = (links, self._cr.vcs_of((-1,) + links)[1:])
            if len(self._suffix) < 1 << 16:
                self._suffix[key] = v
        return v

    def chunk(self, d: tuple) -> None:
        """The head of a chunk arrived: send it on if its next buffer has room, else queue it."""
        l = d[0][d[1]]
        cs = self._cr
        k = l * cs.nvc + d[5][d[1]]
        nb = d[2]
        now = self.sim.now
        credit = cs.credit
        if credit[k] < nb or k in cs.waitq:
            # Deferred credits are added only when the counter falls short (their sum is
            # bounded by the buffer, so the list stays short).
            if k in cs.pend:
                cs.settle(k, now)
            if credit[k] < nb or k in cs.waitq:
                q = cs.waitq.get(k)
                if q is None:
                    q = cs.waitq[k] = deque()
                    if k in cs.pend:
                        cs.arm(k)
                q.append((d, now))
                cs.stalls += 1
                return
        credit[k] -= nb
        self._forward(d, l, now, now)

    def credit(self, d: tuple) -> None:
        """``nb`` bytes of buffer freed downstream of (link, VC) ``k``: release waiting chunks."""
        k, nb = d
        cs = self._cr
        c = cs.credit[k] + nb
        q = cs.waitq.get(k)
        if q is not None:
            now = self.sim.now
            while q:
                dd, arrived = q[0]
                if c < dd[2]:
                    break
                q.popleft()
                c -= dd[2]
                self._forward(dd, dd[0][dd[1]], now, arrived)
            if not q:
                del cs.waitq[k]
        cs.credit[k] = c

    def _forward(self, d: tuple, l: int, now: float, arrived: float) -> None:
        route, hop, nb, tail, msg, vcs = d
        st = self._st
        ser = nb / st.bw[l]
        ready = tail - ser
        if ready < arrived:
            ready = arrived
        start = ready if ready > now else now
        f = st.free[l]
        if f > start:
            start = f
        # Queueing delay: the wait for credit and for a busy port (not for the own tail).
        if start - ready > st.maxq[l]:
            st.maxq[l] = start - ready
        end = start + ser
        st.free[l] = end
        st.link_bytes[l] += nb
        st.busy[l] += ser
        lat = st.lat[l]
        self.send(st.dst_eid[l], "chunk", (route, hop + 1, nb, end + lat, msg, vcs), (start - now) + lat)
        # The input buffer it held is free once its tail has left: the credit goes back over
        # the incoming link (>= the lookahead whenever that link joins two routers).
        lp = route[hop - 1]
        cs = self._cr
        k = lp * cs.nvc + vcs[hop - 1]
        defer = cs.defer
        if defer is not None and defer[lp] and k not in cs.waitq:
            # Nobody waits for it yet: keep it deferred (see the module docstring).
            key = self._evkey
            self._evkey = key + 1
            # The due time exactly as a send computes it (now + delay), to the last bit.
            e = (now + ((end - now) + st.lat[lp]), key - FIRST, nb)
            p = cs.pend.get(k)
            if p is None:
                cs.pend[k] = [e]
            else:
                p.append(e)
        else:
            self.send_first(cs.src_eid[lp], "credit", (k, nb), (end - now) + st.lat[lp])
