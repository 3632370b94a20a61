"""The abstract :class:`Topology`: nodes, routers and directed links as numpy arrays.

Vertex numbering is shared by every family: compute nodes are vertices ``0..n_nodes-1`` and
routers are vertices ``n_nodes..n_nodes+n_routers-1`` (router ``r`` is vertex
``n_nodes + r``). Links are directed; each has a source and destination vertex, a bandwidth
(bytes/s), a latency (s, > 0) and a kind (``KIND_*``). Every family numbers node ``i``'s
injection link ``i`` and its ejection link ``n_nodes + i``.

A route is a tuple of link ids from a source node to a destination node, injection first and
ejection last, ``()`` when source and destination are the same node. Routes are computed
arithmetically (no graph search) and cached per topology object.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import cached_property
from types import MappingProxyType
from typing import Any, Callable, ClassVar

import numpy as np

from pdes.validate import is_int

from ..errors import TopologyError
from .partition import partition_routers

KIND_INJECT = 0
KIND_EJECT = 1
KIND_LOCAL = 2
KIND_UP = 3
KIND_DOWN = 4
KIND_GLOBAL = 5
KIND_NAMES = ("inject", "eject", "local", "up", "down", "global")

# Pairs handled per vectorized step: bounds temporary memory of routes() and hop_matrix().
_CHUNK = 1 << 17
_HOP_CHUNK_ELEMS = 1 << 20
# Machines with at most this many routers that hold nodes keep their router-pair hop matrix
# (float64: 32 MiB at the limit) for pair_hop_sum; larger ones compute hops block by block.
_HOP_MATRIX_MAX_ROUTERS = 2048


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


class Topology(ABC):
    """A network of compute nodes and routers joined by directed links.

    Subclasses are frozen, keyword-only dataclasses whose ``__post_init__`` validates the
    parameters and calls :meth:`_init_arrays`. Attributes set there:

    ``n_nodes``, ``n_routers``, ``n_links``; ``node_router`` (int32, router index of each
    node); ``link_src``, ``link_dst`` (int32 vertex ids); ``link_bw`` (float64 bytes/s);
    ``link_lat`` (float64 s); ``link_kind`` (int8, ``KIND_*``).
    """

    name: ClassVar[str] = "topology"
    #: Routing algorithms the family accepts; the first is the default.
    ROUTINGS: ClassVar[tuple[str, ...]] = ()
    #: Routings whose decision reads port state (the transport calls :meth:`route_adaptive`).
    ADAPTIVE_ROUTINGS: ClassVar[tuple[str, ...]] = ()
    #: Routings whose route depends on ``key`` (the route cache is keyed by it).
    KEYED_ROUTINGS: ClassVar[tuple[str, ...]] = ()
    #: Adaptive routings that read the state of ports beyond the source router (an oracle):
    #: the packet model keeps the whole network on one rank for them, so that every port
    #: they read is local and results stay the same for any number of ranks.
    GLOBAL_STATE_ROUTINGS: ClassVar[tuple[str, ...]] = ()
    #: Adaptive routings decided again at every router, not only at the source: only the
    #: packet model with credit-based flow control runs them.
    PER_HOP_ROUTINGS: ClassVar[tuple[str, ...]] = ()

    routing: str
    n_nodes: int
    n_routers: int
    n_links: int
    node_router: np.ndarray
    link_src: np.ndarray
    link_dst: np.ndarray
    link_bw: np.ndarray
    link_lat: np.ndarray
    link_kind: np.ndarray

    # ------------------------------------------------------------------ construction
    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def _init_arrays(
        self,
        *,
        n_routers: int,
        node_router: np.ndarray,
        link_src: np.ndarray,
        link_dst: np.ndarray,
        link_bw: np.ndarray,
        link_lat: np.ndarray,
        link_kind: np.ndarray,
        cache_size: int,
    ) -> None:
        n_nodes = len(node_router)
        n_links = len(link_src)
        self._set("n_nodes", int(n_nodes))
        self._set("n_routers", int(n_routers))
        self._set("n_links", int(n_links))
        self._set("node_router", _readonly(np.ascontiguousarray(node_router, dtype=np.int32)))
        self._set("link_src", _readonly(np.ascontiguousarray(link_src, dtype=np.int32)))
        self._set("link_dst", _readonly(np.ascontiguousarray(link_dst, dtype=np.int32)))
        self._set("link_bw", _readonly(np.ascontiguousarray(link_bw, dtype=np.float64)))
        self._set("link_lat", _readonly(np.ascontiguousarray(link_lat, dtype=np.float64)))
        self._set("link_kind", _readonly(np.ascontiguousarray(link_kind, dtype=np.int8)))
        # Out-links of every vertex as CSR (link ids in increasing order per vertex).
        nv = n_nodes + n_routers
        order = np.argsort(self.link_src, kind="stable").astype(np.int32)
        ptr = np.zeros(nv + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.link_src, minlength=nv), out=ptr[1:])
        self._set("_out_ptr", _readonly(ptr))
        self._set("_out_idx", _readonly(order))
        if n_links and not (self.link_lat > 0).all():  # pragma: no cover - constructors check
            raise TopologyError(f"{type(self).__name__}: every link latency must be > 0")
        # Route cache: key (src, dst, key * kf); kf is 0 for routings that ignore key, so all
        # keys of a pair share one entry (a multiply works for every integer type).
        self._set("_rc", {})
        self._set("_rc_cap", int(cache_size))
        self._set("_kf", 1 if self.routing in self.KEYED_ROUTINGS else 0)

    def replace(self, **changes: Any) -> "Topology":
        """A new topology of the same family with some constructor parameters changed
        (e.g. ``topo.replace(routing="ecmp")``). Use this rather than
        ``dataclasses.replace``, which cannot see the unit-bearing init-only parameters."""
        return type(self)(**{**self._init_kwargs, **changes})

    @property
    def constructor_params(self) -> MappingProxyType:
        """The checked constructor parameters that rebuild this topology (units resolved to
        numbers), read-only: ``type(topo)(**topo.constructor_params)`` is an equal topology."""
        return MappingProxyType(self._init_kwargs)

    # ------------------------------------------------------------------ argument checks
    def _node(self, v: Any, what: str) -> int:
        if not is_int(v):
            raise TopologyError(f"{self.name}: {what} must be a node id (int), got {v!r}")
        v = int(v)
        if not 0 <= v < self.n_nodes:
            raise TopologyError(f"{self.name}: {what} {v} is not a node; valid: 0..{self.n_nodes - 1}")
        return v

    def _nodes(self, v: Any, what: str) -> np.ndarray:
        a = np.asarray(v)
        if a.dtype == bool or not (np.issubdtype(a.dtype, np.integer) or a.size == 0):
            raise TopologyError(f"{self.name}: {what} must be integer node ids, got dtype {a.dtype}")
        a = a.astype(np.int64, copy=False).reshape(-1)
        if a.size and (a.min() < 0 or a.max() >= self.n_nodes):
            bad = int(a.min()) if a.min() < 0 else int(a.max())
            raise TopologyError(f"{self.name}: {what} contains {bad}, not a node; valid: 0..{self.n_nodes - 1}")
        return a

    # ------------------------------------------------------------------ routing
    @property
    def is_adaptive(self) -> bool:
        """Whether the selected routing reads port state (use :meth:`route_adaptive`)."""
        return self.routing in self.ADAPTIVE_ROUTINGS

    def route(self, src: int, dst: int, key: int = 0) -> tuple[int, ...]:
        """Directed link ids from node ``src`` to node ``dst`` (injection first, ejection last).

        ``key`` (e.g. a message id) deterministically selects among alternative paths for
        routings that have them (ECMP, Valiant); the same (src, dst, key) always gives the
        same route. Cached: a repeated call is one dict lookup.
        """
        try:
            r = self._rc.get((src, dst, key * self._kf))
        except TypeError:  # a key that does not multiply: _route_miss reports it
            r = None
        if r is None:
            r = self._route_miss(src, dst, key)
        return r

    def _route_miss(self, src: Any, dst: Any, key: Any) -> tuple[int, ...]:
        s = self._node(src, "src")
        d = self._node(dst, "dst")
        if not is_int(key):
            raise TopologyError(f"{self.name}: route key must be an integer, got {key!r}")
        k = int(key)
        r = self._route1(s, d, k) if s != d else ()
        c = self._rc
        if len(c) >= self._rc_cap:
            # Routes are pure functions of their arguments, so dropping the cache changes
            # speed only; clearing keeps every hit a plain dict lookup.
            c.clear()
        c[(s, d, k * self._kf)] = r
        return r

    def route_uncached(self, src: int, dst: int) -> tuple[int, ...]:
        """:meth:`route` with key 0, neither read from nor kept in the route cache: for
        callers that keep routes themselves (the ideal network model caches whole paths)."""
        n = self.n_nodes
        if not (src.__class__ is int and dst.__class__ is int and 0 <= src < n and 0 <= dst < n):
            src = self._node(src, "src")
            dst = self._node(dst, "dst")
        return self._route1(src, dst, 0) if src != dst else ()

    def route_summary(self, src: int, dst: int) -> tuple[int, float, int] | None:
        """What the ideal network model needs of :meth:`route_uncached` ``(src, dst)`` for
        two different nodes, without building the route: (its number of links, the smallest
        bandwidth among them, its ejection link). None where the topology cannot tell it
        more cheaply than the route itself (the caller then builds the route)."""
        return None

    @property
    def route_cache_size(self) -> int:
        """The most routes cached at once (the cache empties when full)."""
        return self._rc_cap

    def clear_route_cache(self) -> None:
        """Forget every cached route."""
        self._rc.clear()

    def routes(self, srcs: Any, dsts: Any, keys: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Vectorized :meth:`route` for many pairs, as CSR.

        Returns ``(offsets, links)``: pair ``i`` takes ``links[offsets[i]:offsets[i+1]]``;
        ``offsets`` is int64 of length ``n + 1``, ``links`` int32. Identical to calling
        :meth:`route` pair by pair (for adaptive routings: the zero-load decision).
        """
        s = self._nodes(srcs, "srcs")
        d = self._nodes(dsts, "dsts")
        if s.shape != d.shape:
            raise TopologyError(f"{self.name}: srcs and dsts must have the same length, got {len(s)} and {len(d)}")
        if keys is None:
            k = np.zeros(len(s), dtype=np.int64)
        else:
            k = np.asarray(keys)
            if k.dtype == bool or not (np.issubdtype(k.dtype, np.integer) or k.size == 0):
                raise TopologyError(f"{self.name}: keys must be integers, got dtype {k.dtype}")
            if k.ndim == 0:
                k = np.full(len(s), int(k), dtype=np.int64)
            else:
                k = k.astype(np.int64, copy=False).reshape(-1)
                if k.shape != s.shape:
                    raise TopologyError(f"{self.name}: keys must be one integer or one per pair ({len(s)}), got {len(k)}")
        lens, parts = [], []
        for i in range(0, len(s), _CHUNK):
            ln, lk = self._routes_vec(s[i : i + _CHUNK], d[i : i + _CHUNK], k[i : i + _CHUNK])
            lens.append(ln)
            parts.append(lk.astype(np.int32, copy=False))
        offsets = np.zeros(len(s) + 1, dtype=np.int64)
        if lens:
            np.cumsum(np.concatenate(lens), out=offsets[1:])
        links = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
        return offsets, links

    def route_adaptive(self, src: int, dst: int, key: int, backlog: Callable[[int], float]) -> tuple[int, ...]:
        """Route chosen at the source router from port state.

        ``backlog(link_id)`` returns the occupancy of an output port: queued seconds with
        unbounded buffers, bytes of credit in use plus bytes waiting for credit with
        ``buffers="credit"``, flows on the link in the flow model (only comparisons between
        ports matter). Local routings call it only for links leaving the source router; the
        routings of :attr:`GLOBAL_STATE_ROUTINGS` also for links further on. Oblivious
        routings ignore it and return :meth:`route`.
        """
        return self.route(src, dst, key)

    def hops(self, src: int, dst: int) -> int:
        """Router-to-router links on a minimal route (0 for nodes on the same router).

        For the minimal routings (D-mod-k, ECMP, dimension order, dragonfly minimal) this is
        the route's own count; for Valiant it is the minimal distance (``len(route) - 2``
        gives a particular route's count). On a fat-tree or torus it is the graph distance
        between the nodes' routers; on a dragonfly, minimal routes take at most one global
        link (Kim et al.), and a path through two global links is occasionally shorter.
        """
        return self._hops1(self._node(src, "src"), self._node(dst, "dst"))

    def hop_matrix(self, nodes: Any) -> np.ndarray:
        """Pairwise minimal inter-router hops among ``nodes`` (int32, n x n, zero diagonal)."""
        a = self._nodes(nodes, "nodes")
        n = len(a)
        out = np.empty((n, n), dtype=np.int32)
        rows = max(1, _HOP_CHUNK_ELEMS // max(n, 1))
        for i in range(0, n, rows):
            blk = a[i : i + rows]
            s = np.repeat(blk, n)
            d = np.tile(a, len(blk))
            out[i : i + len(blk)] = self._hops_vec(s, d).reshape(len(blk), n)
        return out

    def hops_many(self, srcs: Any, dsts: Any) -> np.ndarray:
        """Vectorized :meth:`hops` for pairs ``(srcs[i], dsts[i])`` (int32)."""
        s = self._nodes(srcs, "srcs")
        d = self._nodes(dsts, "dsts")
        if s.shape != d.shape:
            raise TopologyError(f"{self.name}: srcs and dsts must have the same length, got {len(s)} and {len(d)}")
        out = np.empty(len(s), dtype=np.int32)
        for i in range(0, len(s), _CHUNK):
            out[i : i + _CHUNK] = self._hops_vec(s[i : i + _CHUNK], d[i : i + _CHUNK])
        return out

    def pair_hop_sum(self, nodes: Any) -> int:
        """Sum of :meth:`hops` over the distinct unordered pairs of a set of distinct nodes.

        Families override this with closed forms over subtree, coordinate or router
        histograms, so that it stays fast for whole-machine node sets.
        """
        a = self._distinct_nodes(nodes)
        return self._pair_hop_sum_routers(a)

    def _distinct_nodes(self, nodes: Any) -> np.ndarray:
        a = self._nodes(nodes, "nodes")
        if len(np.unique(a)) != len(a):
            raise TopologyError(f"{self.name}: nodes must be distinct node ids")
        return a

    def _pair_hop_sum_routers(self, a: np.ndarray) -> int:
        # Aggregate nodes to routers (hops depend on routers only), then sum the weighted
        # router-pair hop matrix: cached for machines of up to _HOP_MATRIX_MAX_ROUTERS routers
        # with nodes (a log replay asks for 100,000 jobs: the hops of a pair are computed once),
        # otherwise in blocks. Every term is an integer below 2**53, so float64 sums are exact.
        routers, cnt = np.unique(self.node_router[a], return_counts=True)
        cached = self._router_hop_matrix
        if cached is not None:
            pos, hm = cached
            idx = pos[routers]
            c = cnt.astype(np.float64)
            if 4 * len(idx) * len(idx) <= len(hm) * len(hm):
                total = c @ hm[np.ix_(idx, idx)] @ c
            else:
                v = np.zeros(len(hm))
                v[idx] = c
                total = v @ (hm @ v)
            return int(total) // 2  # ordered pairs -> unordered; same-router pairs have 0 hops
        rep = self._router_rep[routers]
        total = 0
        n = len(rep)
        rows = max(1, _HOP_CHUNK_ELEMS // max(n, 1))
        for i in range(0, n, rows):
            blk = rep[i : i + rows]
            h = self._hops_vec(np.repeat(blk, n), np.tile(rep, len(blk))).reshape(len(blk), n).astype(np.int64)
            total += int((cnt[i : i + rows, None] * h * cnt[None, :]).sum())
        return total // 2  # ordered pairs -> unordered; same-router pairs have 0 hops

    @cached_property
    def _router_hop_matrix(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(position of each router among those with nodes, their hop matrix as float64), or
        None above _HOP_MATRIX_MAX_ROUTERS such routers."""
        rep = self._router_rep
        with_nodes = np.flatnonzero(rep >= 0)
        n = len(with_nodes)
        if n > _HOP_MATRIX_MAX_ROUTERS:
            return None
        pos = np.full(self.n_routers, -1, dtype=np.int64)
        pos[with_nodes] = np.arange(n)
        r = rep[with_nodes]
        hm = self._hops_vec(np.repeat(r, n), np.tile(r, n)).reshape(n, n).astype(np.float64)
        return pos, hm

    @cached_property
    def _router_rep(self) -> np.ndarray:
        """One node attached to each router (-1 for routers without nodes)."""
        rep = np.full(self.n_routers, -1, dtype=np.int64)
        rep[self.node_router[::-1]] = np.arange(self.n_nodes - 1, -1, -1)
        return rep

    # ------------------------------------------------------------------ structure
    def out_links(self, vertex: int) -> np.ndarray:
        """Link ids leaving ``vertex`` (a node id or ``n_nodes + router``), increasing."""
        v = self._vertex(vertex)
        return self._out_idx[self._out_ptr[v] : self._out_ptr[v + 1]]

    def in_links(self, vertex: int) -> np.ndarray:
        """Link ids entering ``vertex``, increasing."""
        v = self._vertex(vertex)
        return self._in_idx[self._in_ptr[v] : self._in_ptr[v + 1]]

    @cached_property
    def _in_csr(self) -> tuple[np.ndarray, np.ndarray]:
        nv = self.n_nodes + self.n_routers
        order = _readonly(np.argsort(self.link_dst, kind="stable").astype(np.int32))
        ptr = np.zeros(nv + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.link_dst, minlength=nv), out=ptr[1:])
        return _readonly(ptr), order

    @property
    def _in_ptr(self) -> np.ndarray:
        return self._in_csr[0]

    @property
    def _in_idx(self) -> np.ndarray:
        return self._in_csr[1]

    def _vertex(self, vertex: Any) -> int:
        nv = self.n_nodes + self.n_routers
        if not is_int(vertex) or not 0 <= int(vertex) < nv:
            raise TopologyError(f"{self.name}: vertex {vertex!r} out of range; valid: 0..{nv - 1}")
        return int(vertex)

    def router_vertex(self, router: int) -> int:
        """Vertex id of router index ``router``."""
        return self.n_nodes + int(router)

    @cached_property
    def router_nodes(self) -> np.ndarray:
        """Number of compute nodes attached to each router (int32)."""
        return _readonly(np.bincount(self.node_router, minlength=self.n_routers).astype(np.int32))

    @cached_property
    def diameter(self) -> int:
        """Largest minimal inter-router hop count between two nodes."""
        return int(self._diameter())

    @cached_property
    def _bisection(self) -> tuple[int, float]:
        links, bw = self._bisection_cut()
        return int(links), float(bw)

    @property
    def bisection_links(self) -> int:
        """Links crossing a minimum bisection, counted in one direction."""
        return self._bisection[0]

    @property
    def bisection_bandwidth(self) -> float:
        """Bandwidth across that bisection in one direction (bytes/s)."""
        return self._bisection[1]

    def partition(self, nranks: int) -> np.ndarray:
        """MPI rank of each router (int32): locality units kept whole where possible,
        balanced by attached node count. Deterministic."""
        return partition_routers(self.locality_units(), self.router_nodes, nranks)

    def links_by_kind(self) -> dict[str, dict[str, float]]:
        """Count, bandwidth and latency range of the links of each kind present."""
        out: dict[str, dict[str, float]] = {}
        for k, nm in enumerate(KIND_NAMES):
            m = self.link_kind == k
            if not m.any():
                continue
            bw, lat = self.link_bw[m], self.link_lat[m]
            out[nm] = {
                "count": int(m.sum()),
                "bw_min": float(bw.min()),
                "bw_max": float(bw.max()),
                "lat_min": float(lat.min()),
                "lat_max": float(lat.max()),
            }
        return out

    def describe(self) -> dict[str, Any]:
        """Summary used by ``simhpc machine``: sizes, diameter, bisection, links, routing."""
        units = self.locality_units()
        d: dict[str, Any] = {
            "family": self.name,
            "nodes": self.n_nodes,
            "routers": self.n_routers,
            "links": self.n_links,
            "diameter": self.diameter,
            "bisection_links": self.bisection_links,
            "bisection_bandwidth": self.bisection_bandwidth,
            "routing": self.routing,
            "routings": list(self.ROUTINGS),
            "locality_units": int(len(np.unique(units))),
            "link_kinds": self.links_by_kind(),
        }
        d["parameters"] = self._describe_params()
        return d

    # ------------------------------------------------------------------ family hooks
    @abstractmethod
    def _route1(self, src: int, dst: int, key: int) -> tuple[int, ...]:
        """Route for distinct nodes (plain ints, already checked)."""

    @abstractmethod
    def _routes_vec(self, s: np.ndarray, d: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Route lengths (int64) and the concatenated links for a chunk of pairs."""

    @abstractmethod
    def _hops1(self, src: int, dst: int) -> int:
        """Minimal inter-router hops between two checked nodes."""

    @abstractmethod
    def _hops_vec(self, s: np.ndarray, d: np.ndarray) -> np.ndarray:
        """Minimal inter-router hops for arrays of node pairs."""

    @abstractmethod
    def _diameter(self) -> int:
        """Closed form or exact computation of the diameter."""

    @abstractmethod
    def _bisection_cut(self) -> tuple[int, float]:
        """(links, bytes/s) across the bisection."""

    @abstractmethod
    def locality_units(self) -> np.ndarray:
        """int32 (n_routers,): locality unit id of each router."""

    @abstractmethod
    def _describe_params(self) -> dict[str, Any]:
        """Family parameters for :meth:`describe`."""


def assemble_columns(cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Routes from a (n, width) matrix of link ids padded with -1, read row by row."""
    mask = cols >= 0
    return mask.sum(axis=1).astype(np.int64), cols[mask].astype(np.int32)
