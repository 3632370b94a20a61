"""Dragonflies (Kim et al., ISCA 2008) with minimal, Valiant, UGAL-L and UGAL-G routing.

``g`` groups of ``a`` routers; each router has ``p`` compute nodes and ``h`` global ports.
Router index ``G * a + x`` (group ``G``, local index ``x``); node ``router * p + j``.

Local links. Flat groups join every pair of routers of a group (one link each way). Cascade
groups (``cascade=(rows, cols)``, as in Cray XC/Aries) place router ``x`` at row ``x // cols``,
column ``x % cols`` and join all routers of a row and all routers of a column; ``local_mult =
(row, col)`` multiplies the two kinds' bandwidth (Aries: 1 green, 3 black links), the parallel
links being merged into one wider link.

Global links. Each group uses ``U = m * (g - 1)`` of its ``a * h`` global ports, where ``m``
(``global_links``, default ``a * h // (g - 1)``) links join every pair of groups. The group's
used ports are slots ``t = 0..U-1``, slot ``t`` on local router ``(t * a) // U`` (consecutive
slots fill router 0's ports first, then router 1's, ...; with fewer used ports than ``a * h``
they are spread evenly over the routers). Slot ``t`` carries copy ``c = t // (g - 1)`` of the
link to peer ``q = t % (g - 1)``. The arrangement maps peers to groups:

* ``absolute`` (Hastings et al., "Comparing global link arrangements for Dragonfly networks",
  CLUSTER 2015): peer ``q`` of group ``G`` is group ``q`` if ``q < G`` else ``q + 1``, so
  ports go to the other groups in increasing order;
* ``relative`` (circulant): peer ``q`` of group ``G`` is group ``(G + q + 1) mod g``.

Copy ``c`` from ``G`` to ``T`` joins slot ``c (g-1) + q(G, T)`` of ``G`` to slot
``c (g-1) + q(T, G)`` of ``T``; so every pair of groups is joined by exactly ``m`` links (one
per direction each) and every used port carries exactly one. With the default ``g = a h + 1``
and ``m = 1`` this is the canonical balanced dragonfly.

Routing. ``minimal``: local hop(s) to a router holding a global link to the destination group,
the global link, local hop(s) to the destination router; among the ``m`` copies it takes one
with the fewest hops (ties broken by a hash of the pair, so the copies share the load), hence
at most 3 router hops in flat groups. As in Kim et al., a minimal route uses at most one
global link; :meth:`hops`, :meth:`hop_matrix` and the diameter count such routes (a path
through two global links can occasionally be shorter, but no dragonfly routing takes it as
a minimal path). ``valiant``: to a random intermediate group (from a hash
of seed, src, dst and key) by the copy nearest the source, then minimally to the destination;
at most 5 router hops in flat groups (8 in cascade groups). Traffic within a group is routed
minimally. ``ugal`` (UGAL-L, Kim et al.; as in BookSim and CODES): at the source router,
the minimal path if ``q_min * H_min <= q_val * H_val``, else the Valiant path (the one
``valiant`` would take for that message), where ``H`` is a path's router-to-router hop count
and ``q`` the occupancy of its first output port at the source router (with credit flow
control: the credits in use on that port, i.e. its downstream buffer and the bytes in flight,
plus the bytes waiting for credit; so a congested global link further on shows through the
buffers that back up towards the source). Ties go minimal and the threshold is zero.
``ugal-g`` (UGAL-G, the idealised bound of Kim et al.): the same rule with ``q`` the summed
occupancy of the global links on each path (one on the minimal path, two on the Valiant
path), read wherever they are; an oracle no router could implement (the packet model keeps
the whole network on one rank for it). Without port state (:meth:`route`, :meth:`routes`)
both are the minimal path.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from functools import cached_property
from typing import Any, Callable, ClassVar

import numpy as np

from ..errors import TopologyError
from .base import KIND_EJECT, KIND_GLOBAL, KIND_INJECT, KIND_LOCAL, Topology, _readonly, assemble_columns
from .hashing import mix64, mix64_np, pair_hash, pair_hash_np, salt_seed
from .validate import check_bw, check_choice, check_int, check_ints, check_lat, check_size

ARRANGEMENTS = ("absolute", "relative")
_SALT_MIN = 0xD1A
_SALT_VAL = 0x7A1
_BEST_BLOCK = 1 << 21  # elements of a (pairs x copies) cost block
_NP_BEST_MIN = 24  # scalar copy choice switches to numpy above this many parallel links


@dataclass(frozen=True, kw_only=True)
class Dragonfly(Topology):
    """A dragonfly of ``g`` groups of ``a`` routers (see the module docstring).

    ``link_bw``/``link_lat`` apply to local links (before ``local_mult``), ``global_bw``/
    ``global_lat`` to global links (default: the local values), ``inject_bw``/``inject_lat``
    to node links (default: the local values).
    """

    name: ClassVar[str] = "dragonfly"
    ROUTINGS: ClassVar[tuple[str, ...]] = ("minimal", "valiant", "ugal", "ugal-g")
    ADAPTIVE_ROUTINGS: ClassVar[tuple[str, ...]] = ("ugal", "ugal-g")
    GLOBAL_STATE_ROUTINGS: ClassVar[tuple[str, ...]] = ("ugal-g",)
    KEYED_ROUTINGS: ClassVar[tuple[str, ...]] = ("valiant",)

    a: int
    p: int
    h: int
    g: int | None = None
    global_links: int | None = None
    arrangement: str = "absolute"
    cascade: tuple[int, int] | None = None
    local_mult: int | tuple[int, int] = 1
    link_bw: InitVar[float | str] = "4GB/s"
    link_lat: InitVar[float | str] = "100ns"
    global_bw: float | str | None = None
    global_lat: float | str | None = None
    inject_bw: float | str | None = None
    inject_lat: float | str | None = None
    routing: str = "minimal"
    seed: int = 0
    cache_size: int = field(default=1 << 17, compare=False, repr=False)
    #: Bandwidth (bytes/s, before local_mult) and latency (s) of local links.
    local_bw: float = field(init=False)
    local_lat: float = field(init=False)

    def __post_init__(self, link_bw: Any, link_lat: Any) -> None:
        c = "Dragonfly"
        a = check_int(c, "a (routers per group)", self.a, 1)
        p = check_int(c, "p (nodes per router)", self.p, 1)
        h = check_int(c, "h (global links per router)", self.h, 0)
        gmax = a * h + 1
        g = gmax if self.g is None else check_int(c, "g (groups)", self.g, 1, gmax)
        G1 = g - 1
        if g == 1:
            if self.global_links not in (None, 0):
                raise TopologyError(f"{c}: a single group has no global links; global_links must be None, got {self.global_links!r}")
            m = 0
        else:
            mmax = a * h // G1
            m = mmax if self.global_links is None else check_int(c, "global_links (links per group pair)", self.global_links, 1, mmax)
        arr = check_choice(c, "arrangement", self.arrangement, ARRANGEMENTS)
        if self.cascade is None:
            rows, cols = 1, a
            casc = None
        else:
            casc = check_ints(c, "cascade", self.cascade, 2, 1)
            rows, cols = casc
            if rows * cols != a:
                raise TopologyError(f"{c}: cascade=(rows, cols) must have rows * cols == a ({a}), got {casc}")
        if isinstance(self.local_mult, (tuple, list)):
            if casc is None:
                raise TopologyError(f"{c}: local_mult=(row, col) needs cascade=(rows, cols); flat groups take one int")
            lm = check_ints(c, "local_mult", self.local_mult, 2, 1)
        else:
            k = check_int(c, "local_mult", self.local_mult, 1)
            lm = (k, k)
        lbw = check_bw(c, "link_bw", link_bw)
        llat = check_lat(c, "link_lat", link_lat)
        gbw = lbw if self.global_bw is None else check_bw(c, "global_bw", self.global_bw)
        glat = llat if self.global_lat is None else check_lat(c, "global_lat", self.global_lat)
        ibw = lbw if self.inject_bw is None else check_bw(c, "inject_bw", self.inject_bw)
        ilat = llat if self.inject_lat is None else check_lat(c, "inject_lat", self.inject_lat)
        check_choice(c, "routing", self.routing, self.ROUTINGS)
        seed = check_int(c, "seed", self.seed, 0)
        cache = check_int(c, "cache_size", self.cache_size, 1)
        n_routers = check_size(c, "routers", g * a)
        N = check_size(c, "nodes", n_routers * p)
        if N < 2:
            raise TopologyError(f"{c}: the network must have at least 2 nodes, got a={a}, p={p}, g={g}")
        for nm, v in (("a", a), ("p", p), ("h", h), ("g", g), ("global_links", m), ("arrangement", arr), ("cascade", casc),
                      ("local_mult", lm), ("local_bw", lbw), ("local_lat", llat), ("global_bw", gbw), ("global_lat", glat),
                      ("inject_bw", ibw), ("inject_lat", ilat), ("seed", seed)):
            self._set(nm, v)
        self._set(
            "_init_kwargs",
            dict(a=a, p=p, h=h, g=g, global_links=(m or None), arrangement=arr, cascade=casc,
                 local_mult=(lm if casc else lm[0]), link_bw=lbw, link_lat=llat, global_bw=gbw, global_lat=glat,
                 inject_bw=ibw, inject_lat=ilat, routing=self.routing, seed=seed, cache_size=cache),
        )
        U = m * G1
        delta = (a - 1) if casc is None else (rows - 1) + (cols - 1)
        LB = 2 * N
        GB = LB + n_routers * delta
        check_size(c, "links", GB + g * U)
        for nm, v in (("_G1", G1), ("_U", U), ("_rows", rows), ("_cols", cols), ("_delta", delta), ("_LB", LB), ("_GB", GB)):
            self._set(nm, v)
        self._set("_salt_min", salt_seed(seed, _SALT_MIN))
        self._set("_salt_val", salt_seed(seed, _SALT_VAL))

        # Local links, router-major: for router x the targets in increasing order (flat) or
        # the row neighbours then the column neighbours (cascade).
        r = np.arange(n_routers, dtype=np.int64)
        G, x = r // a, r % a
        j = np.arange(delta, dtype=np.int64)
        if casc is None:
            y = np.where(j[None, :] < x[:, None], j[None, :], j[None, :] + 1)
            lmul = np.full((n_routers, delta), lm[0], dtype=np.int64)
        else:
            rx, cx = x // cols, x % cols
            jr = j[: cols - 1]
            jc = j[cols - 1 :] - (cols - 1)
            ycol = np.where(jr[None, :] < cx[:, None], jr[None, :], jr[None, :] + 1)
            yrow = np.where(jc[None, :] < rx[:, None], jc[None, :], jc[None, :] + 1)
            y = np.concatenate([rx[:, None] * cols + ycol, yrow * cols + cx[:, None]], axis=1)
            lmul = np.concatenate(
                [np.full((n_routers, cols - 1), lm[0], dtype=np.int64), np.full((n_routers, rows - 1), lm[1], dtype=np.int64)], axis=1
            )
        l_src = np.repeat(r, delta)
        l_dst = (G[:, None] * a + y).reshape(-1)
        # Global links: slot t of group G.
        if U:
            GG = np.repeat(np.arange(g, dtype=np.int64), U)
            t = np.tile(np.arange(U, dtype=np.int64), g)
            q, cp = t % G1, t // G1
            T = self._target_np(GG, q)
            t2 = cp * G1 + self._qidx_np(T, GG)
            g_src = GG * a + (t * a) // U
            g_dst = T * a + (t2 * a) // U
        else:
            g_src = g_dst = np.zeros(0, dtype=np.int64)
        nodes = np.arange(N, dtype=np.int64)
        self._init_arrays(
            n_routers=n_routers,
            node_router=nodes // p,
            link_src=np.concatenate([nodes, N + nodes // p, N + l_src, N + g_src]),
            link_dst=np.concatenate([N + nodes // p, nodes, N + l_dst, N + g_dst]),
            link_bw=np.concatenate([np.full(2 * N, ibw), lbw * lmul.reshape(-1), np.full(len(g_src), gbw)]),
            link_lat=np.concatenate([np.full(2 * N, ilat), np.full(len(l_src), llat), np.full(len(g_src), glat)]),
            link_kind=np.concatenate(
                [np.full(N, KIND_INJECT), np.full(N, KIND_EJECT), np.full(len(l_src), KIND_LOCAL), np.full(len(g_src), KIND_GLOBAL)]
            ),
            cache_size=cache,
        )
        # Routing tables: RHO[q, c] = local router of slot c*(g-1)+q; LH = local hop distances;
        # ACOST[x*(g-1)+q, c] = LH[x, RHO[q, c]] (hops from router x to copy c towards peer q).
        if U:
            qq = np.arange(G1, dtype=np.int64)[:, None]
            cc = np.arange(m, dtype=np.int64)[None, :]
            rho = ((cc * G1 + qq) * a) // U
        else:
            rho = np.zeros((0, 0), dtype=np.int64)
        xa = np.arange(a)
        if casc is None:
            lh = (xa[:, None] != xa[None, :]).astype(np.int8)
        else:
            lh = ((xa[:, None] // cols != xa[None, :] // cols).astype(np.int8) + (xa[:, None] % cols != xa[None, :] % cols).astype(np.int8))
        acost = lh[:, rho].reshape(a * G1, m) if U else np.zeros((0, 0), dtype=np.int8)
        self._set("_rho", _readonly(rho))
        self._set("_lh", _readonly(lh))
        self._set("_acost", _readonly(np.ascontiguousarray(acost, dtype=np.int8)))
        self._set("_rho_l", rho.tolist())
        self._set("_lh_l", lh.tolist())
        self._set("_acost_l", acost.tolist())
        # _rot[off, c] = (c - off) mod m: tie-break order of copy c when scanning from off.
        if m > _NP_BEST_MIN:
            cc = np.arange(m, dtype=np.int32)
            self._set("_rot", _readonly((cc[None, :] - cc[:, None]) % m))

    # ------------------------------------------------------------------ arrangement
    def _qidx(self, G: int, T: int) -> int:
        """Peer index of group T as seen from group G."""
        if self.arrangement == "absolute":
            return T if T < G else T - 1
        return (T - G - 1) % self.g

    def _qidx_np(self, G: np.ndarray, T: np.ndarray) -> np.ndarray:
        if self.arrangement == "absolute":
            return np.where(T < G, T, T - 1)
        return (T - G - 1) % self.g

    def _target_np(self, G: np.ndarray, q: np.ndarray) -> np.ndarray:
        if self.arrangement == "absolute":
            return np.where(q < G, q, q + 1)
        return (G + q + 1) % self.g

    # ------------------------------------------------------------------ structure queries
    @property
    def n_groups(self) -> int:
        """Number of groups (``g``)."""
        return self.g

    @cached_property
    def group_of_node(self) -> np.ndarray:
        """Group of every node (int32)."""
        return _readonly((self.node_router // self.a).astype(np.int32))

    def group_of_router(self, router: int) -> int:
        """Group of router index ``router``."""
        return check_int(self.name, "router", router, 0, self.n_routers - 1) // self.a

    def routers_of_group(self, group: int) -> np.ndarray:
        """Router indices of group ``group``."""
        G = check_int(self.name, "group", group, 0, self.g - 1)
        return np.arange(G * self.a, (G + 1) * self.a, dtype=np.int64)

    def nodes_of_group(self, group: int) -> np.ndarray:
        """Node ids of group ``group``."""
        G = check_int(self.name, "group", group, 0, self.g - 1)
        n = self.a * self.p
        return np.arange(G * n, (G + 1) * n, dtype=np.int64)

    def global_links_between(self, src_group: int, dst_group: int) -> np.ndarray:
        """Ids of the ``global_links`` links from group ``src_group`` to ``dst_group``."""
        G = check_int(self.name, "src_group", src_group, 0, self.g - 1)
        T = check_int(self.name, "dst_group", dst_group, 0, self.g - 1)
        if G == T:
            raise TopologyError(f"{self.name}: a group has no global links to itself (group {G})")
        q = self._qidx(G, T)
        return self._GB + G * self._U + np.arange(self.global_links, dtype=np.int64) * self._G1 + q

    # ------------------------------------------------------------------ scalar routing
    def _local(self, G: int, x: int, y: int) -> list[int]:
        if x == y:
            return []
        base = self._LB + (G * self.a + x) * self._delta
        if self.cascade is None:
            return [base + (y - 1 if y > x else y)]
        C = self._cols
        rx, cx = divmod(x, C)
        ry, cy = divmod(y, C)
        if rx == ry:
            return [base + (cy - 1 if cy > cx else cy)]
        if cx == cy:
            return [base + (C - 1) + (ry - 1 if ry > rx else ry)]
        mid = rx * C + cy
        base2 = self._LB + (G * self.a + mid) * self._delta
        return [base + (cy - 1 if cy > cx else cy), base2 + (C - 1) + (ry - 1 if ry > rx else ry)]

    def _best(self, xa: int, qa: int, xb: int, qb: int, off: int) -> tuple[int, int]:
        """(copy, hops-1) minimising local hops on both sides; ties from ``off`` onwards."""
        m = self.global_links
        if m > _NP_BEST_MIN:
            # Many parallel links: one numpy pass beats a Python loop over the copies.
            c = self._acost[xa * self._G1 + qa].astype(np.int32)
            if qb >= 0:
                c = c + self._acost[xb * self._G1 + qb]
            j = int(np.argmin(c * m + self._rot[off]))
            return j, int(c[j])
        A = self._acost_l
        ra = A[xa * self._G1 + qa]
        if qb < 0:
            rb = None
        else:
            rb = A[xb * self._G1 + qb]
        best_c, best_s = 0, 1 << 30
        for cc in range(m):
            cost = ra[cc] + (rb[cc] if rb is not None else 0)
            sc = cost * m + (cc - off) % m
            if sc < best_s:
                best_c, best_s = cc, sc
        return best_c, best_s // m

    def _minimal(self, s: int, d: int, off_hash: int) -> tuple[int, ...]:
        a, p = self.a, self.p
        Gs, xs = divmod(s // p, a)
        Gd, xd = divmod(d // p, a)
        if Gs == Gd:
            return (s, *self._local(Gs, xs, xd), self.n_nodes + d)
        q12, q21 = self._qidx(Gs, Gd), self._qidx(Gd, Gs)
        cp, _ = self._best(xs, q12, xd, q21, off_hash % self.global_links)
        r1 = self._rho_l[q12][cp]
        r2 = self._rho_l[q21][cp]
        gl = self._GB + Gs * self._U + cp * self._G1 + q12
        return (s, *self._local(Gs, xs, r1), gl, *self._local(Gd, r2, xd), self.n_nodes + d)

    def _intermediate(self, hv: int, Gs: int, Gd: int) -> int:
        lo, hi = (Gs, Gd) if Gs < Gd else (Gd, Gs)
        i = hv % (self.g - 2)
        i += i >= lo
        i += i >= hi
        return i

    def _valiant(self, s: int, d: int, key: int) -> tuple[int, ...]:
        a, p, m, G1, U, GB = self.a, self.p, self.global_links, self._G1, self._U, self._GB
        Gs, xs = divmod(s // p, a)
        Gd, xd = divmod(d // p, a)
        if Gs == Gd or self.g <= 2:
            return self._minimal(s, d, pair_hash(self._salt_min, s, d, 0))
        hv = pair_hash(self._salt_val, s, d, key)
        Gi = self._intermediate(hv, Gs, Gd)
        q1, qi1 = self._qidx(Gs, Gi), self._qidx(Gi, Gs)
        c1, _ = self._best(xs, q1, 0, -1, mix64(hv ^ 1) % m)
        r1 = self._rho_l[q1][c1]
        xi = self._rho_l[qi1][c1]
        qi2, q2i = self._qidx(Gi, Gd), self._qidx(Gd, Gi)
        c2, _ = self._best(xi, qi2, xd, q2i, mix64(hv ^ 2) % m)
        ri = self._rho_l[qi2][c2]
        r2 = self._rho_l[q2i][c2]
        return (
            s,
            *self._local(Gs, xs, r1),
            GB + Gs * U + c1 * G1 + q1,
            *self._local(Gi, xi, ri),
            GB + Gi * U + c2 * G1 + qi2,
            *self._local(Gd, r2, xd),
            self.n_nodes + d,
        )

    def _route1(self, src: int, dst: int, key: int) -> tuple[int, ...]:
        if self.routing == "valiant":
            return self._valiant(src, dst, key)
        return self._minimal(src, dst, pair_hash(self._salt_min, src, dst, 0))

    def route_adaptive(self, src: int, dst: int, key: int, backlog: Callable[[int], float]) -> tuple[int, ...]:
        """``ugal`` (UGAL-L) and ``ugal-g`` (UGAL-G): the minimal route if ``q_min * H_min <=
        q_val * H_val``, else the Valiant route (see the module docstring); ``q`` is
        ``backlog`` of the first router-to-router port (UGAL-L) or the sum over the global
        links (UGAL-G). Other routings return :meth:`route`."""
        rm = self.route(src, dst, key)
        if self.routing not in self.ADAPTIVE_ROUTINGS or not rm:
            return rm
        s, d = int(src), int(dst)
        a, p = self.a, self.p
        if (s // p) // a == (d // p) // a or self.g <= 2:
            return rm
        rv = self._valiant(s, d, int(key))
        if self.routing == "ugal":
            if rv[1] == rm[1]:
                # Same first port, same occupancy: the shorter path wins the rule.
                return rm
            qm, qv = backlog(rm[1]), backlog(rv[1])
        else:
            # Global links are the last link ids (from _GB on).
            gb = self._GB
            qm = sum(backlog(l) for l in rm if l >= gb)
            qv = sum(backlog(l) for l in rv if l >= gb)
        return rm if qm * (len(rm) - 2) <= qv * (len(rv) - 2) else rv

    # ------------------------------------------------------------------ vectorized routing
    def _local_np(self, G: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        base = self._LB + (G * self.a + x) * self._delta
        none = np.full(len(x), -1, dtype=np.int64)
        if self.cascade is None:
            return np.where(x != y, base + y - (y > x), -1), none
        C = self._cols
        rx, cx = x // C, x % C
        ry, cy = y // C, y % C
        row = base + cy - (cy > cx)
        col = base + (C - 1) + ry - (ry > rx)
        mid = rx * C + cy
        col2 = self._LB + (G * self.a + mid) * self._delta + (C - 1) + ry - (ry > rx)
        first = np.where(x == y, -1, np.where(rx == ry, row, np.where(cx == cy, col, row)))
        second = np.where((rx != ry) & (cx != cy), col2, -1)
        return first, second

    def _best_np(
        self, xa: np.ndarray, qa: np.ndarray, xb: np.ndarray | None, qb: np.ndarray | None, off: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Vectorized :meth:`_best`: (copy, minimal local hops)."""
        m = self.global_links
        n = len(xa)
        if m == 1:
            cost = self._acost[xa * self._G1 + qa, 0].astype(np.int64)
            if xb is not None:
                cost = cost + self._acost[xb * self._G1 + qb, 0]
            return np.zeros(n, dtype=np.int64), cost
        copy = np.empty(n, dtype=np.int64)
        cost = np.empty(n, dtype=np.int64)
        step = max(1, _BEST_BLOCK // m)
        cc = np.arange(m, dtype=np.int32)[None, :]
        for i in range(0, n, step):
            sl = slice(i, i + step)
            c = self._acost[xa[sl] * self._G1 + qa[sl]].astype(np.int32)
            if xb is not None:
                c += self._acost[xb[sl] * self._G1 + qb[sl]]
            score = c * m + (cc - off[sl, None].astype(np.int32)) % m
            best = np.argmin(score, axis=1)
            copy[sl] = best
            cost[sl] = np.take_along_axis(c, best[:, None], axis=1)[:, 0]
        return copy, cost

    def _routes_vec(self, s: np.ndarray, d: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a, p, N, G1, U, GB = self.a, self.p, self.n_nodes, self._G1, self._U, self._GB
        n = len(s)
        rs, rd = s // p, d // p
        Gs, xs = rs // a, rs % a
        Gd, xd = rd // a, rd % a
        cols = np.full((n, 10), -1, dtype=np.int64)
        nz = s != d
        cols[:, 0] = np.where(nz, s, -1)
        cols[:, 9] = np.where(nz, N + d, -1)
        same = Gs == Gd
        i = np.flatnonzero(same)
        if len(i):
            cols[i, 1], cols[i, 2] = self._local_np(Gs[i], xs[i], xd[i])
        val = ~same if (self.routing == "valiant" and self.g > 2) else np.zeros(n, dtype=bool)
        i = np.flatnonzero(~same & ~val)
        if len(i):
            q12 = self._qidx_np(Gs[i], Gd[i])
            q21 = self._qidx_np(Gd[i], Gs[i])
            hm = pair_hash_np(self._salt_min, s[i], d[i], np.zeros(len(i), dtype=np.int64))
            off = (hm % np.uint64(self.global_links)).astype(np.int64)
            cp, _ = self._best_np(xs[i], q12, xd[i], q21, off)
            r1, r2 = self._rho[q12, cp], self._rho[q21, cp]
            cols[i, 1], cols[i, 2] = self._local_np(Gs[i], xs[i], r1)
            cols[i, 3] = GB + Gs[i] * U + cp * G1 + q12
            cols[i, 4], cols[i, 5] = self._local_np(Gd[i], r2, xd[i])
        i = np.flatnonzero(val)
        if len(i):
            m = np.uint64(self.global_links)
            hv = pair_hash_np(self._salt_val, s[i], d[i], k[i])
            gs, gd = Gs[i], Gd[i]
            lo, hi = np.minimum(gs, gd), np.maximum(gs, gd)
            gi = (hv % np.uint64(self.g - 2)).astype(np.int64)
            gi += gi >= lo
            gi += gi >= hi
            q1, qi1 = self._qidx_np(gs, gi), self._qidx_np(gi, gs)
            c1, _ = self._best_np(xs[i], q1, None, None, (mix64_np(hv ^ np.uint64(1)) % m).astype(np.int64))
            r1, xi = self._rho[q1, c1], self._rho[qi1, c1]
            qi2, q2i = self._qidx_np(gi, gd), self._qidx_np(gd, gi)
            c2, _ = self._best_np(xi, qi2, xd[i], q2i, (mix64_np(hv ^ np.uint64(2)) % m).astype(np.int64))
            ri, r2 = self._rho[qi2, c2], self._rho[q2i, c2]
            cols[i, 1], cols[i, 2] = self._local_np(gs, xs[i], r1)
            cols[i, 3] = GB + gs * U + c1 * G1 + q1
            cols[i, 4], cols[i, 5] = self._local_np(gi, xi, ri)
            cols[i, 6] = GB + gi * U + c2 * G1 + qi2
            cols[i, 7], cols[i, 8] = self._local_np(gd, r2, xd[i])
        return assemble_columns(cols)

    # ------------------------------------------------------------------ hops and metrics
    def _hops1(self, src: int, dst: int) -> int:
        a, p = self.a, self.p
        Gs, xs = divmod(src // p, a)
        Gd, xd = divmod(dst // p, a)
        if Gs == Gd:
            return self._lh_l[xs][xd]
        _, cost = self._best(xs, self._qidx(Gs, Gd), xd, self._qidx(Gd, Gs), 0)
        return cost + 1

    def _hops_vec(self, s: np.ndarray, d: np.ndarray) -> np.ndarray:
        a, p = self.a, self.p
        rs, rd = s // p, d // p
        Gs, xs = rs // a, rs % a
        Gd, xd = rd // a, rd % a
        out = np.empty(len(s), dtype=np.int32)
        same = Gs == Gd
        out[same] = self._lh[xs[same], xd[same]]
        i = np.flatnonzero(~same)
        if len(i):
            q12 = self._qidx_np(Gs[i], Gd[i])
            q21 = self._qidx_np(Gd[i], Gs[i])
            _, cost = self._best_np(xs[i], q12, xd[i], q21, np.zeros(len(i), dtype=np.int64))
            out[i] = cost + 1
        return out

    def _diameter(self) -> int:
        ld = int(self._lh.max())
        if self.g == 1:
            return ld
        if self.global_links == 1:
            # One link per group pair: some router is ld hops from the link's end in each group.
            return 2 * ld + 1
        a, m, G1 = self.a, self.global_links, self._G1
        if self.arrangement == "absolute":
            combos = [(x, y) for x in range(G1) for y in range(G1)]
        else:
            combos = [(x, G1 - 1 - x) for x in range(G1)]
        if len(combos) * a * a * m > 3 * 10**8:
            return 2 * ld + 1  # upper bound; exact enumeration would be too slow
        A = self._acost.reshape(a, G1, m)
        worst = 0
        for x, y in combos:
            best = (A[:, x, :][:, None, :] + A[:, y, :][None, :, :]).min(axis=2)
            worst = max(worst, int(best.max()))
        return max(ld, worst + 1)

    def _bisection_cut(self) -> tuple[int, float]:
        if self.g >= 2:
            # Group-aligned halves (Kim et al.): m links join each pair of groups.
            lo, hi = self.g // 2, self.g - self.g // 2
            links = self.global_links * lo * hi
            return links, links * self.global_bw
        a = self.a
        if a == 1:
            half = self.n_nodes // 2
            return half, half * self.inject_bw
        if self.cascade is None:
            links = (a // 2) * (a - a // 2)
            return links, links * self.local_bw * self.local_mult[0]
        R, C = self._rows, self._cols
        cands = []
        if C >= 2:
            n = R * (C // 2) * (C - C // 2)
            cands.append((n, n * self.local_bw * self.local_mult[0]))
        if R >= 2:
            n = C * (R // 2) * (R - R // 2)
            cands.append((n, n * self.local_bw * self.local_mult[1]))
        return min(cands, key=lambda t: (t[1], t[0]))

    def locality_units(self) -> np.ndarray:
        """Group of each router."""
        return (np.arange(self.n_routers, dtype=np.int64) // self.a).astype(np.int32)

    def _describe_params(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "p": self.p,
            "h": self.h,
            "g": self.g,
            "global_links_per_group_pair": self.global_links,
            "global_ports_used_per_group": self._U,
            "arrangement": self.arrangement,
            "cascade": list(self.cascade) if self.cascade else None,
            "local_mult": list(self.local_mult),
            "local_bw": self.local_bw,
            "local_lat": self.local_lat,
            "global_bw": self.global_bw,
            "global_lat": self.global_lat,
            "inject_bw": self.inject_bw,
            "inject_lat": self.inject_lat,
            "seed": self.seed,
        }
