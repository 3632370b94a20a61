"""Compute-node entities: the host side and the NIC of every node.

The delivery API for the layers above (the MPI layer subclasses :class:`NetworkNode`):

* ``net_send(dst, nbytes, payload, job=-1, notify=False)``: send ``nbytes`` from this node
  to node ``dst``; ``payload`` is a small opaque object carried for matching.
* ``on_message(src, nbytes, payload, job)``: called on the destination node when the last
  byte has arrived plus the receive overhead o_r.
* ``on_sent(payload, job)``: called on the sender, when ``notify`` was set, once its buffer
  is free (the last chunk has left the NIC; for the ideal model, after o_s + S/B_inject; for
  the flow model, one lookahead after the flow's last byte).

Messages between ranks of one node never touch the network: they are copies through the
node's memory channel (bandwidth ``intra_node_bw``, FIFO, so concurrent copies share it).

Packet model: the NIC cuts a message into chunks of at most C bytes and injects the chunks of
concurrent messages round-robin, one chunk whenever the injection port is free. Every chunk
then travels hop by hop through :class:`~models.network.router.Router` entities. The time a
chunk waits in the NIC beyond the end of its message's previous chunk (or beyond the
message's arrival, for the first chunk) is the injection port's queueing delay.

Flow model: the NIC hands each message to the :class:`~models.network.flow.FlowSolver` after
``o_s + sum(L)`` (at least the lookahead) and receives it back from there on delivery.
"""

from __future__ import annotations

import math
from collections import deque
from heapq import heappush
from typing import TYPE_CHECKING, Any

from pdes import Entity
from pdes.event import Event

from ..topology import Topology

_INF = math.inf

if TYPE_CHECKING:  # pragma: no cover
    from .network import Network
    from .state import NetState


