"""Communicators: the MPI handle an app's rank sees (``mpi``) and the ones it derives.

An app function receives ``mpi``, the rank's world communicator. Every communicator offers
blocking point-to-point calls, collectives, communicator construction and the rank's
compute, clock and random streams::

    def app(mpi, *, nbytes=1024):
        right = (mpi.rank + 1) % mpi.size
        left = (mpi.rank - 1) % mpi.size
        st = mpi.sendrecv(right, nbytes, source=left)    # blocks, returns the status
        total = mpi.allreduce(8, data=mpi.rank)          # MPICH's algorithm for 8 bytes
        mpi.compute(flops=1e9, bytes=1e8)                # roofline time of the node model

Sizes are bytes; ``data`` payloads are optional Python objects carried along (small: they
are not copied or pickled within a run, only across parallel ranks). Ranks are ranks in the
communicator; ``PROC_NULL`` as a peer makes a call a no-op. Derived communicators
(:meth:`Comm.comm_split`, :meth:`Comm.dup`, :meth:`Comm.cart_create`, :meth:`CartComm.cart_sub`)
are collective over the parent and cost the messages MPICH would send (an allgather of
(color, key) for a split and an allreduce of a 256-byte context-id mask for every new
communicator).
"""

from __future__ import annotations

import hashlib
import math
import random
from typing import Any, Sequence

import numpy as np

from pdes.validate import is_int

from ..errors import MpiError
from . import collectives as coll
from .collectives.base import check_list, check_nbytes, resolve_op
from .p2p import ANY_SOURCE, ANY_TAG, PROC_NULL, RECV, Endpoint, Request, Status

__all__ = ["CartComm", "Comm", "dims_create", "HALO_TAG"]

#: Bytes of the allreduce that agrees on a new communicator's context id (MPICH's mask of
#: 2,048 context ids).
CTX_MASK_BYTES = 256
#: Bytes per rank of comm_split's allgather of (color, key).
SPLIT_BYTES = 8
#: First tag used by :meth:`CartComm.halo_exchange` (2 tags per dimension from here).
HALO_TAG = 1 << 20
_INF = math.inf


def derive_seed(*parts: Any) -> int:
    """A 128-bit seed derived from ``parts`` (the run seed and names of a stream): the same
    parts give the same seed on every rank and every run."""
    h = hashlib.blake2b(("simhpc-apps:" + ":".join(map(str, parts))).encode(), digest_size=16).digest()
    return int.from_bytes(h, "little")


def _derive_ctx(ctx: int, seq: int, what: str) -> int:
    """Context id of the seq-th communicator derived from ``ctx`` (even; +1 is its collective
    context). Every member computes the same id without communication."""
    h = hashlib.blake2b(f"{ctx}:{seq}:{what}".encode(), digest_size=8).digest()
    return (int.from_bytes(h, "little") >> 2) << 1


def _as_int(x: Any, what: str) -> int:
    if is_int(x):
        return int(x)
    raise MpiError(f"{what} must be an integer, got {x!r}")


def dims_create(nnodes: int, ndims: int) -> tuple[int, ...]:
    """A balanced grid of ``ndims`` dimensions with ``nnodes`` cells, largest first
    (MPI_Dims_create with no constraints)."""
    if not (isinstance(nnodes, int) and nnodes >= 1 and isinstance(ndims, int) and ndims >= 1):
        raise ValueError(f"dims_create needs nnodes >= 1 and ndims >= 1, got {nnodes!r}, {ndims!r}")
    factors = []
    n = nnodes
    f = 2
    while f * f <= n:
        while n % f == 0:
            factors.append(f)
            n //= f
        f += 1
    if n > 1:
        factors.append(n)
    dims = [1] * ndims
    for f in sorted(factors, reverse=True):
        i = dims.index(min(dims))
        dims[i] *= f
    return tuple(sorted(dims, reverse=True))


