"""Synthetic traffic patterns: the destination of every message, by name.

The standard patterns of interconnect studies (Dally & Towles, *Principles and Practices of
Interconnection Networks*, ch. 3), defined on the ``n`` nodes of a job, indexed
``0..n-1`` in job order (``nodes[i]`` is the machine node of index ``i``):

=====================  ========================================================================
``uniform``            every message to a node drawn uniformly among the others
``permutation``        a fixed random permutation (drawn from the job's shared stream)
``shift``              ``i -> (i + shift) mod n`` (``shift`` defaults to ``n // 2``)
``tornado``            on a torus: ``ceil(k/2) - 1`` hops ahead in every dimension of size k;
                       elsewhere ``i -> (i + ceil(n/2) - 1) mod n``
``transpose``          ``n = m^2``: ``i = r m + c -> c m + r`` (an involution)
``bitcomp``            ``n = 2^b``: ``i -> NOT i`` (bit-complement of the index)
``neighbor``           on a torus: a random grid neighbour (same slot of a neighbouring
                       router); elsewhere ``i +- 1 mod n``
``hotspot``            a fraction ``hot_fraction`` of the messages to one of ``hot_nodes`` hot
                       nodes (drawn from the shared stream), the rest uniform
``group-adversarial``  dragonfly: every node of group g sends to a random node of group g+1
=====================  ========================================================================

A pattern maps a source index and a random stream to a destination index, or to None when
the source sends nothing (a fixed point of a permutation: ``transpose``'s diagonal, a
``permutation``'s fixed points); random choices never pick the source itself. Patterns are
pure: :func:`build_pattern` validates and builds one, :func:`check_pattern` runs the checks
that need only the node count (a job's size). New patterns register with
``@pattern(name, summary)`` on a builder ``f(ctx) -> dest(i, rng)`` of a
:class:`PatternContext`.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..errors import AppConfigError

__all__ = ["Pattern", "PatternContext", "TrafficPatternError", "build_pattern", "check_pattern", "pattern",
           "pattern_names", "PATTERNS"]

Dest = Callable[[int, random.Random], "int | None"]


class TrafficPatternError(AppConfigError):
    """A traffic pattern that cannot be used with the given nodes, topology or parameters."""


@dataclass(frozen=True, kw_only=True)
class PatternContext:
    """What a pattern builder sees.

    Attributes:
        nodes: the machine node of every index (job order).
        topology: the machine's topology (None: only the index-based definitions apply).
        rng: a random stream that is the same on every rank of the job, for the draws all
            ranks must agree on (a permutation's key, the hot nodes).
        shift: the shift of ``shift`` (None: ``n // 2``).
        hot_nodes, hot_fraction: the hot-spot parameters.
    """

    nodes: tuple[int, ...]
    topology: Any = None
    rng: random.Random
    shift: int | None = None
    hot_nodes: int = 1
    hot_fraction: float = 0.1

    @property
    def n(self) -> int:
        return len(self.nodes)


@dataclass(frozen=True)
class PatternInfo:
    """One registered pattern: its builder, a one-line summary, and ``check(name, n, ctx_params)``
    of what depends on the node count alone."""

    name: str
    summary: str
    build: Callable[[PatternContext], Dest]
    check: Callable[[str, int, dict[str, Any]], None] | None


class Pattern:
    """A built pattern: ``dest(i, rng)`` is the destination index of a message of source
    index ``i`` (None: ``i`` sends nothing); ``rng`` is the source's own random stream."""

    __slots__ = ("name", "n", "dest")

    def __init__(self, name: str, n: int, dest: Dest):
        self.name = name
        self.n = n
        self.dest = dest

    def __repr__(self) -> str:
        return f"<Pattern {self.name} on {self.n} nodes>"


#: Registered patterns by name (module level by design: a registry of functions).
PATTERNS: dict[str, PatternInfo] = {}


def pattern(name: str, summary: str, *, check: Callable[[str, int, dict[str, Any]], None] | None = None
            ) -> Callable[[Callable[[PatternContext], Dest]], Callable[[PatternContext], Dest]]:
    """Register the decorated builder ``f(ctx) -> dest`` as pattern ``name``."""
    def register(fn: Callable[[PatternContext], Dest]) -> Callable[[PatternContext], Dest]:
        if name in PATTERNS and PATTERNS[name].build is not fn:
            raise AppConfigError(f"traffic pattern {name!r} is already registered")
        PATTERNS[name] = PatternInfo(name, summary, fn, check)
        return fn

    return register


def pattern_names() -> list[str]:
    """The registered pattern names, in registration order."""
    return list(PATTERNS)


def _info(name: Any) -> PatternInfo:
    info = PATTERNS.get(name) if isinstance(name, str) else None
    if info is None:
        raise TrafficPatternError(f"unknown traffic pattern {name!r}; valid: {', '.join(PATTERNS)}")
    return info


def check_pattern(name: str, n: int, *, shift: int | None = None, hot_nodes: int = 1, hot_fraction: float = 0.1) -> None:
    """Raise :class:`TrafficPatternError` if pattern ``name`` cannot run on ``n`` nodes with
    these parameters (the checks that need no topology)."""
    info = _info(name)
    if n < 2:
        raise TrafficPatternError(f"traffic pattern {name!r} needs at least 2 nodes, got {n}")
    if info.check is not None:
        info.check(name, n, {"shift": shift, "hot_nodes": hot_nodes, "hot_fraction": hot_fraction})


def build_pattern(name: str, *, nodes: Sequence[int], topology: Any = None, rng: random.Random | None = None,
                  shift: int | None = None, hot_nodes: int = 1, hot_fraction: float = 0.1) -> Pattern:
    """Pattern ``name`` on ``nodes`` (machine node ids in job order) of ``topology``.

    ``rng`` must give the same draws on every rank of a job (``mpi.job_rng(...)``); default:
    a stream seeded with 0. Raises :class:`TrafficPatternError` naming the pattern when it
    does not apply (a node count, a topology family, a parameter).
    """
    nodes = tuple(int(x) for x in nodes)
    check_pattern(name, len(nodes), shift=shift, hot_nodes=hot_nodes, hot_fraction=hot_fraction)
    ctx = PatternContext(nodes=nodes, topology=topology, rng=rng if rng is not None else random.Random(0),
                         shift=shift, hot_nodes=hot_nodes, hot_fraction=hot_fraction)
    return Pattern(name, len(nodes), _info(name).build(ctx))


# ----------------------------------------------------------------------------- helpers
def _other(i: int, n: int, rng: random.Random) -> int:
    """A node index drawn uniformly among the n - 1 others than i."""
    j = rng.randrange(n - 1)
    return j + 1 if j >= i else j


def _family(topology: Any) -> str:
    return getattr(topology, "name", "") if topology is not None else ""


def _index_of(ctx: PatternContext, name: str) -> Callable[[int], int]:
    """Machine node id -> job index; a node outside the job raises naming the pattern."""
    where = {nd: i for i, nd in enumerate(ctx.nodes)}

    def index(node: int) -> int:
        i = where.get(int(node))
        if i is None:
            raise TrafficPatternError(
                f"traffic pattern {name!r} sends to node {int(node)}, which the job does not hold; "
                "run it on every node of the machine")
        return i

    return index


def _table(values: Sequence[int | None]) -> Dest:
    tab = tuple(values)
    return lambda i, rng: tab[i]


# ----------------------------------------------------------------------------- patterns
@pattern("uniform", "each message to a node drawn uniformly among the others")
def _uniform(ctx: PatternContext) -> Dest:
    n = ctx.n
    return lambda i, rng: _other(i, n, rng)


@pattern("permutation", "a fixed random permutation of the nodes (its fixed points send nothing)")
def _permutation(ctx: PatternContext) -> Dest:
    from ..skeletons.pairs import Permutation

    perm = Permutation(ctx.n, [ctx.rng.getrandbits(64) for _ in range(Permutation.ROUNDS)])

    def dest(i: int, rng: random.Random) -> int | None:
        j = perm(i)
        return None if j == i else j

    return dest


def _check_shift(name: str, n: int, p: dict[str, Any]) -> None:
    s = p["shift"]
    if s is not None and s % n == 0:
        raise TrafficPatternError(f"traffic pattern {name!r}: shift={s} is a multiple of the {n} nodes "
                                  "(every node would send to itself)")


@pattern("shift", "node i sends to i + shift mod n (shift defaults to n // 2)", check=_check_shift)
def _shift(ctx: PatternContext) -> Dest:
    n = ctx.n
    s = (n // 2 if ctx.shift is None else ctx.shift) % n
    return _table([(i + s) % n for i in range(n)])


@pattern("tornado", "on a torus ceil(k/2) - 1 hops ahead in every dimension of size k; elsewhere i + ceil(n/2) - 1")
def _tornado(ctx: PatternContext) -> Dest:
    n = ctx.n
    topo = ctx.topology
    if _family(topo) == "torus":
        import numpy as np

        steps = np.array([(k + 1) // 2 - 1 for k in topo.dims])
        if not steps.any():
            raise TrafficPatternError(f"traffic pattern 'tornado': every dimension of the {topo.dims} torus "
                                      "has size <= 2, so every node would send to itself")
        index = _index_of(ctx, "tornado")
        dims = np.array(topo.dims)
        coords = topo.coords_of_node(list(ctx.nodes))
        npr = topo.nodes_per_router
        out: list[int | None] = []
        for i, nd in enumerate(ctx.nodes):
            c = (coords[i] + steps) % dims
            out.append(index(topo.node_at([int(x) for x in c], nd % npr)))
        return _table(out)
    s = (n + 1) // 2 - 1
    if s == 0:
        raise TrafficPatternError(f"traffic pattern 'tornado' on {n} nodes: the shift ceil(n/2) - 1 is 0")
    return _table([(i + s) % n for i in range(n)])


def _check_square(name: str, n: int, p: dict[str, Any]) -> None:
    m = math.isqrt(n)
    if m * m != n:
        raise TrafficPatternError(f"traffic pattern {name!r} needs a square number of nodes (m x m), got {n}")


@pattern("transpose", "n = m x m nodes: node r m + c sends to c m + r (the diagonal sends nothing)", check=_check_square)
def _transpose(ctx: PatternContext) -> Dest:
    m = math.isqrt(ctx.n)
    return _table([None if i // m == i % m else (i % m) * m + i // m for i in range(ctx.n)])


def _check_pow2(name: str, n: int, p: dict[str, Any]) -> None:
    if n & (n - 1):
        raise TrafficPatternError(f"traffic pattern {name!r} needs a power-of-two number of nodes, got {n}")


@pattern("bitcomp", "n = 2^b nodes: node i sends to the bit-complement of i", check=_check_pow2)
def _bitcomp(ctx: PatternContext) -> Dest:
    mask = ctx.n - 1
    return _table([mask ^ i for i in range(ctx.n)])


@pattern("neighbor", "on a torus a random grid neighbour; elsewhere node i +- 1 mod n")
def _neighbor(ctx: PatternContext) -> Dest:
    n = ctx.n
    topo = ctx.topology
    if _family(topo) != "torus":
        return lambda i, rng: (i + (1 if rng.random() < 0.5 else -1)) % n
    index = _index_of(ctx, "neighbor")
    coords = topo.coords_of_node(list(ctx.nodes))
    wrap = topo.wrap if isinstance(topo.wrap, tuple) else (topo.wrap,) * len(topo.dims)
    npr = topo.nodes_per_router
    table: list[tuple[int, ...]] = []
    for i, nd in enumerate(ctx.nodes):
        c0 = [int(x) for x in coords[i]]
        found: list[int] = []
        for d, k in enumerate(topo.dims):
            for step in (1, -1):
                c = list(c0)
                c[d] += step
                if not 0 <= c[d] < k:
                    if not wrap[d]:
                        continue
                    c[d] %= k
                j = index(topo.node_at(c, nd % npr))
                if j != i and j not in found:
                    found.append(j)
        if not found:
            raise TrafficPatternError(f"traffic pattern 'neighbor': node {nd} has no grid neighbour")
        table.append(tuple(found))
    return lambda i, rng: rng.choice(table[i])


def _check_hot(name: str, n: int, p: dict[str, Any]) -> None:
    h, f = p["hot_nodes"], p["hot_fraction"]
    if not 1 <= h <= n:
        raise TrafficPatternError(f"traffic pattern {name!r}: hot_nodes must be 1..{n} (the nodes), got {h}")
    if not 0.0 <= f <= 1.0:
        raise TrafficPatternError(f"traffic pattern {name!r}: hot_fraction must be in [0, 1], got {f}")


@pattern("hotspot", "a fraction hot_fraction of the messages to one of hot_nodes hot nodes, the rest uniform",
         check=_check_hot)
def _hotspot(ctx: PatternContext) -> Dest:
    n = ctx.n
    hot = tuple(sorted(ctx.rng.sample(range(n), ctx.hot_nodes)))
    f = ctx.hot_fraction

    pos = {j: k for k, j in enumerate(hot)}

    def dest(i: int, rng: random.Random) -> int:
        if rng.random() < f:
            mine = pos.get(i)
            if mine is None:
                return hot[rng.randrange(len(hot))]
            if len(hot) > 1:
                # A hot node sends to the other hot nodes, uniformly.
                k = rng.randrange(len(hot) - 1)
                return hot[k + 1 if k >= mine else k]
        return _other(i, n, rng)

    return dest


@pattern("group-adversarial", "dragonfly: every node of group g sends to a random node of group g + 1")
def _group_adversarial(ctx: PatternContext) -> Dest:
    topo = ctx.topology
    if _family(topo) != "dragonfly":
        fam = _family(topo) or "no topology"
        raise TrafficPatternError(f"traffic pattern 'group-adversarial' needs a dragonfly; this machine is a {fam}")
    G = topo.n_groups
    if G < 2:
        raise TrafficPatternError("traffic pattern 'group-adversarial' needs a dragonfly of at least 2 groups, got 1")
    gon = topo.group_of_node
    members: dict[int, list[int]] = {}
    for i, nd in enumerate(ctx.nodes):
        members.setdefault(int(gon[nd]), []).append(i)
    targets: list[tuple[int, ...]] = []
    for nd in ctx.nodes:
        nxt = (int(gon[nd]) + 1) % G
        t = members.get(nxt)
        if not t:
            raise TrafficPatternError(f"traffic pattern 'group-adversarial': the job holds no node of group {nxt}, "
                                      f"the target of group {nxt - 1 if nxt else G - 1}; run it on every node of the machine")
        targets.append(tuple(t))
    return lambda i, rng: rng.choice(targets[i])
