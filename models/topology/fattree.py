"""Parallel generalized fat-trees (PGFT) with D-mod-k, ECMP and adaptive routing.

Notation (Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic for Shift Permutations on
Real Life Fat Trees", 2010): a tree of ``h`` switch levels is PGFT(h; m_1..m_h; w_1..w_h;
p_1..p_h) where, for level ``l`` (level 0 = compute nodes, level 1 = leaves):

* ``m_l`` (``down[l-1]``): children of a level-``l`` switch,
* ``w_l`` (``up[l-1]``): parents of a level-``l-1`` element (``w_1 = 1``: a node has one
  leaf),
* ``p_l`` (``parallel[l-1]``): parallel links between a child and each of its parents.

There are ``N = m_1 * ... * m_h`` nodes and ``(N / (m_1..m_l)) * (w_1..w_l)`` switches at
level ``l``. Textbook k-ary n-trees are PGFT(n; k..k; 1,k..k; 1..1); LLNL Cab is
PGFT(3; 18,18,4; 1,18,2; 1,1,9). Pods are the subtrees under the top level (``m_h`` of them):
in a 3-level tree a pod is a set of leaves and L2 switches, in a 2-level tree a pod is a leaf.

Numbering. Node ``D`` has digits ``a_l`` with ``D = a_1 + m_1 (a_2 + m_2 (...))``. A level-``l``
switch has a subtree index ``D // (m_1..m_l)`` (shared by the nodes below it) and a replica
index ``b_1 + w_1 (b_2 + ...)`` telling which of the ``w_1..w_l`` parallel switches it is;
its index within its level is ``subtree * (w_1..w_l) + replica``. Routers are numbered level
by level, leaves first (so router ``i < n_leaves`` is leaf ``i``). The links from a level
``l-1`` element ``e`` to its parents are its up ports ``q = 0 .. w_l p_l - 1`` (parent
replica digit ``q mod w_l``, parallel copy ``q // w_l``); up link ``(l, e, q)`` has id
``UB_l + e * w_l p_l + q`` and its reverse (the down link into ``e``) ``DB_l + e * w_l p_l + q``.
Level 1's up and down links are the nodes' injection and ejection links.

Routing goes up to the lowest common ancestor level and down along the unique path that keeps
the replica digits chosen on the way up. D-mod-k picks up port
``(D // (w_1 p_1 .. w_{l-1} p_{l-1})) mod (w_l p_l)`` at level ``l``; ECMP picks the ports from
a hash of (seed, src, dst, key); ``adaptive`` picks the source leaf's least occupied uplink (queued
seconds with unbounded buffers, bytes in use with credits)
(ties to the D-mod-k port) and D-mod-k above it.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from functools import cached_property
from math import prod
from typing import Any, Callable, ClassVar, NamedTuple, Sequence

import numpy as np

from ..errors import TopologyError
from .base import (
    KIND_DOWN,
    KIND_EJECT,
    KIND_INJECT,
    KIND_UP,
    Topology,
    _readonly,
    assemble_columns,
)
from .hashing import pair_hash, pair_hash_np, salt_seed
from .validate import check_bw, check_choice, check_int, check_ints, check_lat, check_size

_SALT_ECMP = 0xEC3F

__all__ = ["FatTree", "FatTreeLinkNumbering", "radix_shape"]


class FatTreeLinkNumbering(NamedTuple):
    """How a fat-tree numbers its switch links, per level ``l`` (entry 0 unused).

    The up link from element ``e`` of level ``l-1`` through its up port ``q`` has id
    ``up_link_base[l] + e * up_ports[l] + q``; its reverse, the down link into ``e``,
    ``down_link_base[l] + e * up_ports[l] + q`` (``UB_l``, ``DB_l`` and ``w_l p_l`` of the
    module docstring).
    """

    #: Id of the first up link from level ``l-1`` to level ``l`` (``UB_l``).
    up_link_base: tuple[int, ...]
    #: Id of the first down link from level ``l`` to level ``l-1`` (``DB_l``).
    down_link_base: tuple[int, ...]
    #: Up ports of each level-``l-1`` element (``w_l p_l``).
    up_ports: tuple[int, ...]

    def up_link_ids(self, level: int, element: Any, port: Any) -> Any:
        """Id of the up link leaving ``element`` of level ``level-1`` by ``port`` (arrays work)."""
        return self.up_link_base[level] + element * self.up_ports[level] + port

    def down_link_ids(self, level: int, element: Any, port: Any) -> Any:
        """Id of the down link into ``element`` of level ``level-1`` through its ``port``."""
        return self.down_link_base[level] + element * self.up_ports[level] + port


@dataclass(frozen=True, kw_only=True)
class FatTree(Topology):
    """A parallel generalized fat-tree (see the module docstring for the notation).

    ``down``, ``up`` and ``parallel`` have one entry per level, lowest level first;
    ``up[0]`` and ``parallel[0]`` must be 1 (one link from a node to its leaf). ``radix``,
    when given, checks that no switch uses more ports. Without ``down`` and ``up`` the shape
    comes from ``radix``, ``levels``, ``pods`` and ``taper`` as in :meth:`from_radix`
    (``FatTree(radix=36, levels=3, pods=4)`` is Cab's tree); ``pods`` and ``taper`` then
    hold the tree's pod count and leaf oversubscription. :meth:`kary_ntree` builds k-ary
    n-trees.
    """

    name: ClassVar[str] = "fattree"
    ROUTINGS: ClassVar[tuple[str, ...]] = ("dmodk", "ecmp", "adaptive")
    ADAPTIVE_ROUTINGS: ClassVar[tuple[str, ...]] = ("adaptive",)
    KEYED_ROUTINGS: ClassVar[tuple[str, ...]] = ("ecmp",)

    levels: int
    down: tuple[int, ...] | None = None
    up: tuple[int, ...] | None = None
    parallel: tuple[int, ...] | None = None
    radix: int | None = None
    #: Shape by radix (used only when down and up are not given; see :meth:`from_radix`).
    pods: int | None = field(default=None, compare=False)
    taper: float = field(default=1.0, compare=False)
    link_bw: InitVar[float | str] = "4GB/s"
    link_lat: InitVar[float | str] = "100ns"
    inject_bw: float | str | None = None
    inject_lat: float | str | None = None
    routing: str = "dmodk"
    seed: int = 0
    cache_size: int = field(default=1 << 17, compare=False, repr=False)
    #: Bandwidth (bytes/s) and latency (s) of every switch-to-switch link (from link_bw, link_lat).
    switch_bw: float = field(init=False)
    switch_lat: float = field(init=False)

    # ------------------------------------------------------------------ construction
    def __post_init__(self, link_bw: float | str, link_lat: float | str) -> None:
        c = "FatTree"
        by_radix = self.down is None and self.up is None
        if by_radix:
            if self.radix is None:
                raise TopologyError(f"{c}: give the shape (levels, down, up[, parallel]) or a radix (radix, levels[, pods, taper])")
            if self.parallel is not None:
                raise TopologyError(f"{c}: parallel goes with an explicit shape (down, up); a radix-built tree derives it")
            shape = radix_shape(self.radix, self.levels, self.pods, self.taper)
            self._set("down", shape[0])
            self._set("up", shape[1])
            self._set("parallel", shape[2])
        elif self.down is None or self.up is None:
            raise TopologyError(f"{c}: down and up go together (one entry per level); got down={self.down!r}, up={self.up!r}")
        elif self.pods is not None or self.taper != 1.0:
            raise TopologyError(f"{c}: pods and taper shape a radix-built tree; with an explicit shape (down, up) leave them out")
        h = check_int(c, "levels", self.levels, 1, 16)
        m = check_ints(c, "down", self.down, h, 1)
        w = check_ints(c, "up", self.up, h, 1)
        p = check_ints(c, "parallel", self.parallel if self.parallel is not None else (1,) * h, h, 1)
        if w[0] != 1:
            raise TopologyError(
                f"{c}: up[0] (leaves per compute node) must be 1, got {w[0]}: nodes have one network port; "
                "up[i] for i >= 1 gives the parents of a level-i switch (up[1]: L2 switches per leaf)"
            )
        if p[0] != 1:
            raise TopologyError(f"{c}: parallel[0] (links from a node to its leaf) must be 1, got {p[0]}; raise inject_bw instead")
        bw = check_bw(c, "link_bw", link_bw)
        lat = check_lat(c, "link_lat", link_lat)
        ibw = bw if self.inject_bw is None else check_bw(c, "inject_bw", self.inject_bw)
        ilat = lat if self.inject_lat is None else check_lat(c, "inject_lat", self.inject_lat)
        check_choice(c, "routing", self.routing, self.ROUTINGS)
        seed = check_int(c, "seed", self.seed, 0)
        cache = check_int(c, "cache_size", self.cache_size, 1)
        for nm, v in (("down", m), ("up", w), ("parallel", p)):
            self._set(nm, v)
        self._set("levels", h)
        self._set("switch_bw", bw)
        self._set("switch_lat", lat)
        self._set("inject_bw", ibw)
        self._set("inject_lat", ilat)
        self._set("seed", seed)
        shape = (
            dict(radix=self.radix, pods=self.pods, taper=self.taper)
            if by_radix
            else dict(down=m, up=w, parallel=p, radix=self.radix)
        )
        self._set(
            "_init_kwargs",
            dict(levels=h, **shape, link_bw=bw, link_lat=lat, inject_bw=ibw, inject_lat=ilat,
                 routing=self.routing, seed=seed, cache_size=cache),
        )

        N = check_size(c, "nodes", prod(m))
        if N < 2:
            raise TopologyError(f"{c}: the tree must have at least 2 nodes (product of down), got down={m}")
        # Per-level tables, indexed by level l = 0..h (entry 0 unused where it has no meaning).
        M = [1] * (h + 1)  # nodes under a level-l subtree
        R = [1] * (h + 1)  # replicas (parallel switches) per level-l subtree
        W = [1] * (h + 1)  # up ports of a level-(l-1) element
        P = [1] * (h + 1)  # product of W_1..W_l (D-mod-k divisor for level l+1)
        for lv in range(1, h + 1):
            M[lv] = M[lv - 1] * m[lv - 1]
            R[lv] = R[lv - 1] * w[lv - 1]
            W[lv] = w[lv - 1] * p[lv - 1]
            P[lv] = P[lv - 1] * W[lv]
        S = [0] + [(N // M[lv]) * R[lv] for lv in range(1, h + 1)]  # switches per level
        E = [N] + S[1:]  # elements per level (nodes at level 0)
        RB = [0] * (h + 2)
        for lv in range(1, h + 1):
            RB[lv + 1] = RB[lv] + S[lv]
        n_routers = check_size(c, "switches", RB[h + 1])
        UB = [0] * (h + 1)
        DB = [0] * (h + 1)
        base = 0
        for lv in range(1, h + 1):
            UB[lv] = base
            base += E[lv - 1] * W[lv]
            DB[lv] = base
            base += E[lv - 1] * W[lv]
        n_links = check_size(c, "links", base)
        check_size(c, "vertices", N + n_routers)
        if self.radix is not None:
            rdx = check_int(c, "radix", self.radix, 2)
            self._set("radix", rdx)
            for lv in range(1, h + 1):
                ports = m[lv - 1] * p[lv - 1] + (W[lv + 1] if lv < h else 0)
                if ports > rdx:
                    raise TopologyError(
                        f"{c}: a level-{lv} switch needs {ports} ports (down {m[lv - 1]}x{p[lv - 1]}"
                        f"{f' + up {W[lv + 1]}' if lv < h else ''}), more than radix={rdx}"
                    )
        for nm, v in (("_M", M), ("_R", R), ("_W", W), ("_P", P), ("_S", S), ("_RB", RB), ("_UB", UB), ("_DB", DB)):
            self._set(nm, tuple(v))
        self._set("_salt", salt_seed(seed, _SALT_ECMP))
        self._set("pods", N // M[h - 1] if h >= 2 else 1)
        self._set("taper", m[0] / W[2] if h >= 2 else 1.0)

        src = np.empty(n_links, dtype=np.int64)
        dst = np.empty(n_links, dtype=np.int64)
        kind = np.empty(n_links, dtype=np.int8)
        lbw = np.empty(n_links, dtype=np.float64)
        llat = np.empty(n_links, dtype=np.float64)
        for lv in range(1, h + 1):
            cnt = E[lv - 1] * W[lv]
            e = np.repeat(np.arange(E[lv - 1], dtype=np.int64), W[lv])
            q = np.tile(np.arange(W[lv], dtype=np.int64), E[lv - 1])
            parent = (e // R[lv - 1] // m[lv - 1]) * R[lv] + e % R[lv - 1] + R[lv - 1] * (q % w[lv - 1])
            child_v = e if lv == 1 else N + RB[lv - 1] + e
            parent_v = N + RB[lv] + parent
            u, d = slice(UB[lv], UB[lv] + cnt), slice(DB[lv], DB[lv] + cnt)
            src[u], dst[u] = child_v, parent_v
            src[d], dst[d] = parent_v, child_v
            kind[u] = KIND_INJECT if lv == 1 else KIND_UP
            kind[d] = KIND_EJECT if lv == 1 else KIND_DOWN
            lbw[u] = lbw[d] = ibw if lv == 1 else bw
            llat[u] = llat[d] = ilat if lv == 1 else lat
        self._init_arrays(
            n_routers=n_routers,
            node_router=np.arange(N, dtype=np.int64) // m[0],
            link_src=src,
            link_dst=dst,
            link_bw=lbw,
            link_lat=llat,
            link_kind=kind,
            cache_size=cache,
        )

    @classmethod
    def from_radix(
        cls,
        *,
        radix: int,
        levels: int = 3,
        pods: int | None = None,
        taper: float = 1.0,
        **kwargs: Any,
    ) -> "FatTree":
        """The usual 1-, 2- or 3-level tree of ``radix``-port switches.

        Leaves have ``d`` node ports and ``u = radix - d`` uplinks with ``d / u = taper``
        (1.0: full bisection, r/2 nodes per leaf; 2.0: 2:1 oversubscription at the leaves).
        3 levels: a pod is ``radix/2`` leaves fully joined to ``u`` L2 switches, each L2 has
        ``radix/2`` uplinks to the spines; ``pods`` (default ``radix``) pods. 2 levels: a pod is
        a leaf and ``pods`` (default ``radix``) leaves join the spines. Each L2 (3 levels) or
        leaf (2 levels) reaches ``w`` spines with ``k`` parallel links each, where ``k`` is the
        largest divisor of its uplink count with ``pods * k <= radix`` (spine ports), so Cab
        (radix 36, 4 pods) gets 36 spines with 9 links to each L2 it reaches. 1 level: one
        switch with ``radix`` nodes. Other keywords (``link_bw``, ``routing``, ...) pass through.
        """
        return cls(radix=radix, levels=levels, pods=pods, taper=taper, **kwargs)

    @classmethod
    def kary_ntree(cls, *, k: int, n: int, **kwargs: Any) -> "FatTree":
        """The k-ary n-tree: ``k**n`` nodes, ``n`` levels of ``k**(n-1)`` switches of radix 2k."""
        kk = check_int("FatTree.kary_ntree", "k", k, 2)
        nn = check_int("FatTree.kary_ntree", "n", n, 1, 16)
        return cls(levels=nn, down=(kk,) * nn, up=(1,) + (kk,) * (nn - 1), **kwargs)

    # ------------------------------------------------------------------ pods and leaves
    @property
    def nodes_per_leaf(self) -> int:
        """Compute nodes on each leaf switch."""
        return self.down[0]

    @property
    def n_leaves(self) -> int:
        """Number of leaf switches (router indices ``0..n_leaves-1``)."""
        return self._S[1]

    @property
    def nodes_per_pod(self) -> int:
        """Compute nodes in each pod (the subtrees below the top level)."""
        return self._M[self.levels - 1] if self.levels >= 2 else self.n_nodes

    @property
    def n_pods(self) -> int:
        """Number of pods (``down[-1]`` for trees of 2 or more levels)."""
        return self.n_nodes // self.nodes_per_pod

    @property
    def leaves_per_pod(self) -> int:
        """Leaf switches in each pod."""
        return self.nodes_per_pod // self.down[0]

    @property
    def uplinks_per_leaf(self) -> int:
        """Up ports of each leaf (``up[1] * parallel[1]``; 0 for a 1-level tree)."""
        return self._W[2] if self.levels >= 2 else 0

    @property
    def n_spines(self) -> int:
        """Number of top-level switches."""
        return self._S[self.levels]

    def switches_per_level(self) -> tuple[int, ...]:
        """Number of switches at levels 1..levels."""
        return self._S[1:]

    @property
    def link_numbering(self) -> FatTreeLinkNumbering:
        """The per-level bases and port counts that give switch link ids (read-only)."""
        return FatTreeLinkNumbering(self._UB, self._DB, self._W)

    @property
    def leaf_of_node(self) -> np.ndarray:
        """Leaf (router index) of every node (int32)."""
        return self.node_router

    @cached_property
    def pod_of_node(self) -> np.ndarray:
        """Pod of every node (int32)."""
        return _readonly((np.arange(self.n_nodes, dtype=np.int64) // self.nodes_per_pod).astype(np.int32))

    def nodes_of_leaf(self, leaf: int) -> np.ndarray:
        """Node ids on leaf ``leaf``."""
        i = check_int(self.name, "leaf", leaf, 0, self.n_leaves - 1)
        n = self.nodes_per_leaf
        return np.arange(i * n, (i + 1) * n, dtype=np.int64)

    def nodes_of_pod(self, pod: int) -> np.ndarray:
        """Node ids in pod ``pod``."""
        i = check_int(self.name, "pod", pod, 0, self.n_pods - 1)
        n = self.nodes_per_pod
        return np.arange(i * n, (i + 1) * n, dtype=np.int64)

    def leaves_of_pod(self, pod: int) -> np.ndarray:
        """Leaf router indices in pod ``pod``."""
        i = check_int(self.name, "pod", pod, 0, self.n_pods - 1)
        n = self.leaves_per_pod
        return np.arange(i * n, (i + 1) * n, dtype=np.int64)

    def switches_of_pod(self, pod: int, level: int) -> np.ndarray:
        """Router indices of the level-``level`` switches in pod ``pod`` (1 <= level < levels)."""
        i = check_int(self.name, "pod", pod, 0, self.n_pods - 1)
        lv = check_int(self.name, "level", level, 1, max(1, self.levels - 1))
        per = (self.nodes_per_pod // self._M[lv]) * self._R[lv]
        base = self._RB[lv]
        return np.arange(base + i * per, base + (i + 1) * per, dtype=np.int64)

    def l2_of_pod(self, pod: int) -> np.ndarray:
        """Router indices of the L2 switches in pod ``pod`` (trees of 3 or more levels)."""
        if self.levels < 3:
            raise TopologyError(f"{self.name}: a {self.levels}-level tree has no L2 switches inside pods")
        return self.switches_of_pod(pod, 2)

    def spines(self) -> np.ndarray:
        """Router indices of the top-level switches."""
        return self.routers_at_level(self.levels)

    def routers_at_level(self, level: int) -> np.ndarray:
        """Router indices of the switches at ``level`` (1 = leaves)."""
        lv = check_int(self.name, "level", level, 1, self.levels)
        return np.arange(self._RB[lv], self._RB[lv + 1], dtype=np.int64)

    def switch_level(self, router: int) -> int:
        """Level (1 = leaf) of router index ``router``."""
        r = check_int(self.name, "router", router, 0, self.n_routers - 1)
        for lv in range(1, self.levels + 1):
            if r < self._RB[lv + 1]:
                return lv
        raise AssertionError("unreachable")  # pragma: no cover

    def uplinks(self, router: int) -> np.ndarray:
        """Up link ids of a switch, indexed by up port (empty for top-level switches)."""
        lv = self.switch_level(router)
        if lv == self.levels:
            return np.zeros(0, dtype=np.int64)
        e = int(router) - self._RB[lv]
        W = self._W[lv + 1]
        return self._UB[lv + 1] + e * W + np.arange(W, dtype=np.int64)

    def downlinks(self, router: int) -> np.ndarray:
        """Down link ids of a switch (to its children, ejection links for leaves), increasing."""
        self.switch_level(router)  # checks the index
        out = self.out_links(self.n_nodes + int(router))
        kind = self.link_kind[out]
        return out[(kind == KIND_DOWN) | (kind == KIND_EJECT)].astype(np.int64)

    def up_port_target(self, router: int, port: int) -> int:
        """Router index reached from switch ``router`` through up port ``port``."""
        ups = self.uplinks(router)
        q = check_int(self.name, "port", port, 0, max(0, len(ups) - 1))
        if not len(ups):
            raise TopologyError(f"{self.name}: router {router} is a top-level switch and has no up ports")
        return int(self.link_dst[ups[q]]) - self.n_nodes

    # ------------------------------------------------------------------ routing
    @cached_property
    def _summary_bw(self) -> tuple[float, float, list[int]] | None:
        # (the smaller of the injection and ejection bandwidths, the smallest of those and
        # the switch links' bandwidth, every node's ejection link) when all injection links
        # share one bandwidth, all ejection links one and all switch links one; None
        # otherwise (route_summary then declines).
        bw, kind = self.link_bw, self.link_kind
        inj = bw[kind == KIND_INJECT]
        ej_ids = np.flatnonzero(kind == KIND_EJECT)
        ej = bw[ej_ids]
        sw = bw[(kind == KIND_UP) | (kind == KIND_DOWN)]
        if not all(len(x) and (x == x[0]).all() for x in (inj, ej)) or (len(sw) and not (sw == sw[0]).all()):
            return None
        ends = min(inj[0].item(), ej[0].item())
        eject = np.full(self.n_nodes, -1, dtype=np.int64)
        eject[self.link_dst[ej_ids]] = ej_ids
        if len(ej_ids) != self.n_nodes or (eject < 0).any():
            return None
        return ends, min(ends, sw[0].item()) if len(sw) else ends, eject.tolist()

    def route_summary(self, src: int, dst: int) -> tuple[int, float, int] | None:
        """(links, smallest bandwidth, ejection link) of :meth:`route_uncached` from node
        ``src`` to node ``dst`` (see :meth:`Topology.route_summary`): up to the lowest common
        level and down again, two links per level whatever the ports."""
        sb = self._summary_bw
        if sb is None:
            return None
        M = self._M
        lv = 1
        while src // M[lv] != dst // M[lv]:
            lv += 1
        return 2 * lv, sb[0] if lv == 1 else sb[1], sb[2][dst]

    def _lca(self, s: int, d: int) -> int:
        M = self._M
        lv = 1
        while s // M[lv] != d // M[lv]:
            lv += 1
        return lv

    def _ports(self, s: int, d: int, key: int, L: int) -> list[int]:
        W = self._W
        q = [0, 0]
        if self.routing == "ecmp":
            hh = pair_hash(self._salt, s, d, key)
            for lv in range(2, L + 1):
                q.append(hh % W[lv])
                hh //= W[lv]
        else:
            P = self._P
            for lv in range(2, L + 1):
                q.append((d // P[lv - 1]) % W[lv])
        return q

    def _path(self, s: int, d: int, L: int, q: Sequence[int]) -> tuple[int, ...]:
        M, R, W, UB, DB, m, w = self._M, self._R, self._W, self._UB, self._DB, self.down, self.up
        up: list[int] = []
        dn: list[int] = []
        e = s
        sub = s
        r = 0
        for lv in range(1, L + 1):
            ql = q[lv]
            Wl = W[lv]
            up.append(UB[lv] + e * Wl + ql)
            dn.append(DB[lv] + ((d // M[lv - 1]) * R[lv - 1] + r) * Wl + ql)
            r += R[lv - 1] * (ql % w[lv - 1])
            sub //= m[lv - 1]
            e = sub * R[lv] + r
        dn.reverse()
        return tuple(up + dn)

    def _route1(self, src: int, dst: int, key: int) -> tuple[int, ...]:
        L = self._lca(src, dst)
        return self._path(src, dst, L, self._ports(src, dst, key, L))

    def _routes_vec(self, s: np.ndarray, d: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        h = self.levels
        M, R, W, P, UB, DB, m, w = self._M, self._R, self._W, self._P, self._UB, self._DB, self.down, self.up
        n = len(s)
        L = np.ones(n, dtype=np.int64)
        for lv in range(1, h):
            L += (s // M[lv]) != (d // M[lv])
        L[s == d] = 0
        cols = np.full((n, 2 * h), -1, dtype=np.int64)
        hh = pair_hash_np(self._salt, s, d, k) if self.routing == "ecmp" else None
        e = s.copy()
        sub = s.copy()
        r = np.zeros(n, dtype=np.int64)
        for lv in range(1, h + 1):
            act = L >= lv
            Wl = W[lv]
            if lv == 1:
                q = np.zeros(n, dtype=np.int64)
            elif hh is not None:
                q = (hh % np.uint64(Wl)).astype(np.int64)
                hh = hh // np.uint64(Wl)
            else:
                q = (d // P[lv - 1]) % Wl
            cols[:, lv - 1] = np.where(act, UB[lv] + e * Wl + q, -1)
            cols[:, 2 * h - lv] = np.where(act, DB[lv] + ((d // M[lv - 1]) * R[lv - 1] + r) * Wl + q, -1)
            if lv < h:
                r = r + R[lv - 1] * (q % w[lv - 1])
                sub = sub // m[lv - 1]
                e = sub * R[lv] + r
        return assemble_columns(cols)

    def route_adaptive(self, src: int, dst: int, key: int, backlog: Callable[[int], float]) -> tuple[int, ...]:
        """``adaptive``: the source leaf's least occupied up port (ties go to the D-mod-k
        port), D-mod-k above it. Other routings return :meth:`route`."""
        if self.routing != "adaptive":
            return self.route(src, dst, key)
        s = self._node(src, "src")
        d = self._node(dst, "dst")
        if s == d:
            return ()
        L = self._lca(s, d)
        q = self._ports(s, d, key, L)
        if L >= 2:
            W2 = self._W[2]
            base = self._UB[2] + (s // self.down[0]) * W2
            q0 = q[2]
            best, bb = q0, backlog(base + q0)
            for j in range(1, W2):
                qq = (q0 + j) % W2
                b = backlog(base + qq)
                if b < bb:
                    best, bb = qq, b
            q[2] = best
        return self._path(s, d, L, q)

    def route_via(self, src: int, dst: int, up_ports: Sequence[int]) -> tuple[int, ...]:
        """Route through explicit up ports: ``up_ports[i]`` is the up port taken at level
        ``i + 1`` (``up_ports[0]``: the source leaf's uplink, which selects the L2 switch
        ``up_ports[0] % up[1]`` of the pod; ``up_ports[1]``: that L2 switch's uplink, which
        selects the spine). Only the first ``hops(src, dst) // 2`` entries are used; the
        down path is the one that mirrors them."""
        s = self._node(src, "src")
        d = self._node(dst, "dst")
        if s == d:
            return ()
        L = self._lca(s, d)
        ports = list(up_ports)
        if len(ports) < L - 1:
            raise TopologyError(f"{self.name}: route_via({s}, {d}) climbs {L - 1} levels and needs {L - 1} up ports, got {len(ports)}")
        q = [0, 0]
        for lv in range(2, L + 1):
            q.append(check_int(self.name, f"up_ports[{lv - 2}]", ports[lv - 2], 0, self._W[lv] - 1))
        return self._path(s, d, L, q)

    def route_restricted(self, src: int, dst: int, allowed: Any, key: int = 0) -> tuple[int, ...] | None:
        """A route using only links in ``allowed`` (a bool mask over link ids or a
        collection of link ids), or None if there is none. Candidates are tried in the
        order of the selected routing's preferred ports, then cyclically."""
        s = self._node(src, "src")
        d = self._node(dst, "dst")
        if isinstance(allowed, np.ndarray) and allowed.dtype == bool:
            if allowed.shape != (self.n_links,):
                raise TopologyError(f"{self.name}: allowed mask must have {self.n_links} entries, got {allowed.shape}")
            ok = allowed
        else:
            ok = np.zeros(self.n_links, dtype=bool)
            ids = np.fromiter((int(x) for x in allowed), dtype=np.int64)
            if ids.size and (ids.min() < 0 or ids.max() >= self.n_links):
                raise TopologyError(f"{self.name}: allowed link ids must be in 0..{self.n_links - 1}")
            ok[ids] = True
        if s == d:
            return ()
        L = self._lca(s, d)
        pref = self._ports(s, d, key, L)
        M, R, W, UB, DB, m, w = self._M, self._R, self._W, self._UB, self._DB, self.down, self.up
        if not (ok[UB[1] + s] and ok[DB[1] + d]):
            return None
        q = [0, 0] + [0] * (L - 1)

        def climb(lv: int, e: int, sub: int, r: int) -> bool:
            if lv > L:
                return True
            Wl = W[lv]
            ed = ((d // M[lv - 1]) * R[lv - 1] + r) * Wl
            for j in range(Wl):
                ql = (pref[lv] + j) % Wl
                if not (ok[UB[lv] + e * Wl + ql] and ok[DB[lv] + ed + ql]):
                    continue
                q[lv] = ql
                r2 = r + R[lv - 1] * (ql % w[lv - 1])
                sub2 = sub // m[lv - 1]
                if climb(lv + 1, sub2 * R[lv] + r2, sub2, r2):
                    return True
            return False

        sub1 = s // m[0]
        if not climb(2, sub1, sub1, 0):
            return None
        return self._path(s, d, L, q)

    # ------------------------------------------------------------------ hops and metrics
    def _hops1(self, src: int, dst: int) -> int:
        return 0 if src == dst else 2 * (self._lca(src, dst) - 1)

    def _hops_vec(self, s: np.ndarray, d: np.ndarray) -> np.ndarray:
        out = np.zeros(len(s), dtype=np.int32)
        for lv in range(1, self.levels):
            out += 2 * ((s // self._M[lv]) != (d // self._M[lv]))
        return out

    def pair_hop_sum(self, nodes: Any) -> int:
        a = self._distinct_nodes(nodes)
        n = len(a)
        pairs = n * (n - 1) // 2
        total = 0
        for lv in range(1, self.levels):
            cnt = np.unique(a // self._M[lv], return_counts=True)[1].astype(np.int64)
            total += 2 * (pairs - int((cnt * (cnt - 1) // 2).sum()))
        return total

    def _diameter(self) -> int:
        top = max((lv for lv in range(1, self.levels + 1) if self.down[lv - 1] > 1), default=1)
        return 2 * (top - 1)

    def _bisection_cut(self) -> tuple[int, float]:
        # Cutting every up link of level l from half the nodes isolates them; that half must
        # be a union of level-(l-1) subtrees. The bisection is the cheapest such cut.
        N = self.n_nodes
        half = N // 2
        best: tuple[int, float] | None = None
        for lv in range(1, self.levels + 1):
            Msub = self._M[lv - 1]
            if half % Msub:
                continue
            links = (half // Msub) * self._R[lv - 1] * self._W[lv]
            bw = links * (self.inject_bw if lv == 1 else self.switch_bw)
            if best is None or bw < best[1]:
                best = (links, bw)
        assert best is not None  # level 1 always qualifies
        return best

    def locality_units(self) -> np.ndarray:
        """Pod of each switch; top-level switches get their own units after the pods."""
        h = self.levels
        out = np.empty(self.n_routers, dtype=np.int64)
        if h == 1:
            out[:] = 0
            return out.astype(np.int32)
        per_pod_sub = self.nodes_per_pod
        for lv in range(1, h):
            e = np.arange(self._S[lv], dtype=np.int64)
            out[self._RB[lv] : self._RB[lv + 1]] = (e // self._R[lv]) // (per_pod_sub // self._M[lv])
        out[self._RB[h] :] = self.n_pods + np.arange(self._S[h])
        return out.astype(np.int32)

    def _describe_params(self) -> dict[str, Any]:
        return {
            "levels": self.levels,
            "down": list(self.down),
            "up": list(self.up),
            "parallel": list(self.parallel),
            "radix": self.radix,
            "switches_per_level": list(self.switches_per_level()),
            "pods": self.n_pods,
            "leaves": self.n_leaves,
            "nodes_per_leaf": self.nodes_per_leaf,
            "leaves_per_pod": self.leaves_per_pod,
            "uplinks_per_leaf": self.uplinks_per_leaf,
            "spines": self.n_spines,
            "link_bw": self.switch_bw,
            "link_lat": self.switch_lat,
            "inject_bw": self.inject_bw,
            "inject_lat": self.inject_lat,
            "seed": self.seed,
        }


def _largest_divisor(n: int, limit: int) -> int:
    """Largest divisor of ``n`` that is <= ``limit`` (at least 1)."""
    for k in range(min(n, max(limit, 1)), 0, -1):
        if n % k == 0:
            return k
    return 1


def radix_shape(radix: Any, levels: Any, pods: Any, taper: Any) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(down, up, parallel) of the 1-, 2- or 3-level tree of :meth:`FatTree.from_radix`."""
    c = "FatTree"
    r = check_int(c, "radix", radix, 2)
    h = check_int(c, "levels", levels, 1, 3)
    try:
        t = float(taper)
    except (TypeError, ValueError):
        raise TopologyError(f"{c}: taper must be a number >= 1 (1.0 = full bisection), got {taper!r}") from None
    if not t >= 1.0 or t == float("inf"):
        raise TopologyError(f"{c}: taper must be a finite number >= 1 (1.0 = full bisection), got {taper!r}")
    if h == 1:
        if pods is not None or t != 1.0:
            raise TopologyError(f"{c}: a 1-level tree (one switch) takes neither pods nor taper")
        return (r,), (1,), (1,)
    d = r * t / (1.0 + t)
    di = int(round(d))
    if abs(d - di) > 1e-9 or di < 1 or di >= r:
        valid = [f"{dd / (r - dd):.4g} ({dd}:{r - dd})" for dd in range((r + 1) // 2, r)]
        raise TopologyError(
            f"{c}: taper={taper} does not split radix {r} into whole node and uplink ports; "
            f"valid tapers for radix {r} (node:uplink ports): {', '.join(valid)}"
        )
    u = r - di
    if h == 2:
        npods = r if pods is None else check_int(c, "pods", pods, 1, r)
        k = _largest_divisor(u, r // npods)
        return (di, npods), (1, u // k), (1, k)
    if r % 2:
        raise TopologyError(f"{c}: a 3-level tree needs an even radix (L2 switches split r/2 down, r/2 up), got {r}")
    npods = r if pods is None else check_int(c, "pods", pods, 1, r)
    half = r // 2
    k = _largest_divisor(half, r // npods)
    return (di, half, npods), (1, u, half // k), (1, 1, k)
