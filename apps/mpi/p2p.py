"""Point-to-point messaging of one rank: matching, ordering, eager and rendezvous protocols.

Every rank of a job has one :class:`Endpoint` on the node entity that hosts it. The endpoint
sends through the node's NIC (:meth:`models.network.NetworkNode.net_send`) and is handed the
messages the node receives for it.

Matching (MPI semantics)
    A message carries the envelope (context, source rank in the communicator, tag). A receive
    names (context, source or ``ANY_SOURCE``, tag or ``ANY_TAG``). An arriving message matches
    the *earliest posted* receive that accepts it, else it waits in the unexpected queue; a new
    receive takes the *earliest arrived* unexpected message it accepts. Posted receives with
    exact source and tag live in deques keyed by ``(context, source, tag)`` (the only one
    posted, the common case of a rank waiting for one message, lives alone in ``one``); those
    with a wildcard live in one list in posting order (short in practice). Unexpected messages live
    in deques keyed the same way, tagged with their arrival number.

Non-overtaking
    The network may reorder two messages of one sender (a small message can pass a large one
    whose chunks are still in flight, or take another route). MPI forbids that for matching,
    so every envelope carries a per (sender, receiver) sequence number and the receiver
    matches envelopes strictly in that order, holding early ones back.

Protocols
    Up to the eager threshold (default 64 KiB) the data travels with the envelope and the send
    completes at once (the library buffers it). Above it the sender sends a control message
    (RTS, ``ctrl_bytes`` long, default 64); the receiver, once it has matched the RTS to a
    receive, answers with a CTS control message; the sender then sends the data and its
    request completes when the data has left its NIC (``on_sent``); the receive completes when
    the data has arrived. Control messages are real messages that cross the network.

Polling
    ``test`` and ``iprobe`` never block, but an unsuccessful one takes ``poll_time`` (a run
    option, default 0.1 us) of the rank's time: MPI promises that a repeated test or iprobe
    eventually succeeds, which in a simulation needs simulated time to pass between them.

Payloads on the wire are plain tuples (first field the kind)::

    EAGER (0, dst, src, seq, ctx, src_in_comm, tag, nbytes, data)
    RTS   (1, dst, src, seq, ctx, src_in_comm, tag, nbytes, send_request_id)
    CTS   (2, dst, send_request_id, recv_request_id, receiver)
    DATA  (3, dst, recv_request_id, data, sender, send_request_id)

where ``dst``/``src``/``sender``/``receiver`` are world ranks of the job.
"""

from __future__ import annotations

import random
from collections import deque
from typing import TYPE_CHECKING, Any

from greenlet import getcurrent

if TYPE_CHECKING:  # pragma: no cover
    from .comm import Comm

__all__ = ["ANY_SOURCE", "ANY_TAG", "PROC_NULL", "Endpoint", "Request", "Status"]

#: Wildcards of receives and probes.
ANY_SOURCE = -1
ANY_TAG = -1
#: The null process: sends to it and receives from it complete at once and move no data.
PROC_NULL = -2

EAGER, RTS, CTS, DATA = 0, 1, 2, 3
SEND, RECV = 0, 1


def _oldest(q: Any) -> tuple:
    """The oldest (arrival number, envelope) of an unexpected-queue entry: a lone one is
    stored as itself, several as a deque (see Endpoint._incoming)."""
    return q if q.__class__ is tuple else q[0]


