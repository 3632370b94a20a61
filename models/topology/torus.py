"""Tori and meshes of any dimension with dimension-order routing.

Routers sit at the points of a ``dims[0] x dims[1] x ...`` grid; router index
``x_0 + dims[0] * (x_1 + dims[1] * (...))`` (dimension 0 varies fastest). Each router carries
``nodes_per_router`` compute nodes: node ``router * nodes_per_router + j``. In each dimension
of size ``k > 1`` a router has a ``+`` link to ``x + 1`` and a ``-`` link to ``x - 1``; with
``wrap`` set for that dimension the links at the ends wrap around (torus), without it they do
not exist (mesh). In a wrapped dimension of size 2 the ``+`` and ``-`` links both join the
same two routers, as on Blue Gene/Q's E dimension. A dimension's links have bandwidth
``link_bw[d] * link_mult[d]`` (Gemini's X and Z links are two links wide).

Dimension-order routing corrects dimension 0 first, then 1, and so on. In a wrapped dimension
it takes the shorter direction; a tie (an offset of exactly ``k/2``) goes in the ``+``
direction. In a mesh dimension it goes straight towards the destination.

``adaptive`` (minimal adaptive with an escape channel, Duato's scheme as in the Cray T3E and
BookSim): at every router a chunk may take the minimal-direction port of any dimension it
still has to correct (:meth:`Torus.minimal_ports`), on an adaptive virtual channel, when that
channel has room; otherwise it falls back to the escape network, dimension order with the
dateline virtual channels, and stays there to its destination. It needs credit-based flow
control (``buffers="credit"``, where it is implemented); :meth:`route` and :meth:`routes`
give its zero-load route, dimension order.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from functools import cached_property
from math import prod
from typing import Any, ClassVar, Sequence

import numpy as np

from ..errors import TopologyError
from .base import KIND_EJECT, KIND_INJECT, KIND_LOCAL, Topology, _readonly
from .validate import check_bw, check_choice, check_int, check_ints, check_lat, check_size


def _per_dim(c: str, name: str, value: Any, D: int, check: Any) -> tuple[float, ...]:
    if isinstance(value, (list, tuple)):
        if len(value) != D:
            raise TopologyError(f"{c}: {name} must be one value or one per dimension ({D}), got {len(value)}: {value!r}")
        return tuple(check(c, f"{name}[{i}]", v) for i, v in enumerate(value))
    v = check(c, name, value)
    return (v,) * D


def _dim_step(xs: int, xd: int, k: int, wrap: bool) -> tuple[int, int]:
    """Direction (0: +, 1: -) and hop count from coordinate ``xs`` to ``xd`` in a dimension
    of size ``k``: the shorter way round on a ring (a tie of exactly k/2 goes +), else
    straight on a mesh."""
    if wrap:
        delta = (xd - xs) % k
        return (0, delta) if 2 * delta <= k else (1, k - delta)
    return (0, xd - xs) if xd > xs else (1, xs - xd)


@dataclass(frozen=True, kw_only=True)

class Torus(Topology):
    """A torus, mesh or mixed grid of routers (see the module docstring).

    ``wrap`` is one flag for every dimension or one per dimension; ``link_bw`` and
    ``link_lat`` are one value or one per dimension (numbers in SI units or strings such as
    '4.7GB/s', '100ns'); ``link_mult`` multiplies each dimension's bandwidth.
    """

    name: ClassVar[str] = "torus"
    ROUTINGS: ClassVar[tuple[str, ...]] = ("dor", "adaptive")
    ADAPTIVE_ROUTINGS: ClassVar[tuple[str, ...]] = ("adaptive",)
    #: Routings decided again at every router (the credit router's per-hop choice).
    PER_HOP_ROUTINGS: ClassVar[tuple[str, ...]] = ("adaptive",)

    dims: tuple[int, ...]
    nodes_per_router: int = 1
    wrap: bool | tuple[bool, ...] = True
    link_mult: tuple[int, ...] | None = None
    link_bw: InitVar[float | str | Sequence[float | str]] = "4GB/s"
    link_lat: InitVar[float | str | Sequence[float | str]] = "100ns"
    inject_bw: float | str | None = None
    inject_lat: float | str | None = None
    routing: str = "dor"
    seed: int = 0
    cache_size: int = field(default=1 << 17, compare=False, repr=False)
    #: Bandwidth (bytes/s, multiplicity included) and latency (s) of each dimension's links.
    dim_bw: tuple[float, ...] = field(init=False)
    dim_lat: tuple[float, ...] = field(init=False)

    def __post_init__(self, link_bw: Any, link_lat: Any) -> None:
        c = "Torus"
        dims = check_ints(c, "dims", self.dims, None, 1)
        D = len(dims)
        if D == 0:
            raise TopologyError(f"{c}: dims must list at least one dimension size, got {self.dims!r}")
        cpr = check_int(c, "nodes_per_router", self.nodes_per_router, 1)
        if isinstance(self.wrap, (bool, np.bool_)):
            wrap = (bool(self.wrap),) * D
        else:
            try:
                wrap = tuple(self.wrap)
            except TypeError:
                raise TopologyError(f"{c}: wrap must be a bool or one bool per dimension, got {self.wrap!r}") from None
            if len(wrap) != D or not all(isinstance(x, (bool, np.bool_)) for x in wrap):
                raise TopologyError(f"{c}: wrap must be a bool or {D} bools (one per dimension), got {self.wrap!r}")
            wrap = tuple(bool(x) for x in wrap)
        mult = (1,) * D if self.link_mult is None else check_ints(c, "link_mult", self.link_mult, D, 1)
        base_bw = _per_dim(c, "link_bw", link_bw, D, check_bw)
        lat = _per_dim(c, "link_lat", link_lat, D, check_lat)
        dim_bw = tuple(b * k for b, k in zip(base_bw, mult))
        ibw = max(base_bw) if self.inject_bw is None else check_bw(c, "inject_bw", self.inject_bw)
        ilat = min(lat) if self.inject_lat is None else check_lat(c, "inject_lat", self.inject_lat)
        check_choice(c, "routing", self.routing, self.ROUTINGS)
        seed = check_int(c, "seed", self.seed, 0)
        cache = check_int(c, "cache_size", self.cache_size, 1)
        R = check_size(c, "routers", prod(dims))
        N = check_size(c, "nodes", R * cpr)
        if N < 2:
            raise TopologyError(f"{c}: the network must have at least 2 nodes, got dims={dims}, nodes_per_router={cpr}")
        for nm, v in (("dims", dims), ("nodes_per_router", cpr), ("wrap", wrap), ("link_mult", mult), ("dim_bw", dim_bw),
                      ("dim_lat", lat), ("inject_bw", ibw), ("inject_lat", ilat), ("seed", seed)):
            self._set(nm, v)
        self._set(
            "_init_kwargs",
            dict(dims=dims, nodes_per_router=cpr, wrap=wrap, link_mult=mult, link_bw=base_bw, link_lat=lat,
                 inject_bw=ibw, inject_lat=ilat, routing=self.routing, seed=seed, cache_size=cache),
        )
        strides = [1] * D
        for i in range(1, D):
            strides[i] = strides[i - 1] * dims[i - 1]
        self._set("_strides", tuple(strides))

        # Router links: slot (router, dim, dir) -> link id, -1 where a mesh edge has none.
        r = np.arange(R, dtype=np.int64)
        coords = (r[:, None] // np.array(strides, dtype=np.int64)[None, :]) % np.array(dims, dtype=np.int64)[None, :]
        exists = np.zeros((R, D, 2), dtype=bool)
        nbr = np.zeros((R, D, 2), dtype=np.int64)
        for i, (k, st) in enumerate(zip(dims, strides)):
            x = coords[:, i]
            if k == 1:
                continue
            exists[:, i, 0] = True if wrap[i] else x < k - 1
            exists[:, i, 1] = True if wrap[i] else x > 0
            nbr[:, i, 0] = r + st * np.where(x < k - 1, 1, -(k - 1))
            nbr[:, i, 1] = r - st * np.where(x > 0, 1, -(k - 1))
        ex = exists.reshape(-1)
        n_rl = int(ex.sum())
        check_size(c, "links", 2 * N + n_rl)
        s2l = np.full(R * D * 2, -1, dtype=np.int64)
        s2l[ex] = 2 * N + np.arange(n_rl)
        slot_dim = np.tile(np.repeat(np.arange(D), 2), R)[ex]
        src = np.concatenate([np.arange(N), N + np.arange(N) // cpr, N + np.repeat(r, 2 * D)[ex]])
        dst = np.concatenate([N + np.arange(N) // cpr, np.arange(N), N + nbr.reshape(-1)[ex]])
        kind = np.concatenate([np.full(N, KIND_INJECT), np.full(N, KIND_EJECT), np.full(n_rl, KIND_LOCAL)])
        bw = np.concatenate([np.full(2 * N, ibw), np.array(dim_bw)[slot_dim]])
        lt = np.concatenate([np.full(2 * N, ilat), np.array(lat)[slot_dim]])
        self._set("_s2l", _readonly(s2l))
        self._init_arrays(
            n_routers=R,
            node_router=np.arange(N, dtype=np.int64) // cpr,
            link_src=src,
            link_dst=dst,
            link_bw=bw,
            link_lat=lt,
            link_kind=kind,
            cache_size=cache,
        )

    @classmethod
    def mesh(cls, *, dims: Sequence[int], **kwargs: Any) -> "Torus":
        """A mesh (no wrap-around in any dimension)."""
        return cls(dims=tuple(dims), wrap=False, **kwargs)

    # ------------------------------------------------------------------ coordinates
    @property
    def n_dims(self) -> int:
        """Number of dimensions."""
        return len(self.dims)

    def coords_of_router(self, routers: Any) -> np.ndarray:
        """Grid coordinates of router indices (shape ``(..., n_dims)``)."""
        r = np.asarray(routers, dtype=np.int64)
        if r.size and (r.min() < 0 or r.max() >= self.n_routers):
            raise TopologyError(f"{self.name}: router index out of range; valid: 0..{self.n_routers - 1}")
        return (r[..., None] // np.array(self._strides)) % np.array(self.dims)

    def coords_of_node(self, nodes: Any) -> np.ndarray:
        """Grid coordinates of the routers of nodes (shape ``(..., n_dims)``)."""
        a = np.asarray(nodes)
        flat = self._nodes(a, "nodes")
        return self.coords_of_router(flat // self.nodes_per_router).reshape(a.shape + (self.n_dims,))

    def router_at(self, coords: Sequence[int]) -> int:
        """Router index at grid coordinates ``coords``."""
        cs = tuple(coords)
        if len(cs) != self.n_dims:
            raise TopologyError(f"{self.name}: coordinates need {self.n_dims} entries, got {cs!r}")
        r = 0
        for i, (x, k, st) in enumerate(zip(cs, self.dims, self._strides)):
            r += check_int(self.name, f"coords[{i}]", x, 0, k - 1) * st
        return r

    def node_at(self, coords: Sequence[int], index: int = 0) -> int:
        """Node ``index`` (0..nodes_per_router-1) of the router at ``coords``."""
        j = check_int(self.name, "index", index, 0, self.nodes_per_router - 1)
        return self.router_at(coords) * self.nodes_per_router + j

    def link_id(self, router: int, dim: int, direction: int) -> int:
        """Link id leaving ``router`` in dimension ``dim`` towards ``+1`` or ``-1``; -1 if absent."""
        r = check_int(self.name, "router", router, 0, self.n_routers - 1)
        dm = check_int(self.name, "dim", dim, 0, self.n_dims - 1)
        if direction not in (1, -1):
            raise TopologyError(f"{self.name}: direction must be +1 or -1, got {direction!r}")
        return int(self._s2l[(r * self.n_dims + dm) * 2 + (0 if direction == 1 else 1)])

    # ------------------------------------------------------------------ routing
    @cached_property
    def _s2l_scalar(self) -> list[int]:
        # A list of Python ints: indexing boxes nothing, and every cached route shares the same
        # int objects (an array('q') made a new 28-byte int per hop of every route, about a
        # third of the memory per rank of a large job).
        return self._s2l.tolist()

    @cached_property
    def _rings(self) -> list[tuple[int, int, int, bool, dict[int, tuple[list[int], list[int]]]]]:
        # Per dimension: (i, k, stride, wrap, the rings made so far by the router index of
        # their coordinate 0; see _ring).
        return [(i, k, st, bool(wr), {}) for i, (k, st, wr) in enumerate(zip(self.dims, self._strides, self.wrap))]

    def _ring(self, i: int, base: int) -> tuple[list[int], list[int]]:
        """Dimension ``i``'s ring through router ``base`` (its coordinate 0), as two lists of
        2k link ids: ``plus[x]`` leaves coordinate x mod k towards +, ``minus[k-1-x]`` leaves
        coordinate x towards -; a route's hops in that dimension are one slice of either."""
        k = self.dims[i]
        st = self._strides[i]
        D2 = 2 * len(self.dims)
        s2l = self._s2l_scalar
        plus = [s2l[(base + x * st) * D2 + 2 * i] for x in range(k)]
        minus = [s2l[(base + (k - 1 - j) * st) * D2 + 2 * i + 1] for j in range(k)]
        ring = (plus + plus, minus + minus)
        self._rings[i][4][base] = ring
        return ring

    def _route1(self, src: int, dst: int, key: int) -> tuple[int, ...]:
        c = self.nodes_per_router
        r = src // c
        rd = dst // c
        out = [src]
        for i, k, st, wr, made in self._rings:
            xs = (r // st) % k
            xd = (rd // st) % k
            if xs == xd:
                continue
            # (_dim_step, inlined.)
            if wr:
                delta = (xd - xs) % k
                up = 2 * delta <= k
                steps = delta if up else k - delta
            else:
                up = xd > xs
                steps = xd - xs if up else xs - xd
            base = r - xs * st
            ring = made.get(base)
            if ring is None:
                ring = self._ring(i, base)
            if up:
                out += ring[0][xs:xs + steps]
            else:
                j = k - 1 - xs
                out += ring[1][j:j + steps]
            r += (xd - xs) * st
        out.append(self.n_nodes + dst)
        return tuple(out)

    @cached_property
    def _summary_dims(self) -> tuple[float, tuple[tuple[int, int, bool, float], ...]] | None:
        # (the smaller of the injection and ejection bandwidths, per dimension (k, stride,
        # wrap, its links' bandwidth)) when all injection links share one bandwidth, all
        # ejection links one, and the router links of each dimension one (as built); None
        # otherwise (route_summary then declines).
        bw = self.link_bw
        N = self.n_nodes
        D = len(self.dims)
        inj, ej = bw[:N], bw[N:2 * N]
        if not ((inj == inj[0]).all() and (ej == ej[0]).all()):
            return None
        ends = min(inj[0].item(), ej[0].item())
        s2l = self._s2l.reshape(-1, D, 2)
        dims = []
        for i, (k, st, wr) in enumerate(zip(self.dims, self._strides, self.wrap)):
            ids = s2l[:, i, :].reshape(-1)
            b = bw[ids[ids >= 0]]
            if len(b) and not (b == b[0]).all():
                return None
            dims.append((k, st, bool(wr), b[0].item() if len(b) else ends))
        return ends, tuple(dims)

    def route_summary(self, src: int, dst: int) -> tuple[int, float, int] | None:
        """(links, smallest bandwidth, ejection link) of the dimension-order route from node
        ``src`` to node ``dst`` (see :meth:`Topology.route_summary`): the steps of each
        dimension counted as :meth:`_route1` takes them, the bandwidth that of the dimensions
        it crosses and of the node links."""
        sd = self._summary_dims
        if sd is None:
            return None
        c = self.nodes_per_router
        r = src // c
        rd = dst // c
        bw, dims = sd
        n = 2
        # Moving along one dimension leaves the other coordinates as they are: every
        # dimension's steps come from the source's own coordinates.
        for k, st, wr, b in dims:
            xs = (r // st) % k
            xd = (rd // st) % k
            if xs == xd:
                continue
            if wr:
                delta = (xd - xs) % k
                n += delta if 2 * delta <= k else k - delta
            else:
                n += xd - xs if xd > xs else xs - xd
            if b < bw:
                bw = b
        return n, bw, self.n_nodes + dst

    def minimal_ports(self, router: int, dst: int) -> tuple[int, ...]:
        """The links leaving router index ``router`` that bring it one hop closer to node
        ``dst``: in every dimension still to correct, the port of dimension order's
        direction (a tie of exactly ``k/2`` goes ``+``), in dimension order."""
        c = self.nodes_per_router
        D2 = 2 * len(self.dims)
        s2l = self._s2l_scalar
        rd = dst // c
        out = []
        for i, (k, st, wr) in enumerate(zip(self.dims, self._strides, self.wrap)):
            xs = (router // st) % k
            xd = (rd // st) % k
            if xs == xd:
                continue
            out.append(s2l[router * D2 + 2 * i + _dim_step(xs, xd, k, wr)[0]])
        return tuple(out)

    def route_from_router(self, router: int, dst: int) -> tuple[int, ...]:
        """The dimension-order links from router index ``router`` to node ``dst``, its
        ejection link last."""
        return self._route1(router * self.nodes_per_router, dst, 0)[1:]

    def _dim_moves(self, rs: np.ndarray, rd: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """Per dimension: (source coord, destination coord, steps, direction 0:+ 1:-)."""
        moves = []
        for k, st, wr in zip(self.dims, self._strides, self.wrap):
            xs = (rs // st) % k
            xd = (rd // st) % k
            if wr:
                delta = (xd - xs) % k
                plus = 2 * delta <= k
                steps = np.where(plus, delta, k - delta)
                dr = (~plus).astype(np.int64)
            else:
                diff = xd - xs
                steps = np.abs(diff)
                dr = (diff < 0).astype(np.int64)
            moves.append((xs, xd, steps, dr))
        return moves

    def _routes_vec(self, s: np.ndarray, d: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c = self.nodes_per_router
        N = self.n_nodes
        D2 = 2 * len(self.dims)
        n = len(s)
        rs = s // c
        rd = d // c
        moves = self._dim_moves(rs, rd)
        hops = np.zeros(n, dtype=np.int64)
        for mv in moves:
            hops += mv[2]
        same = s == d
        lens = np.where(same, 0, hops + 2)
        ends = np.cumsum(lens)
        starts = ends - lens
        out = np.empty(int(ends[-1]) if n else 0, dtype=np.int64)
        nz = ~same
        out[starts[nz]] = s[nz]
        out[ends[nz] - 1] = N + d[nz]
        pos = starts + 1
        rb = rs.copy()
        s2l = self._s2l
        for i, ((xs, xd, steps, dr), kk, st) in enumerate(zip(moves, self.dims, self._strides)):
            T = int(steps.sum())
            if T:
                idx = np.repeat(np.arange(n), steps)
                first = np.cumsum(steps) - steps
                t = np.arange(T) - np.repeat(first, steps)
                di = dr[idx]
                x0 = xs[idx]
                x = (x0 + np.where(di == 1, -t, t)) % kk
                router = rb[idx] + (x - x0) * st
                out[pos[idx] + t] = s2l[router * D2 + 2 * i + di]
                pos += steps
            rb += (xd - xs) * st
        return lens, out

    # ------------------------------------------------------------------ hops and metrics
    def _hops1(self, src: int, dst: int) -> int:
        c = self.nodes_per_router
        r, rd = src // c, dst // c
        h = 0
        for k, st, wr in zip(self.dims, self._strides, self.wrap):
            delta = abs((r // st) % k - (rd // st) % k)
            h += min(delta, k - delta) if wr else delta
        return h

    def _hops_vec(self, s: np.ndarray, d: np.ndarray) -> np.ndarray:
        c = self.nodes_per_router
        rs, rd = s // c, d // c
        out = np.zeros(len(s), dtype=np.int64)
        for k, st, wr in zip(self.dims, self._strides, self.wrap):
            delta = np.abs((rs // st) % k - (rd // st) % k)
            out += np.minimum(delta, k - delta) if wr else delta
        return out.astype(np.int32)

    def pair_hop_sum(self, nodes: Any) -> int:
        # Distances add over dimensions, so the sum over pairs is a sum over dimensions of
        # coordinate-histogram products: O(n + sum k^2), fine for whole-machine node sets.
        a = self._distinct_nodes(nodes)
        r = a // self.nodes_per_router
        total = 0
        for k, st, wr in zip(self.dims, self._strides, self.wrap):
            cnt = np.bincount((r // st) % k, minlength=k).astype(np.int64)
            x = np.arange(k)
            delta = np.abs(x[:, None] - x[None, :])
            dist = np.minimum(delta, k - delta) if wr else delta
            total += int(cnt @ dist @ cnt)
        return total // 2

    def _diameter(self) -> int:
        return sum((k // 2 if wr else k - 1) for k, wr in zip(self.dims, self.wrap))

    def _bisection_cut(self) -> tuple[int, float]:
        # Cutting dimension d across its middle severs R/k_d rings or lines, two links each
        # way per ring when wrapped; the cheapest dimension gives the bisection.
        R = self.n_routers
        best: tuple[int, float] | None = None
        for k, wr, bw in zip(self.dims, self.wrap, self.dim_bw):
            if k < 2:
                continue
            links = (R // k) * (2 if wr else 1)
            cand = (links, links * bw)
            # Ties go to the cut with fewer (wider) links: the longest dimension.
            if best is None or cand[1] < best[1] or (cand[1] == best[1] and cand[0] < best[0]):
                best = cand
        if best is None:  # one router: the bisection cuts injection links
            half = self.n_nodes // 2
            return half, half * self.inject_bw
        return best

    @cached_property
    def slab_dim(self) -> int:
        """The dimension whose slabs are the locality units (the largest; ties: the last)."""
        big = max(self.dims)
        return max(i for i, k in enumerate(self.dims) if k == big)

    def locality_units(self) -> np.ndarray:
        """Slab (coordinate along :attr:`slab_dim`) of each router."""
        i = self.slab_dim
        r = np.arange(self.n_routers, dtype=np.int64)
        return ((r // self._strides[i]) % self.dims[i]).astype(np.int32)

    def _describe_params(self) -> dict[str, Any]:
        return {
            "dims": list(self.dims),
            "nodes_per_router": self.nodes_per_router,
            "wrap": list(self.wrap),
            "link_mult": list(self.link_mult),
            "dim_bw": list(self.dim_bw),
            "dim_lat": list(self.dim_lat),
            "inject_bw": self.inject_bw,
            "inject_lat": self.inject_lat,
            "slab_dim": self.slab_dim,
        }