class Comm:
    """A communicator as seen by one rank (the world communicator is the app's ``mpi``).

    Attributes:
        rank: this rank's rank in the communicator.
        size: the number of ranks.
        name: a label used in reports ("world", "split#1", "cart(4, 4)").
    """

    __slots__ = ("_ep", "rank", "size", "_ranks", "_ctx", "_cctx", "name", "_nsub")
    #: The classes of derived communicators (a recording subclass keeps its own kind).
    _comm_cls: type["Comm"]
    _cart_cls: type["CartComm"]

    def __init__(self, ep: Endpoint, rank: int, size: int, ranks: tuple[int, ...] | None, ctx: int, name: str):
        self._ep = ep
        self.rank = rank
        self.size = size
        self._ranks = ranks  # world rank of every member; None for the identity (world)
        self._ctx = ctx
        self._cctx = ctx + 1
        self.name = name
        self._nsub = 0

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} rank {self.rank}/{self.size} job {self._ep.job}>"

    # -- identity, time, randomness -----------------------------------------------------------
    @property
    def world_rank(self) -> int:
        """This rank's rank in the job's world communicator."""
        return self._ep.w

    def to_world(self, rank: int) -> int:
        """The world rank of ``rank`` of this communicator."""
        return rank if self._ranks is None else self._ranks[rank]

    @property
    def group(self) -> tuple[int, ...]:
        """World ranks of the members, in communicator order."""
        return tuple(range(self.size)) if self._ranks is None else self._ranks

    @property
    def world(self) -> "Comm":
        """The job's world communicator."""
        return self._ep.world

    @property
    def job(self) -> int:
        """The job id."""
        return self._ep.job

    @property
    def node(self) -> int:
        """The node this rank runs on."""
        return self._ep.node.node

    @property
    def ranks_on_node(self) -> int:
        """How many ranks of this job share this rank's node."""
        return self._ep.js.ranks_here

    @property
    def topology(self) -> Any:
        """The machine's network topology (a :class:`models.topology.Topology`, read-only),
        for topology-aware apps: coordinates, groups, link bandwidths."""
        return self._ep.node.net.topology

    @property
    def now(self) -> float:
        """The current simulated time in seconds."""
        return self._ep.node.sim.now

    def wtime(self) -> float:
        """MPI_Wtime: the simulated time in seconds."""
        return self._ep.node.sim.now

    @property
    def rng(self) -> random.Random:
        """This rank's random stream, derived from the run seed, the job id and the world rank."""
        ep = self._ep
        r = ep._rng
        if r is None:
            r = ep._rng = random.Random(derive_seed(ep.node.sim.seed, "rank", ep.job, ep.w))
        return r

    def job_rng(self, stream: str = "") -> random.Random:
        """A new random stream shared by the whole job: every rank that asks for the same
        ``stream`` gets the same draws (so ranks can agree without communicating)."""
        ep = self._ep
        return random.Random(derive_seed(ep.node.sim.seed, "job", ep.job, stream))

    # -- compute ------------------------------------------------------------------------------
    def compute(self, seconds: float | None = None, *, flops: float | None = None, bytes: float | None = None) -> None:
        """Compute for ``seconds``, or for the roofline time of ``flops`` and ``bytes`` on this
        node (:class:`models.node_model.NodeModel`, memory bandwidth shared by the job's ranks
        on the node)."""
        ep = self._ep
        if seconds is not None:
            if flops is not None or bytes is not None:
                raise MpiError("compute(): give either seconds= or flops=/bytes=, not both")
            t = seconds
            if not (isinstance(t, (int, float, np.integer, np.floating)) and t >= 0 and math.isfinite(t)):
                raise MpiError(f"compute(seconds={seconds!r}): the duration must be a finite number >= 0")
        else:
            if flops is None and bytes is None:
                raise MpiError("compute() needs seconds= or flops= and/or bytes=")
            t = ep.js.node_model.compute_time(flops or 0.0, bytes or 0.0, ep.js.ranks_here)
        if t > 0:
            proc = ep.proc
            ep.sleeping_until = ep.node.sim.now + t
            proc.waiting_for = "compute"
            proc.sleep(t)
            ep.sleeping_until = -1.0

    # -- point-to-point -------------------------------------------------------------------------
    def _peer(self, r: Any, what: str) -> int:
        if r.__class__ is not int:
            r = _as_int(r, what)
        if not 0 <= r < self.size:
            if r == PROC_NULL:
                return r
            raise MpiError(f"{what} {r} is not a rank of communicator {self.name} (size {self.size})")
        return r

    def _src(self, r: Any) -> int:
        if r.__class__ is not int:
            r = _as_int(r, "source")
        if not 0 <= r < self.size and r != ANY_SOURCE and r != PROC_NULL:
            raise MpiError(f"source {r} is not a rank of communicator {self.name} (size {self.size}) nor ANY_SOURCE")
        return r

    @staticmethod
    def _tag(tag: Any, recv: bool) -> int:
        if tag.__class__ is not int:
            tag = _as_int(tag, "tag")
        if tag < 0 and not (recv and tag == ANY_TAG):
            raise MpiError(f"tag must be >= 0{' or ANY_TAG' if recv else ''}, got {tag}")
        return tag

    def _null(self, kind: int, peer: int, tag: int) -> Request:
        req = Request(self._ep, kind, self, self._ctx, peer, tag, 0, None)
        req.source = PROC_NULL
        req.done = True
        return req

    def send(self, dest: int, nbytes: float = 0, tag: int = 0, data: Any = None) -> None:
        """Blocking send of ``nbytes`` to ``dest`` (returns at once below the eager threshold;
        above it, once the receiver has matched and the data has left)."""
        dest = self._peer(dest, "dest")
        tag = self._tag(tag, False)
        c = nbytes.__class__
        if not ((c is int and nbytes >= 0) or (c is float and 0.0 <= nbytes < _INF)):
            check_nbytes("send", nbytes)
        if dest == PROC_NULL:
            return
        ep = self._ep
        ranks = self._ranks
        req = ep.send(self, self._ctx, self.rank, dest, dest if ranks is None else ranks[dest], nbytes, tag, data, False)
        if req is not None:
            ep.wait1(req)

    def isend(self, dest: int, nbytes: float = 0, tag: int = 0, data: Any = None) -> Request:
        """Start a send; returns its request."""
        dest = self._peer(dest, "dest")
        tag = self._tag(tag, False)
        c = nbytes.__class__
        if not ((c is int and nbytes >= 0) or (c is float and 0.0 <= nbytes < _INF)):
            check_nbytes("isend", nbytes)
        if dest == PROC_NULL:
            return self._null(0, dest, tag)
        ranks = self._ranks
        return self._ep.send(self, self._ctx, self.rank, dest, dest if ranks is None else ranks[dest], nbytes, tag, data, True)

    def recv(self, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        """Blocking receive; returns the completed request, which is the status (``source``,
        ``tag``, ``nbytes``, ``data``)."""
        source = self._src(source)
        tag = self._tag(tag, True)
        if source == PROC_NULL:
            return self._null(RECV, source, tag)
        ep = self._ep
        req = ep.recv(self, self._ctx, source, tag)
        if not req.done:
            ep.wait1(req)
        return req

    def irecv(self, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        """Post a receive; returns its request."""
        source = self._src(source)
        tag = self._tag(tag, True)
        if source == PROC_NULL:
            return self._null(RECV, source, tag)
        return self._ep.recv(self, self._ctx, source, tag)

    def wait(self, req: Request) -> Request:
        """Block until ``req`` completes; returns it (the status)."""
        if not req.done:
            self._ep.wait1(req)
        return req

    def waitall(self, reqs: Sequence[Request]) -> list[Request]:
        """Block until every request completes; returns them."""
        reqs = list(reqs)
        self._ep.wait_all(reqs)
        return reqs

    def waitany(self, reqs: Sequence[Request]) -> tuple[int, Request]:
        """Block until one request completes; returns (its index, it). The first completed
        request in list order wins when several already have."""
        reqs = list(reqs)
        if not reqs:
            raise MpiError("waitany() needs at least one request")
        r = self._ep.wait_any(reqs)
        return reqs.index(r), r

    def test(self, req: Request) -> bool:
        """True once ``req`` has completed; an unsuccessful test takes the job's poll time
        (see :meth:`Request.test`), so a polling loop ends."""
        return req.done or req.test()

    def sendrecv(self, dest: int, nbytes: float = 0, *, source: int | None = None, tag: int = 0,
                 recvtag: int | None = None, data: Any = None) -> Request:
        """Send to ``dest`` and receive from ``source`` (default: ``dest``) at the same time;
        returns the receive status. ``recvtag`` defaults to ``tag``."""
        # irecv then isend, inlined: an eager send makes no request here. The checks of
        # _src, _tag and _peer in their order, their calls only for what they may refuse or
        # convert (a plain rank or tag passes as it is).
        size = self.size
        if source is None:
            source = dest
        if not (source.__class__ is int and 0 <= source < size):
            source = self._src(source)
        if recvtag is None:
            recvtag = tag
        if not (recvtag.__class__ is int and recvtag >= 0):
            recvtag = self._tag(recvtag, True)
        if not (dest.__class__ is int and 0 <= dest < size):
            dest = self._peer(dest, "dest")
        if not (tag.__class__ is int and tag >= 0):
            tag = self._tag(tag, False)
        c = nbytes.__class__
        if not ((c is int and nbytes >= 0) or (c is float and 0.0 <= nbytes < _INF)):
            check_nbytes("isend", nbytes)
        ep = self._ep
        rreq = self._null(RECV, source, recvtag) if source == PROC_NULL else ep.recv(self, self._ctx, source, recvtag)
        sreq = None
        if dest != PROC_NULL:
            ranks = self._ranks
            sreq = ep.send(self, self._ctx, self.rank, dest, dest if ranks is None else ranks[dest], nbytes, tag, data, False)
        if sreq is None:
            if not rreq.done:
                ep.wait1(rreq)
        elif not (rreq.done and sreq.done):
            ep.wait_all([rreq, sreq])
        return rreq

    def probe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Status:
        """Block until a matching message has arrived; returns its envelope without receiving it."""
        source = self._src(source)
        tag = self._tag(tag, True)
        if source == PROC_NULL:
            return Status(PROC_NULL, ANY_TAG, 0)
        return self._ep.probe(self, self._ctx, source, tag)

    def iprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Status | None:
        """The envelope of a matching message that has arrived, or None (never blocks). An
        unsuccessful iprobe takes the job's poll time and looks again, so a polling loop ends."""
        source = self._src(source)
        tag = self._tag(tag, True)
        if source == PROC_NULL:
            return Status(PROC_NULL, ANY_TAG, 0)
        ep = self._ep
        st = ep.peek(self._ctx, source, tag)
        if st is None:
            ep.poll()
            st = ep.peek(self._ctx, source, tag)
        return st

    # -- collectives ------------------------------------------------------------------------------
    def _run(self, what: str, name: str, nbytes: Any, fn: Any, *args: Any) -> Any:
        ep = self._ep
        prev = ep.coll
        ep.coll = f"{what}({name}, {nbytes} bytes, comm={self.name}): "
        out = fn(self, *args)
        ep.coll = prev
        return out

    def _root(self, root: Any) -> int:
        r = self._peer(root, "root")
        if r == PROC_NULL:
            raise MpiError(f"root must be a rank of communicator {self.name}, got PROC_NULL")
        return r

    def barrier(self, *, algorithm: str | None = None) -> None:
        """Block until every rank of the communicator has entered the barrier."""
        name, fn = coll.pick(self, "barrier", 0, algorithm)
        self._run("barrier", name, 0, fn)

    def bcast(self, nbytes: float, root: int = 0, data: Any = None, *, algorithm: str | None = None) -> Any:
        """Broadcast ``nbytes`` (and ``data``) from ``root``; returns the root's data."""
        check_nbytes("bcast", nbytes)
        root = self._root(root)
        name, fn = coll.pick(self, "bcast", nbytes, algorithm)
        return self._run("bcast", name, nbytes, fn, nbytes, root, data if self.rank == root else None)

    def reduce(self, nbytes: float, root: int = 0, data: Any = None, op: Any = "sum", *, algorithm: str | None = None) -> Any:
        """Reduce ``nbytes`` per rank to ``root`` with ``op``; returns the result at the root,
        None elsewhere."""
        check_nbytes("reduce", nbytes)
        root = self._root(root)
        f, builtin = resolve_op(op)
        name, fn = coll.pick(self, "reduce", nbytes, algorithm, builtin)
        return self._run("reduce", name, nbytes, fn, nbytes, root, data, f)

    def allreduce(self, nbytes: float, data: Any = None, op: Any = "sum", *, algorithm: str | None = None) -> Any:
        """Reduce ``nbytes`` per rank with ``op`` and give every rank the result."""
        check_nbytes("allreduce", nbytes)
        f, builtin = resolve_op(op)
        name, fn = coll.pick(self, "allreduce", nbytes, algorithm, builtin)
        return self._run("allreduce", name, nbytes, fn, nbytes, data, f)

    def gather(self, nbytes: float, root: int = 0, data: Any = None, *, algorithm: str | None = None) -> list | None:
        """Gather ``nbytes`` from every rank at ``root``; returns the list of data there."""
        check_nbytes("gather", nbytes)
        root = self._root(root)
        name, fn = coll.pick(self, "gather", nbytes, algorithm)
        return self._run("gather", name, nbytes, fn, nbytes, root, data)

    def scatter(self, nbytes: float, root: int = 0, data: Sequence[Any] | None = None, *, algorithm: str | None = None) -> Any:
        """Send ``nbytes`` to every rank from ``root`` (``data``: the root's list, one item per
        rank); returns this rank's item."""
        check_nbytes("scatter", nbytes)
        root = self._root(root)
        items = check_list("scatter", data, self.size) if (self.rank == root and data is not None) else None
        name, fn = coll.pick(self, "scatter", nbytes, algorithm)
        return self._run("scatter", name, nbytes, fn, nbytes, root, items)

    def allgather(self, nbytes: float, data: Any = None, *, algorithm: str | None = None) -> list:
        """Gather ``nbytes`` from every rank at every rank; returns the list of data."""
        check_nbytes("allgather", nbytes)
        name, fn = coll.pick(self, "allgather", nbytes, algorithm)
        return self._run("allgather", name, nbytes, fn, nbytes, data)

    def alltoall(self, nbytes: float, data: Sequence[Any] | None = None, *, algorithm: str | None = None) -> list:
        """Send ``nbytes`` to every rank (``data``: one item per destination); returns the
        items received, one per source."""
        check_nbytes("alltoall", nbytes)
        items = check_list("alltoall", data, self.size)
        name, fn = coll.pick(self, "alltoall", nbytes, algorithm)
        return self._run("alltoall", name, nbytes, fn, nbytes, items)

    def alltoallv(self, send_bytes: Sequence[float], data: Sequence[Any] | None = None, *,
                  recv_bytes: Sequence[float] | None = None, algorithm: str | None = None) -> list:
        """All-to-all with ``send_bytes[j]`` bytes for rank j. With ``recv_bytes`` (what every
        source sends here, as in MPI) pairs of size zero exchange no message; without it
        every pair exchanges one (possibly empty) message."""
        p = self.size
        sizes = list(send_bytes)
        if len(sizes) != p:
            raise MpiError(f"alltoallv: send_bytes needs one size per rank ({p}), got {len(sizes)}")
        for s in sizes:
            check_nbytes("alltoallv", s)
        rs = None
        if recv_bytes is not None:
            rs = list(recv_bytes)
            if len(rs) != p:
                raise MpiError(f"alltoallv: recv_bytes needs one size per rank ({p}), got {len(rs)}")
        items = check_list("alltoallv", data, p)
        name, fn = coll.pick(self, "alltoallv", sum(sizes), algorithm)
        return self._run("alltoallv", name, sum(sizes), fn, sizes, items, rs)

    def reduce_scatter(self, counts: float | Sequence[float], data: Sequence[Any] | None = None, op: Any = "sum", *,
                       algorithm: str | None = None) -> Any:
        """Reduce a buffer of ``sum(counts)`` bytes and leave block i (``counts[i]`` bytes;
        one number: the same for every rank) on rank i. ``data``: one item per rank; returns
        this rank's reduced item."""
        p = self.size
        if isinstance(counts, (list, tuple, np.ndarray)):
            counts = list(counts)
            if len(counts) != p:
                raise MpiError(f"reduce_scatter: counts needs one size per rank ({p}), got {len(counts)}")
            for c in counts:
                check_nbytes("reduce_scatter", c)
            total = sum(counts)
            if len(set(counts)) == 1:
                counts = counts[0]
        else:
            check_nbytes("reduce_scatter", counts)
            total = counts * p
        items = check_list("reduce_scatter", data, p)
        f, _ = resolve_op(op)
        name, fn = coll.pick(self, "reduce_scatter", total, algorithm)
        return self._run("reduce_scatter", name, total, fn, counts, items, f)

    # -- communicators ------------------------------------------------------------------------------
    def group_comm(self, members: Sequence[int], key: Any, name: str = "") -> "Comm | None":
        """A communicator of the world ranks ``members`` (in that order), made without any
        communication: every member that asks with the same ``key`` gets the same context
        (None for a rank not in ``members``). Trace replay uses it, since a trace replays the
        cost of creating its communicators from its own records."""
        ranks = tuple(int(r) for r in members)
        w = self._ep.w
        if w not in ranks:
            return None
        ctx = _derive_ctx(self._ep.world._ctx, 0, f"group:{key}")
        return self._comm_cls(self._ep, ranks.index(w), len(ranks), ranks, ctx, name or f"group({key})")

    def shared_cache(self, key: Any, make: Any) -> Any:
        """A read-only value shared by all ranks of all jobs in this simulation process:
        ``make()`` runs for the first rank that asks for ``key`` (e.g. a parsed trace that
        several jobs replay), the others get its result."""
        cache = self._ep.node.shared.cache
        v = cache.get(key)
        if v is None:
            v = cache[key] = make()
        return v

    def _new_ctx(self, what: str) -> int:
        """Agree on a new context id (an allreduce of the context mask, as MPICH does)."""
        self.allreduce(CTX_MASK_BYTES, algorithm=None)
        seq = self._nsub
        self._nsub = seq + 1
        return _derive_ctx(self._ctx, seq, what)

    def _split_groups(self, color: Any, key: int) -> tuple[int, dict[Any, tuple[int, ...]]]:
        pairs = self.allgather(SPLIT_BYTES, data=(color, key))
        ctx = self._new_ctx("split")
        cache = self._ep.node.shared.groups
        ck = (self._ep.job, ctx)
        groups = cache.get(ck)
        if groups is None:
            members: dict[Any, list[tuple[int, int]]] = {}
            for r, (c, k) in enumerate(pairs):
                if c is not None:
                    members.setdefault(c, []).append((k, r))
            groups = {c: tuple(self.to_world(r) for _, r in sorted(m)) for c, m in members.items()}
            cache[ck] = groups
        return ctx, groups

    def comm_split(self, color: int | None, key: int = 0) -> "Comm | None":
        """Split into one communicator per ``color`` (ranks ordered by ``key``, then rank);
        ``color=None`` (MPI_UNDEFINED) gives None. Collective."""
        if color is not None:
            color = _as_int(color, "color")
            if color < 0:
                raise MpiError(f"color must be >= 0 or None (MPI_UNDEFINED), got {color}")
        key = _as_int(key, "key")
        ctx, groups = self._split_groups(color, key)
        if color is None:
            return None
        ranks = groups[color]
        me = ranks.index(self._ep.w)
        ctx = _derive_ctx(ctx, color, "color")
        return self._comm_cls(self._ep, me, len(ranks), ranks, ctx, f"split({self.name}, color={color})")

    def dup(self) -> "Comm":
        """A communicator with the same ranks and a new context. Collective."""
        ctx = self._new_ctx("dup")
        return self._comm_cls(self._ep, self.rank, self.size, self._ranks, ctx, f"dup({self.name})")

    def cart_create(self, dims: Sequence[int], periods: Sequence[bool] | bool = True, reorder: bool = False) -> "CartComm | None":
        """A Cartesian communicator of the first prod(dims) ranks (row-major coordinates:
        the last dimension varies fastest); other ranks get None. ``periods``: one flag per
        dimension or one for all (default periodic). Collective."""
        try:
            dims = tuple(int(d) for d in dims)
        except (TypeError, ValueError):
            raise MpiError(f"cart_create: dims must be a sequence of integers, got {dims!r}") from None
        if not dims or any(d < 1 for d in dims):
            raise MpiError(f"cart_create: dims must be integers >= 1, got {dims}")
        n = math.prod(dims)
        if n > self.size:
            raise MpiError(f"cart_create: a {'x'.join(map(str, dims))} grid needs {n} ranks, "
                           f"communicator {self.name} has {self.size}")
        if isinstance(periods, (bool, np.bool_)):
            periods = (bool(periods),) * len(dims)
        else:
            periods = tuple(bool(x) for x in periods)
            if len(periods) != len(dims):
                raise MpiError(f"cart_create: periods needs one flag per dimension ({len(dims)}), got {len(periods)}")
        ctx = self._new_ctx("cart")
        if self.rank >= n:
            return None
        if n == self.size:
            ranks = self._ranks
        else:
            ranks = tuple(self.to_world(r) for r in range(n))
        return self._cart_cls(self._ep, self.rank, n, ranks, ctx, f"cart{dims}", dims, periods)


class CartComm(Comm):
    """A communicator with a Cartesian process grid (``dims``, ``periods``, ``coords``)."""

    __slots__ = ("dims", "periods", "coords", "_strides")

    def __init__(self, ep: Endpoint, rank: int, size: int, ranks: tuple[int, ...] | None, ctx: int, name: str,
                 dims: tuple[int, ...], periods: tuple[bool, ...]):
        super().__init__(ep, rank, size, ranks, ctx, name)
        self.dims = dims
        self.periods = periods
        strides = [1] * len(dims)
        for i in range(len(dims) - 2, -1, -1):
            strides[i] = strides[i + 1] * dims[i + 1]
        self._strides = tuple(strides)
        self.coords = self.cart_coords(rank)

    @property
    def ndims(self) -> int:
        return len(self.dims)

    def cart_coords(self, rank: int | None = None) -> tuple[int, ...]:
        """Coordinates of ``rank`` (default: this rank)."""
        r = self.rank if rank is None else rank
        return tuple((r // s) % d for s, d in zip(self._strides, self.dims))

    def cart_rank(self, coords: Sequence[int]) -> int:
        """The rank at ``coords``; periodic dimensions wrap, others give PROC_NULL off the grid."""
        if len(coords) != len(self.dims):
            raise MpiError(f"cart_rank: expected {len(self.dims)} coordinates, got {len(coords)}")
        r = 0
        for c, d, s, per in zip(coords, self.dims, self._strides, self.periods):
            if not 0 <= c < d:
                if not per:
                    return PROC_NULL
                c %= d
            r += c * s
        return r

    def cart_shift(self, direction: int, disp: int = 1) -> tuple[int, int]:
        """(source, dest) for a shift by ``disp`` along dimension ``direction`` (MPI_Cart_shift):
        dest is ``disp`` ahead, source ``disp`` behind; PROC_NULL off a non-periodic edge."""
        if not 0 <= direction < len(self.dims):
            raise MpiError(f"cart_shift: direction must be 0..{len(self.dims) - 1}, got {direction}")
        c = list(self.coords)
        base = c[direction]
        c[direction] = base + disp
        dest = self.cart_rank(c)
        c[direction] = base - disp
        src = self.cart_rank(c)
        return src, dest

    def cart_sub(self, remain_dims: Sequence[bool]) -> "CartComm":
        """The sub-grid communicator along the dimensions with ``remain_dims[i]`` true (one per
        slice of the other dimensions). Collective."""
        keep = tuple(bool(x) for x in remain_dims)
        if len(keep) != len(self.dims):
            raise MpiError(f"cart_sub: remain_dims needs one flag per dimension ({len(self.dims)}), got {len(keep)}")
        color = 0
        key = 0
        for c, d, k in zip(self.coords, self.dims, keep):
            if k:
                key = key * d + c
            else:
                color = color * d + c
        ctx, groups = self._split_groups(color, key)
        ranks = groups[color]
        me = ranks.index(self._ep.w)
        ctx = _derive_ctx(ctx, color, "color")
        dims = tuple(d for d, k in zip(self.dims, keep) if k) or (1,)
        periods = tuple(p for p, k in zip(self.periods, keep) if k) or (False,)
        return self._cart_cls(self._ep, me, len(ranks), ranks, ctx, f"cart_sub({self.name}, {keep})", dims, periods)

    def halo_exchange(self, face_bytes: float | Sequence[float], *, tag: int = HALO_TAG, data: Any = None) -> list[Request]:
        """Exchange ``face_bytes`` (one number, or one per dimension) with both neighbours in
        every dimension, all at once (irecv all, isend all, wait all); returns the receives.
        Dimension d uses tags ``tag + 2d`` (towards +) and ``tag + 2d + 1`` (towards -)."""
        nd = len(self.dims)
        if isinstance(face_bytes, (list, tuple, np.ndarray)):
            fb = [float(x) if not isinstance(x, int) else x for x in face_bytes]
            if len(fb) != nd:
                raise MpiError(f"halo_exchange: face_bytes needs one size per dimension ({nd}), got {len(fb)}")
        else:
            fb = [face_bytes] * nd
        shifts = [self.cart_shift(d, 1) for d in range(nd)]
        recvs = []
        for d, (src, dst) in enumerate(shifts):
            recvs.append(self.irecv(src, tag + 2 * d))
            recvs.append(self.irecv(dst, tag + 2 * d + 1))
        sends = []
        for d, (src, dst) in enumerate(shifts):
            sends.append(self.isend(dst, fb[d], tag + 2 * d, data))
            sends.append(self.isend(src, fb[d], tag + 2 * d + 1, data))
        # Through waitall (not the endpoint) so that a recording communicator sees the wait.
        self.waitall(recvs + sends)
        return recvs


Comm._comm_cls = Comm
Comm._cart_cls = CartComm