class NetworkNode(Entity):
    """A compute node: its NIC and the hooks where the layers above receive messages."""

    def __init__(self, net: "Network"):
        self.net = net
        self.node = self.index
        st: NetState = net.state
        self._st = st
        self._txq: deque = deque()
        self._pumping = False
        self._mid = 0
        self._rx: dict[int, float] = {}
        self._mem_free = 0.0
        model = net.config.model
        self._ideal = model == "ideal"
        # The ideal and flow models' send path (None: the packet model's).
        self._other = self._ideal_send if self._ideal else self._flow_send if model == "flow" else None
        self._solver = net.solver_eid
        self._adaptive = net.topology.is_adaptive
        self._n_nodes = net.topology.n_nodes
        self._path_base = self.node * self._n_nodes  # + dst: the key of a cached flow path
        # The ideal model's cached paths from this node, by destination node (see NetState).
        self._paths: dict[int, list] = {}
        # The topology's route summary when it has one and every link has one latency: the
        # ideal model's paths are then made without their routes (see _ideal_path).
        self._summary = None
        # The most paths the ideal and flow models cache per rank (a full cache empties).
        self._path_cap = 8 * net.topology.route_cache_size
        if self._ideal:
            self.net_send = self._net_send_ideal
            topo = net.topology
            if st.lat_sums is not None and type(topo).route_summary is not Topology.route_summary:
                self._summary = topo.route_summary
                st.summarized = True
        self._keyed = net.topology.routing in net.topology.KEYED_ROUTINGS
        # Credit-based flow control: the injection link's (link * nvc + vc) key the NIC
        # waits on for credit, -1 when it does not wait.
        self._cr = st.credits
        self._stalled = -1
        if self._cr is not None:
            self._pump = self._pump_credit

    # -- hooks for the layers above ------------------------------------------------------
    def on_message(self, src: int, nbytes: int, payload: Any, job: int) -> None:
        """A message from node ``src`` has been delivered here (override)."""

    def on_sent(self, payload: Any, job: int) -> None:
        """The buffer of a message sent with ``notify=True`` is free again (override)."""

    # -- restricted routing --------------------------------------------------------------------
    def restrict_routes(self, job: int, allowed_links: Any) -> None:
        """Route every message of ``job`` sent from this rank's nodes over ``allowed_links``
        only (link ids or a bool mask), as a link-reserving allocator requires.

        Counted per node: call :meth:`release_routes` once per call when the job's part on
        this node ends. Only topologies with ``route_restricted`` (fat-trees) support it.
        """
        import numpy as np

        st = self._st
        entry = st.job_links.get(job)
        if entry is None:
            topo = st.topology
            if not hasattr(topo, "route_restricted"):
                raise TypeError(f"a {topo.name} cannot restrict routes to reserved links (job {job})")
            a = np.asarray(allowed_links)
            if a.dtype != bool:
                mask = np.zeros(topo.n_links, dtype=bool)
                mask[a.astype(np.int64)] = True
                a = mask
            entry = st.job_links[job] = [a, 0, {}]
        entry[1] += 1

    def release_routes(self, job: int) -> None:
        """Undo one :meth:`restrict_routes` of ``job`` (the last one forgets its routes)."""
        st = self._st
        entry = st.job_links.get(job)
        if entry is not None:
            entry[1] -= 1
            if entry[1] <= 0:
                del st.job_links[job]

    def _route_for(self, job: int, dst: int, key: int) -> tuple[int, ...]:
        """The route of a message: restricted to the job's links when it has some."""
        st = self._st
        entry = st.job_links.get(job) if st.job_links else None
        if entry is None:
            return st.topology.route(self.node, dst, key)
        cache = entry[2]
        r = cache.get((self.node, dst))
        if r is None:
            r = st.topology.route_restricted(self.node, dst, entry[0], key)
            if r is None:
                raise RuntimeError(f"job {job}: no route from node {self.node} to node {dst} over its reserved links")
            cache[(self.node, dst)] = r
        return r

    # -- sending -----------------------------------------------------------------------------
    def net_send(self, dst: int, nbytes: int, payload: Any = None, job: int = -1, notify: bool = False) -> None:
        """Send ``nbytes`` to node ``dst``, starting now (plus the send overhead o_s).

        Raises ValueError for a size that is not a finite number >= 0 (an infinite message
        would never finish).
        """
        if not 0 <= nbytes < _INF:
            raise ValueError(f"net_send from node {self.node} to {dst}: nbytes must be a finite number >= 0, "
                             f"got {nbytes!r}")
        st = self._st
        mid = self._mid
        self._mid = mid + 1
        msg = (self.node, mid, nbytes, job, payload, notify, self.node + self._n_nodes * mid)
        if dst == self.node:
            self._intra(msg)
            return
        topo = st.topology
        if self._other is not None:
            self._other(dst, msg)
            return
        if st.job_links and job in st.job_links:
            route = self._route_for(job, dst, mid)
        elif self._adaptive and self._cr is None:
            # (With credits the source router chooses, per chunk: CreditRouter.)
            now = self.sim.now
            free = st.free
            route = topo.route_adaptive(self.node, dst, mid, lambda l: max(0.0, free[l] - now))
        else:
            route = topo.route(self.node, dst, mid)
        st.messages += 1
        js = st.jobs.get(job)
        if js is None:
            js = st.jobs[job] = [0.0, 0.0, 0]
        js[0] += nbytes
        js[1] += nbytes * (len(route) - 2)
        js[2] += 1
        entry = [msg, route, nbytes, 0.0]
        if self._cr is not None:
            entry.append(self._cr.vcs_of(route))
        if st.o_s > 0.0:
            self.after(st.o_s, self._enqueue, entry)
        else:
            self._enqueue(entry)

    def _enqueue(self, entry: list) -> None:
        now = self.sim.now
        entry[3] = now  # ready to inject from now on
        self._txq.append(entry)
        if not self._pumping:
            self._pumping = True
            free = self._st.free[entry[1][0]]
            if free > now:
                self.after(free - now, self._pump, None)
            else:
                self._pump(None)

    def _pump(self, prev: Any) -> None:
        """Inject one chunk of the message at the head of the round-robin queue.

        ``prev`` is the message served by the previous chunk if it has bytes left: it goes
        to the back of the queue only now, when its chunk has left, so that messages which
        arrived meanwhile (or at the same instant) take their turn first.
        """
        q = self._txq
        if prev is not None:
            q.append(prev)
        entry = q.popleft()
        msg, route, rem, ready = entry
        st = self._st
        c = st.chunk
        nb = c if rem > c else rem
        l = route[0]
        now = self.sim.now
        # NIC queueing: the chunk could have gone at `ready` (its message's previous chunk
        # done, or the message enqueued) but waited for the port or other messages' chunks.
        if now - ready > st.maxq[l]:
            st.maxq[l] = now - ready
        ser = nb / st.bw[l]
        end = now + ser
        st.free[l] = end
        st.link_bytes[l] += nb
        st.busy[l] += ser
        st.chunks += 1
        lat = st.lat[l]
        self.send(st.dst_eid[l], "chunk", (route, 1, nb, end + lat, msg), lat)
        rem -= nb
        if rem > 0:
            entry[2] = rem
            entry[3] = end
            self.after(ser, self._pump, entry)
            return
        if msg[5]:
            self.after(ser, self._sent, msg)
        if q:
            self.after(ser, self._pump, None)
        else:
            self._pumping = False

    def _pump_credit(self, prev: Any) -> None:
        """:meth:`_pump` under credit-based flow control: the chunk at the head of the
        round-robin queue goes only when the first router's input buffer (its VC) has room;
        otherwise the NIC stalls until a credit comes back."""
        q = self._txq
        if prev is not None:
            q.append(prev)
        entry = q[0]
        msg, route, rem, ready, vcs = entry
        st = self._st
        c = st.chunk
        nb = c if rem > c else rem
        l = route[0]
        cs = self._cr
        k = l * cs.nvc + vcs[0]
        if cs.credit[k] < nb and k in cs.pend:
            cs.settle(k, self.sim.now)
        if cs.credit[k] < nb:
            self._stalled = k
            # The NIC waits on k: its router must send credits as events from now on.
            cs.waitq[k] = None
            if k in cs.pend:
                cs.arm(k)
            cs.stalls += 1
            return
        q.popleft()
        cs.credit[k] -= nb
        now = self.sim.now
        if now - ready > st.maxq[l]:
            st.maxq[l] = now - ready
        ser = nb / st.bw[l]
        end = now + ser
        st.free[l] = end
        st.link_bytes[l] += nb
        st.busy[l] += ser
        st.chunks += 1
        lat = st.lat[l]
        self.send(st.dst_eid[l], "chunk", (route, 1, nb, end + lat, msg, vcs), lat)
        rem -= nb
        if rem > 0:
            entry[2] = rem
            entry[3] = end
            self.after(ser, self._pump, entry)
            return
        if msg[5]:
            self.after(ser, self._sent, msg)
        if q:
            self.after(ser, self._pump, None)
        else:
            self._pumping = False

    def credit(self, d: tuple) -> None:
        """Credit-based flow control: ``nb`` bytes of the first router's input buffer (VC
        key ``k``) are free again; a stalled NIC resumes if its chunk now fits."""
        k, nb = d
        cs = self._cr
        cs.credit[k] += nb
        if self._stalled == k:
            rem = self._txq[0][2]
            c = self._st.chunk
            if cs.credit[k] >= (c if rem > c else rem):
                self._stalled = -1
                del cs.waitq[k]
                self._pump(None)

    def _sent(self, msg: tuple) -> None:
        self.on_sent(msg[4], msg[3])

    # -- receiving (packet model) --------------------------------------------------------------
    def chunk(self, d: tuple) -> None:
        """A chunk's head reached this NIC (the last hop); its tail arrives at ``d[3]``."""
        nb, tail, msg = d[2], d[3], d[4]
        total = msg[2]
        if nb < total:
            rx = self._rx
            k = msg[6]
            got = rx.get(k, 0) + nb
            if got < total:
                rx[k] = got
                return
            del rx[k]
        self.after(tail - self.sim.now + self._st.o_r, self._deliver, msg)

    def _deliver(self, msg: tuple) -> None:
        """The whole message has arrived and the receive overhead has passed."""
        self.on_message(msg[0], msg[2], msg[4], msg[3])

    # -- ideal model -----------------------------------------------------------------------------
    # A cached path: [route (None until needed where the topology summarizes routes: the
    # byte flush makes the routes of many paths at once, see NetState.flush_paths), o_s +
    # sum(L) + o_r, min bandwidth, bytes sent since its links were last credited (see
    # NetState.bytes), the destination's delivery callable (None when it lives on another MPI
    # rank, or until the first send resolves it), hops between routers (len(route) - 2), the
    # destination node's entity id, source node, destination node]. The cache holds up to 8x
    # the topology's route cache (one entry per pair of nodes that talk: a rank's few
    # partners of a collective).

    def _net_send_ideal(self, dst: int, nbytes: int, payload: Any = None, job: int = -1, notify: bool = False) -> None:
        """:meth:`net_send` on the ideal model, in one call for a message between two nodes on
        a cacheable path, its delivery event built here: this is the MPI layer's hottest path."""
        st = self._st
        path = self._paths.get(dst)
        if not 0 <= nbytes < _INF or (st.job_links and job in st.job_links):
            NetworkNode.net_send(self, dst, nbytes, payload, job, notify)
            return
        if path is None:
            if self._keyed or dst == self.node or dst.__class__ is not int:
                NetworkNode.net_send(self, dst, nbytes, payload, job, notify)
                return
            path = self._ideal_path(dst)
        mid = self._mid
        self._mid = mid + 1
        node = self.node
        msg = (node, mid, nbytes, job, payload, notify, node + self._n_nodes * mid)
        path[3] += nbytes
        st.messages += 1
        js = st.jobs.get(job)
        if js is None:
            js = st.jobs[job] = [0.0, 0.0, 0]
        js[0] += nbytes
        js[1] += nbytes * path[5]
        js[2] += 1
        sim = self.sim
        delay = path[1] + nbytes / path[2]
        fn = path[4]
        if fn is None or not delay >= sim.lookahead:
            self.send(path[6], "_deliver", msg, delay)
            if fn is None:
                # The send above resolved the delivery callable (None for a node on another rank).
                table = sim._svc_tables.get("_deliver")
                path[4] = table[path[6]] if table is not None else None
        else:
            # The event, built inline (see Entity.send).
            key = self._evkey
            self._evkey = key + 1
            t = sim.now + delay
            e = Event(t)
            e.t = t
            e.key = key
            e.fn = fn
            e.data = msg
            heappush(sim._heap, e)
        if notify:
            self.after(st.o_s + nbytes / st.bw[self._path_route(path)[0]], self._sent, msg)

    def _ideal_path(self, dst: int) -> list:
        """Make and cache the path to node ``dst`` (another node, routing not keyed), with no
        bytes pending yet."""
        st = self._st
        node = self.node
        summarize = self._summary
        # (A node id that is not a plain int in range takes the route, whose lookup converts
        # it or names the bad id, as without summaries.)
        ok = summarize is not None and dst.__class__ is int and 0 <= dst < self._n_nodes
        summary = summarize(node, dst) if ok else None
        if summary is None:
            # A cached path keeps its route: the topology's own route cache would only hold it twice.
            route = st.topology.route_uncached(node, dst)
            n = len(route)
            base = st.o_s + st.lat_sum(route) + st.o_r
            min_bw = min(map(st.bw.__getitem__, route))
            dest = st.dst_eid[route[-1]]
        else:
            # The same length, bandwidth and ejection link without the route: most paths of a
            # large job carry a message or two, and their routes are made together, in
            # numpy, when their bytes are counted.
            route = None
            n, min_bw, eject = summary
            sums = st.lat_sums
            base = st.o_s + (sums[n] if n < len(sums) else st.lat_sum_n(n)) + st.o_r
            dest = st.dst_eid[eject]
        sim = self.sim
        table = sim._svc_tables.get("_deliver")
        fn = table[dest] if table is not None else None
        if fn is None and dest in sim._local:
            # The first message to that node: its delivery callable, resolved as the kernel
            # resolves a first send's (not through a send by name).
            fn = sim._resolve_delivery(dest, "_deliver")
        path = [route, base, min_bw, 0, fn, n - 2, dest, node, dst]
        # (_keep_path, inlined: once per new pair of nodes, most messages of a one-shot job.)
        ideal = st.ideal_paths
        if len(ideal) >= self._path_cap:
            st.flush_paths(True)
        paths = self._paths
        if not paths:
            st.path_tables.append(paths)
        paths[dst] = path
        ideal.append(path)
        return path

    def _path_route(self, path: list) -> tuple[int, ...]:
        """The route of a cached path, made now if the path was made without it."""
        route = path[0]
        if route is None:
            route = path[0] = self._st.topology.route_uncached(path[7], path[8])
        return route

    def _ideal_send(self, dst: int, msg: tuple) -> None:
        st = self._st
        # Routes that depend on the message key (ECMP, Valiant) are not cached here: the
        # topology caches the routes themselves.
        restricted = bool(st.job_links) and msg[3] in st.job_links
        nbytes = msg[2]
        cached = not (self._keyed or restricted)
        if cached:
            # A path _net_send_ideal did not find (a node id that is not a plain int): cache it,
            # with this message's bytes pending on it.
            path = self._ideal_path(dst)
            path[3] = nbytes
            base, min_bw, hops, dest = path[1], path[2], path[5], path[6]
        else:
            route = self._route_for(msg[3], dst, msg[1])
            base = st.o_s + st.lat_sum(route) + st.o_r
            min_bw = min(map(st.bw.__getitem__, route))
            dest = st.dst_eid[route[-1]]
            sbytes = st.link_bytes
            for l in route:
                sbytes[l] += nbytes
            hops = len(route) - 2
        st.messages += 1
        js = st.jobs.get(msg[3])
        if js is None:
            js = st.jobs[msg[3]] = [0.0, 0.0, 0]
        js[0] += nbytes
        js[1] += nbytes * hops
        js[2] += 1
        # Delivered o_r after the last byte: the receive overhead is part of the one event.
        self.send(dest, "_deliver", msg, base + nbytes / min_bw)
        if msg[5]:
            first = self._path_route(path)[0] if cached else route[0]
            self.after(st.o_s + nbytes / st.bw[first], self._sent, msg)
        if cached and path[4] is None:
            # The send above resolved the delivery callable (None for a node on another rank).
            table = self.sim._svc_tables.get("_deliver")
            path[4] = table[dest] if table is not None else None

    # -- flow model --------------------------------------------------------------------------
    def _flow_send(self, dst: int, msg: tuple) -> None:
        st = self._st
        restricted = bool(st.job_links) and msg[3] in st.job_links
        ck = None if (self._keyed or restricted) else self._path_base + dst
        path = st.flow_paths.get(ck) if ck is not None else None
        if path is None:
            if ck is None:
                route = self._route_for(msg[3], dst, msg[1])
            else:
                # Kept in flow_paths: the topology's route cache would only hold it twice.
                route = st.topology.route_uncached(self.node, dst)
            path = (route, st.lat_sum(route))
            if ck is not None:
                fp = st.flow_paths
                if len(fp) >= self._path_cap:
                    # Bounded: an all-to-all's n^2 routes would fill the memory (4,096
                    # nodes: 16.8 million, about 5 GB), and each of its pairs comes back
                    # only once per iteration.
                    fp.clear()
                fp[ck] = path
        route, sum_lat = path
        nbytes = msg[2]
        st.messages += 1
        js = st.jobs.get(msg[3])
        if js is None:
            js = st.jobs[msg[3]] = [0.0, 0.0, 0]
        js[0] += nbytes
        js[1] += nbytes * (len(route) - 2)
        js[2] += 1
        # The solver is a separate entity (on rank 0): never sooner than the lookahead.
        delay = st.o_s + sum_lat
        la = self.sim.lookahead
        self.send(self._solver, "flow_start", (msg, dst, route, restricted, sum_lat), delay if delay >= la else la)

    # -- intra-node copies -------------------------------------------------------------------
    def _intra(self, msg: tuple) -> None:
        st = self._st
        st.intra_messages += 1
        now = self.sim.now
        start = now + st.o_s
        if self._mem_free > start:
            start = self._mem_free
        end = start + msg[2] / st.mem_bw
        self._mem_free = end
        self.after(end + st.mem_lat + st.o_r - now, self._deliver, msg)
        if msg[5]:
            self.after(end - now, self._sent, msg)