class Request:
    """A pending or completed send or receive (``isend``/``irecv``).

    A completed receive doubles as its status: ``source`` (rank in the communicator),
    ``tag``, ``nbytes`` and ``data`` (the payload object the sender attached, or None).
    """

    __slots__ = ("ep", "kind", "done", "watched", "ctx", "source", "tag", "nbytes", "data", "comm", "pseq", "peer")

    def __init__(self, ep: "Endpoint", kind: int, comm: "Comm", ctx: int, peer: int, tag: int, nbytes: int, data: Any):
        self.ep = ep
        self.kind = kind
        self.done = False
        self.watched = False
        self.comm = comm
        self.ctx = ctx
        self.peer = peer
        self.source = peer
        self.tag = tag
        self.nbytes = nbytes
        self.data = data
        self.pseq = 0

    def test(self) -> bool:
        """True once the request has completed. An unsuccessful test takes the job's
        ``poll_time`` (the completion is checked again after it), so a loop of tests lets the
        simulation progress and ends, as MPI's progress rule requires; a successful one is free."""
        if self.done:
            return True
        self.ep.poll()
        return self.done

    def wait(self) -> "Request":
        """Block until the request completes; returns it (the status)."""
        if not self.done:
            self.ep.wait1(self)
        return self

    def describe(self) -> str:
        """What the request waits for, for deadlock reports."""
        name = self.comm.name if self.comm is not None else "?"
        if self.kind == RECV:
            src = "ANY_SOURCE" if self.peer == ANY_SOURCE else self.peer
            tag = "ANY_TAG" if self.tag == ANY_TAG else self.tag
            return f"recv(source={src}, tag={tag}, comm={name})"
        return f"send(dest={self.peer}, tag={self.tag}, {self.nbytes} bytes, comm={name}; rendezvous: waiting for the receiver)"

    def __repr__(self) -> str:
        state = "done" if self.done else "pending"
        return f"<Request {self.describe()} {state}>"


class Status:
    """The envelope of a probed message: ``source``, ``tag``, ``nbytes`` (data not received)."""

    __slots__ = ("source", "tag", "nbytes", "data")

    def __init__(self, source: int, tag: int, nbytes: int, data: Any = None):
        self.source = source
        self.tag = tag
        self.nbytes = nbytes
        self.data = data

    def __repr__(self) -> str:
        return f"Status(source={self.source}, tag={self.tag}, nbytes={self.nbytes})"


