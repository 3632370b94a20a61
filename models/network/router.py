"""Router (switch) entities of the packet model: output-queued virtual cut-through.

Each directed link is an output port of the vertex it leaves, with bandwidth B, latency
L > 0 and a ``next_free`` time. A chunk of c bytes whose head reaches a router at time t
starts on its next port at ``max(t, next_free, tail - c/B)`` (the last term: it never
finishes before its tail has arrived from a slower previous hop), occupies the port for c/B,
and its head reaches the next vertex L later. Buffers are unbounded: there is no credit
back-pressure, so congestion shows as queueing delay at the congested port rather than as
stalls that spread upstream (:mod:`models.network.credits` has the finite-buffer router).

The queueing delay recorded per port (``NetworkStats.link_max_queue``) is the time a chunk
waits for the port to become free, ``next_free - max(t, tail - c/B)`` when positive; waiting
for the tail from a slower previous hop is serialization, not queueing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdes import Entity

if TYPE_CHECKING:  # pragma: no cover
    from .network import Network


class Router(Entity):
    """A switch: forwards chunks along their source routes."""

    def __init__(self, net: "Network"):
        self.net = net
        self._st = net.state

    def chunk(self, d: tuple) -> None:
        """The head of a chunk arrived: queue it on its next port and pass it on."""
        route, hop, nb, tail, msg = d
        st = self._st
        l = route[hop]
        now = self.sim.now
        ser = nb / st.bw[l]
        free = st.free
        # Ready: the head is here and the chunk would not outrun its tail.
        start = tail - ser
        if start < now:
            start = now
        f = free[l]
        if f > start:
            # Queueing delay: only the wait for a busy port.
            q = f - start
            if q > st.maxq[l]:
                st.maxq[l] = q
            start = f
        end = start + ser
        free[l] = end
        st.link_bytes[l] += nb
        st.busy[l] += ser
        lat = st.lat[l]
        # (start - now) + lat, not start + lat - now: the delay must never round below L.
        self.send(st.dst_eid[l], "chunk", (route, hop + 1, nb, end + lat, msg), (start - now) + lat)