class Endpoint:
    """The MPI library state of one rank (see the module docstring)."""

    __slots__ = (
        "node", "js", "w", "job", "rank_nodes", "eager", "ctrl", "net_send", "proc",
        "one", "posted", "wild", "unexp", "aseq", "pseq", "sseq", "rseq", "held", "rdv", "next_id",
        "n_wait", "waiting", "probing", "coll", "bytes_sent", "msgs_sent", "done", "end",
        "sleeping_until", "_rng", "world", "rdv_out", "_probe_text", "poll_s", "rec",
    )

    def __init__(self, node: Any, js: Any, world_rank: int):
        self.node = node
        self.js = js
        self.w = world_rank
        self.job = js.job
        self.rank_nodes = js.rank_nodes
        self.eager = js.eager
        self.ctrl = js.ctrl
        self.poll_s = js.poll
        self.net_send = node.net_send
        self.proc = None
        # The posted receive with exact source and tag while it is the only one (posted is
        # then empty): most ranks wait for one message at a time, which then costs no key and
        # no dict. A second receive moves it to posted (see recv).
        self.one: Request | None = None
        # (ctx, src, tag) -> the posted receive, or a deque of them when several wait.
        self.posted: dict[tuple[int, int, int], Any] = {}
        self.wild: list[Request] = []
        # (ctx, src, tag) -> (arrival number, envelope), or a deque of them.
        self.unexp: dict[tuple[int, int, int], Any] = {}
        self.aseq = 0
        self.pseq = 0
        self.sseq: dict[int, int] = {}
        self.rseq: dict[int, int] = {}
        self.held: dict[tuple[int, int], tuple] = {}
        self.rdv: dict[int, Request] = {}
        self.next_id = 0
        self.n_wait = 0
        self.waiting: Any = None  # Request (wait), list (waitall), tuple (waitany), "probe"
        self.probing: tuple[int, int, int] | None = None
        self.coll = ""
        self.bytes_sent = 0
        self.msgs_sent = 0
        self.done = False
        self.end = 0.0
        self.sleeping_until = -1.0
        self._rng: random.Random | None = None
        self.world: Any = None
        self.rdv_out = 0  # rendezvous sends whose data left but whose on_sent is pending
        self._probe_text = ""
        self.rec: Any = None  # the rank's call log when the run records a trace (apps.otf2trace)

    # -- sending ------------------------------------------------------------------------
    def send(self, comm: "Comm", ctx: int, src_c: int, dest_c: int, dst_w: int, nbytes: int, tag: int,
             data: Any, want: bool) -> Request | None:
        """Start a send; returns its request (None for a completed eager send when ``want`` is False)."""
        sseq = self.sseq
        seq = sseq.get(dst_w, 0)
        sseq[dst_w] = seq + 1
        self.msgs_sent += 1
        if nbytes <= self.eager:
            self.bytes_sent += nbytes
            self.net_send(self.rank_nodes[dst_w], nbytes, (EAGER, dst_w, self.w, seq, ctx, src_c, tag, nbytes, data), self.job)
            if not want:
                return None
            req = Request(self, SEND, comm, ctx, dest_c, tag, nbytes, data)
            req.done = True
            return req
        req = Request(self, SEND, comm, ctx, dest_c, tag, nbytes, data)
        rid = self.next_id
        self.next_id = rid + 1
        self.rdv[rid] = req
        c = self.ctrl
        self.bytes_sent += c
        self.net_send(self.rank_nodes[dst_w], c, (RTS, dst_w, self.w, seq, ctx, src_c, tag, nbytes, rid), self.job)
        return req

    # -- receiving ----------------------------------------------------------------------
    def recv(self, comm: "Comm", ctx: int, src: int, tag: int) -> Request:
        """Post a receive; it may complete at once from the unexpected queue."""
        req = Request(self, RECV, comm, ctx, src, tag, 0, None)
        if self.unexp:
            p = self._take_unexpected(ctx, src, tag)
            if p is not None:
                self._matched(req, p)
                return req
        req.pseq = self.pseq
        self.pseq += 1
        if src >= 0 and tag >= 0:
            one = self.one
            if one is None and not self.posted:
                self.one = req
                return req
            if one is not None:
                self.one = None
                self._post(one)
            self._post(req)
        else:
            self.wild.append(req)
        return req

    def _post(self, req: Request) -> None:
        """Queue a posted receive with exact source and tag under its key."""
        # One posted receive per key is the rule: it is stored alone, and a deque is made
        # only for a second one (a deque per message would be the costliest allocation).
        key = (req.ctx, req.peer, req.tag)
        posted = self.posted
        q = posted.get(key)
        if q is None:
            posted[key] = req
        elif q.__class__ is Request:
            posted[key] = deque((q, req))
        else:
            q.append(req)

    def _take_unexpected(self, ctx: int, src: int, tag: int) -> tuple | None:
        unexp = self.unexp
        if src >= 0 and tag >= 0:
            key = (ctx, src, tag)
            q = unexp.get(key)
            if q is None:
                return None
        else:
            key = self._find_unexpected(ctx, src, tag)
            if key is None:
                return None
            q = unexp[key]
        if q.__class__ is tuple:
            del unexp[key]
            return q[1]
        e = q.popleft()
        if not q:
            del unexp[key]
        return e[1]

    def _find_unexpected(self, ctx: int, src: int, tag: int) -> tuple[int, int, int] | None:
        """Key of the earliest-arrived unexpected message that (ctx, src, tag) accepts."""
        best = -1
        bkey = None
        for key, q in self.unexp.items():
            if key[0] == ctx and (src < 0 or key[1] == src) and (tag < 0 or key[2] == tag):
                a = _oldest(q)[0]
                if bkey is None or a < best:
                    best = a
                    bkey = key
        return bkey

    def peek(self, ctx: int, src: int, tag: int) -> Status | None:
        """The envelope of the earliest unexpected message (ctx, src, tag) accepts, not removed."""
        if not self.unexp:
            return None
        if src >= 0 and tag >= 0:
            q = self.unexp.get((ctx, src, tag))
        else:
            k = self._find_unexpected(ctx, src, tag)
            q = self.unexp[k] if k is not None else None
        if q is None:
            return None
        p = _oldest(q)[1]
        return Status(p[5], p[6], p[7], p[8] if p[0] == EAGER else None)

    # -- arrivals (called by the node entity, in event context) ----------------------------
    def arrive(self, p: tuple) -> None:
        """An envelope (EAGER or RTS) arrived: match it in the sender's order."""
        src_w = p[2]
        rseq = self.rseq
        exp = rseq.get(src_w, 0)
        if p[3] != exp:
            self.held[(src_w, p[3])] = p
            return
        rseq[src_w] = exp + 1
        held = self.held
        if p[0] == EAGER and not self.wild and not held:
            # The usual case, an eager envelope in order with no wildcard receive posted:
            # _incoming and _matched inlined (every eager message arrives here).
            req = self.one
            if req is not None:
                # The only posted receive (posted is empty): it matches, or nothing does.
                if req.tag == p[6] and req.peer == p[5] and req.ctx == p[4]:
                    self.one = None
                else:
                    self._unexpected((p[4], p[5], p[6]), p)
                    return
            else:
                key = (p[4], p[5], p[6])
                posted = self.posted
                req = posted.get(key)
                if req is None:
                    self._unexpected(key, p)
                    return
                if req.__class__ is Request:
                    del posted[key]
                else:
                    q = req
                    req = q.popleft()
                    if not q:
                        del posted[key]
            req.source = p[5]
            req.tag = p[6]
            req.nbytes = p[7]
            req.data = p[8]
            req.done = True
            if req.watched:
                req.watched = False
                n = self.n_wait - 1
                self.n_wait = n
                if n == 0:
                    self.proc.resume(req)
            return
        self._incoming(p)
        if held:
            while True:
                exp += 1
                nxt = held.pop((src_w, exp), None)
                if nxt is None:
                    break
                rseq[src_w] = exp + 1
                self._incoming(nxt)

    def _incoming(self, p: tuple) -> None:
        one = self.one
        if one is not None:
            # The general path matches against posted alone.
            self.one = None
            self._post(one)
        ctx = p[4]
        src = p[5]
        tag = p[6]
        key = (ctx, src, tag)
        q = self.posted.get(key)
        req = q if q is None or q.__class__ is Request else q[0]
        wild = self.wild
        if wild:
            for i, w in enumerate(wild):
                if w.ctx == ctx and (w.peer < 0 or w.peer == src) and (w.tag < 0 or w.tag == tag):
                    if req is None or w.pseq < req.pseq:
                        del wild[i]
                        self._matched(w, p)
                        return
                    break
        if req is None:
            self._unexpected(key, p)
            return
        if q is req:
            del self.posted[key]
        else:
            q.popleft()
            if not q:
                del self.posted[key]
        self._matched(req, p)

    def _unexpected(self, key: tuple[int, int, int], p: tuple) -> None:
        """Envelope ``p`` (key ``key``) matched no posted receive: queue it, and wake a rank
        probing for it."""
        a = self.aseq
        self.aseq = a + 1
        unexp = self.unexp
        uq = unexp.get(key)
        if uq is None:
            unexp[key] = (a, p)  # alone, as posted receives are (see recv)
        elif uq.__class__ is tuple:
            unexp[key] = deque((uq, (a, p)))
        else:
            uq.append((a, p))
        pr = self.probing
        if pr is not None and pr[0] == key[0] and (pr[1] < 0 or pr[1] == key[1]) and (pr[2] < 0 or pr[2] == key[2]):
            self.probing = None
            self.proc.resume(Status(key[1], key[2], p[7], p[8] if p[0] == EAGER else None))

    def _matched(self, req: Request, p: tuple) -> None:
        req.source = p[5]
        req.tag = p[6]
        req.nbytes = p[7]
        if p[0] == EAGER:
            req.data = p[8]
            # (complete(req), inlined: every eager message ends here.)
            req.done = True
            if req.watched:
                req.watched = False
                n = self.n_wait - 1
                self.n_wait = n
                if n == 0:
                    self.proc.resume(req)
            return
        rid = self.next_id
        self.next_id = rid + 1
        self.rdv[rid] = req
        c = self.ctrl
        self.bytes_sent += c
        self.msgs_sent += 1
        src_w = p[2]
        self.net_send(self.rank_nodes[src_w], c, (CTS, src_w, p[8], rid, self.w), self.job)

    def on_cts(self, p: tuple) -> None:
        """The receiver matched our RTS: send the data (the request completes in on_sent)."""
        req = self.rdv[p[2]]
        n = req.nbytes
        self.bytes_sent += n
        self.msgs_sent += 1
        dst = p[4]
        self.rdv_out += 1
        self.net_send(self.rank_nodes[dst], n, (DATA, dst, p[3], req.data, self.w, p[2]), self.job, True)

    def on_data(self, p: tuple) -> None:
        """Rendezvous data arrived for one of our receives."""
        req = self.rdv.pop(p[2])
        req.data = p[3]
        self.complete(req)

    def on_sent(self, p: tuple) -> None:
        """Our rendezvous data left the NIC: the send completes."""
        self.rdv_out -= 1
        self.complete(self.rdv.pop(p[5]))

    # -- completion and waiting --------------------------------------------------------------
    def complete(self, req: Request) -> None:
        req.done = True
        if req.watched:
            req.watched = False
            n = self.n_wait - 1
            self.n_wait = n
            if n == 0:
                self.proc.resume(req)

    def wait1(self, req: Request) -> None:
        """Block the rank (the calling process) until ``req`` completes."""
        req.watched = True
        self.n_wait = 1
        proc = self.proc
        self.waiting = req
        # The text is made only if a report needs it (see __str__): a rank waits once per
        # message, and a deadlock report is rare.
        proc.waiting_for = self
        proc.hibernate()
        self.waiting = None

    def _describe_all(self, reqs: list[Request]) -> str:
        pending = [r for r in reqs if not r.done]
        if len(pending) == 1:
            return self.coll + pending[0].describe()
        return self.coll + "waitall(" + "; ".join(r.describe() for r in pending) + ")"

    def wait_all(self, reqs: list[Request]) -> None:
        """Block until every request of ``reqs`` has completed."""
        n = 0
        for r in reqs:
            if not r.done:
                r.watched = True
                n += 1
        if n:
            self.n_wait = n
            self.waiting = reqs
            proc = self.proc
            proc.waiting_for = self
            proc.hibernate()
            self.waiting = None

    def wait_any(self, reqs: list[Request]) -> Request:
        """Block until one request of ``reqs`` completes; returns it."""
        for r in reqs:
            if r.done:
                return r
        for r in reqs:
            r.watched = True
        self.n_wait = 1
        self.waiting = tuple(reqs)
        proc = self.proc
        proc.waiting_for = self
        got = proc.hibernate()
        self.waiting = None
        for r in reqs:
            r.watched = False
        return got

    def poll(self) -> None:
        """An unsuccessful test or iprobe: ``poll_s`` seconds pass in the calling rank."""
        proc = self.proc
        if proc is None or getcurrent() is not proc:
            return  # inspected from outside the rank (e.g. after the run): nothing progresses
        t = self.poll_s
        self.sleeping_until = self.node.sim.now + t
        proc.waiting_for = "poll"
        proc.sleep(t)
        self.sleeping_until = -1.0

    def probe(self, comm: "Comm", ctx: int, src: int, tag: int) -> Status:
        """Block until a message (ctx, src, tag) accepts is waiting; returns its envelope."""
        st = self.peek(ctx, src, tag)
        if st is not None:
            return st
        self.probing = (ctx, src, tag)
        s = "ANY_SOURCE" if src == ANY_SOURCE else src
        t = "ANY_TAG" if tag == ANY_TAG else tag
        self._probe_text = f"probe(source={s}, tag={t}, comm={comm.name})"
        self.proc.waiting_for = self
        self.waiting = "probe"
        st = self.proc.hibernate()
        self.waiting = None
        return st

    def blocked_on(self) -> str:
        """What this rank is blocked on (for reports after a run), prefixed with the
        collective in progress. For a waitall it lists the requests still pending now."""
        if self.done:
            return "finished"
        w = self.waiting
        if w is None:
            if self.sleeping_until >= 0:
                return f"compute (until t={self.sleeping_until!r})"
            return "running"
        if isinstance(w, Request):
            return self.coll + w.describe()
        if isinstance(w, list):
            return self._describe_all(w)
        if isinstance(w, tuple):
            return self.coll + "waitany(" + "; ".join(r.describe() for r in w) + ")"
        return self._probe_text

    def __str__(self) -> str:
        # A blocked rank's Process.waiting_for is its endpoint: the text is made on demand.
        return self.blocked_on()
