"""Blue Gene/Q-style partition allocation on tori: torus, mesh and contention-free partitions.

After Zhou, Yang, Lan, Rich, Tang, Morozov, Desai, "Improving batch scheduling on Blue
Gene/Q by relaxing 5D torus network allocation constraints", IPDPS 2015.

The model
    The torus is cut into *midplanes*: blocks of ``block`` routers (by default 4 per
    dimension where the extent is a multiple of 4 from 8 up, half of other even extents from
    4 up, else the whole extent: Mira's 4x4x4x4x2 midplanes on its 8x12x16x16x2 torus, a
    2x3x4x4x1 grid of midplanes). A partition is a
    rectangular prism of midplanes (it may wrap around the machine) and a job runs alone on
    one: the smallest prism volume of at least ``ceil(n / nodes per midplane)`` midplanes,
    shapes of that volume from the most cubic, origins in grid order. The job gets the
    partition's first ``n`` nodes; the rest of the partition idles.

    In each dimension the midplanes of a *line* (the midplanes that differ only in that
    coordinate) are joined in a ring by cable segments, segment ``j`` joining midplane ``j``
    to ``j + 1``. A partition consumes, in each dimension where it is longer than one
    midplane:

    * **torus** in that dimension: every segment of each of its lines -- the ring through
      its own midplanes and, when it does not span the dimension, *pass-through* wiring
      across the midplanes it does not occupy, which other partitions then cannot use;
    * **mesh** in that dimension: only the segments between its own midplanes.

    A partition one midplane long in a dimension needs no cable there; it is a torus in
    that dimension through the midplane's own wiring (a single midplane is a full torus).
    Two partitions never share a midplane or a cable segment.

    Kinds: a **torus** partition wraps in every dimension; a **mesh** partition wraps in
    none; a **contention-free** partition wraps exactly in the dimensions where that takes
    no pass-through wiring (it spans the dimension or is one midplane long) and is a mesh in
    the others -- the dimensions whose wrap links would be shared with other partitions.

Policies (the allocator names)
    ``bgq-native``: every job on a torus partition (the production configuration).
    ``bgq-mesh`` (MeshSched): every job on a mesh partition.
    ``bgq-cfca``: communication-sensitive jobs on torus partitions, the others on
    contention-free partitions. ``bgq-hybrid``: sensitive jobs on torus partitions, the
    others on mesh partitions.

    A job is communication-sensitive when ``job.sched_args["comm_sensitive"]`` is true; when
    the flag is absent it is drawn with probability ``sensitive_fraction`` (default 0) from
    the job's own generator.

Choosing among the free partitions (option ``selection``)
    ``"first-fit"`` (default): the first free prism, shapes from the most cubic, origins in
    grid order. ``"least-blocking"`` (Cobalt's scheme on Mira, which Zhou et al. used): among
    every free prism of the smallest fitting volume (all its shapes), the one that blocks the
    fewest other partitions -- the number of partitions that are free now and would no longer
    be after it is taken (they share a midplane or a cable segment with it); ties go to the
    first in first-fit order. The partitions counted are every prism of midplanes (all
    volumes and shapes) of the kinds the policy places: torus for ``bgq-native``, mesh for
    ``bgq-mesh``, torus and contention-free for ``bgq-cfca``, torus and mesh for
    ``bgq-hybrid`` (Mira's partition list is a fixed subset of these prisms).

Each running job's :class:`PartitionInfo` (``state.placement_of(job_id)``) gives its
``kind``, ``origin`` and ``shape`` in routers and its per-dimension ``wrap`` flags, from
which the network side can model torus or mesh routing inside the partition.

Simplifications: midplanes are the unit of allocation (no sub-midplane blocks, no
I/O-node constraints); a dimension's cabling is a plain ring of segments per line (link
chips, their port directions and the cables' physical lengths are not modelled); a
one-midplane extent never consumes cables; only partitions of the smallest fitting volume
are considered (a larger free one is not taken), as with a fixed partition list.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import SchedulerError, UserError
from ..job import Job
from .base import (
    OptionsAllocator,
    Placement,
    PlacementState,
    check_choice,
    check_float_option,
    check_shape_option,
    job_rng,
    placement_info,
)
from .interface import AllocState
from .memo import SelectMemo
from .registry import register_allocator

__all__ = [
    "PartitionInfo",
    "PartitionState",
    "TorusPartitionAllocator",
    "NativeAllocator",
    "MeshSchedAllocator",
    "CfcaAllocator",
    "HybridAllocator",
    "KINDS",
]

KINDS = ("torus", "mesh", "contention-free")
SELECTIONS = ("first-fit", "least-blocking")
#: The most prisms the allocators tabulate (least-blocking's pairwise overlaps take prisms^2 / 8
#: bytes per kind; Mira's 2x3x4x4x1 grid has 3,549). First fit on a larger grid scans it.
MAX_PRISMS = 20000
#: The most busy states (midplanes and segments) whose answers an allocator keeps, per
#: generation of its :class:`SelectMemo` (a pass asks again and again on the same few states:
#: the scheduler's, and the copies its reservation plans on).
MEMO_STATES = 1 << 12
#: The most partition nodes an allocator keeps sorted (a Mira partition of 64 midplanes has 32,768).
NODES_KEPT = 1 << 22
#: The partition kinds each policy places: the partitions least-blocking counts.
POLICY_KINDS = {"native": ("torus",), "mesh": ("mesh",), "cfca": ("torus", "contention-free"),
                "hybrid": ("torus", "mesh")}
_SALT_SENSITIVE = 0x434F4D4D  # "COMM"
_Prism = tuple[tuple[int, ...], tuple[int, ...]]  # (origin, shape) in midplanes
#: Prism catalogues by (grid, reference kinds), shared by every allocator of a process (the
#: geometry depends on the midplane grid only).
_CATALOGUES: dict[tuple, "_Catalogue"] = {}


@dataclass(frozen=True, eq=False)
class PartitionInfo:
    """A partition: ``kind``; ``block_origin``/``blocks`` (midplane grid corner and extent);
    ``origin``/``shape`` (router grid corner and extent; the prism may wrap around the
    machine); ``wrap`` (whether its links wrap in each dimension); ``sensitive`` (the job's
    flag); ``midplanes`` and ``cables`` (flat indices it holds: midplanes, and per dimension
    the segments, segment ``g`` joining midplane ``g`` to its + neighbour)."""

    kind: str
    block_origin: tuple[int, ...]
    blocks: tuple[int, ...]
    origin: tuple[int, ...]
    shape: tuple[int, ...]
    wrap: tuple[bool, ...]
    sensitive: bool
    midplanes: np.ndarray = field(repr=False)
    cables: tuple[np.ndarray, ...] = field(repr=False)

    @property
    def n_midplanes(self) -> int:
        return len(self.midplanes)


class PartitionState(PlacementState):
    """Occupancy plus midplane owners (``midplane``, flat grid) and cable segment owners
    (``cable[d]``, flat grid per dimension), -1 when free."""

    __slots__ = ("midplane", "cable")

    def copy(self) -> "PartitionState":
        c = super().copy()
        c.midplane = self.midplane.copy()
        c.cable = self.cable.copy()
        return c  # type: ignore[return-value]


def default_block(dims: tuple[int, ...]) -> tuple[int, ...]:
    """Midplane edge per dimension: 4 where the extent is a multiple of 4 from 8 up (Mira's
    midplanes), else half of an even extent from 4 up, else the whole extent."""
    return tuple(4 if k % 4 == 0 and k >= 8 else k // 2 if k % 2 == 0 and k >= 4 else k for k in dims)


class TorusPartitionAllocator(OptionsAllocator):
    """Partition allocation on a torus (see the module docstring); ``policy`` set by the
    registered subclasses."""

    count_only = False
    FAMILIES = ("torus",)
    OPTIONS = ("block", "sensitive_fraction", "selection")
    policy = ""

    def __init__(self, *, block: Any = None, sensitive_fraction: Any = 0.0, selection: Any = "first-fit", **kw: Any):
        super().__init__(**kw)
        topo = self.topology
        dims = tuple(topo.dims)
        if block is None:
            block = default_block(dims)
        self.block_shape = check_shape_option(self.name, "block", block, dims)
        self.grid = tuple(k // b for k, b in zip(dims, self.block_shape))
        bad = [d for d, g in enumerate(self.grid) if g > 1 and not topo.wrap[d]]
        if bad:
            raise UserError(
                f"allocator {self.name!r} needs a torus wrapped in every dimension cut into several midplanes; "
                f"dimension {bad[0]} is a mesh (a Blue Gene/Q-style machine is a full torus)"
            )
        self.sensitive_fraction = check_float_option(self.name, "sensitive_fraction", sensitive_fraction, 0.0, 1.0)
        self.D = len(dims)
        self.n_mp = int(np.prod(self.grid))
        coords = topo.coords_of_router(np.arange(topo.n_routers))
        mp_of_router = np.ravel_multi_index(tuple((coords // np.array(self.block_shape)).T), self.grid)
        mp_of_node = np.repeat(mp_of_router, topo.nodes_per_router)
        self.mp_nodes = np.argsort(mp_of_node, kind="stable").reshape(self.n_mp, -1).astype(np.int64)
        self.nodes_per_mp = self.mp_nodes.shape[1]
        shapes = [L for L in itertools.product(*(range(1, g + 1) for g in self.grid))]
        shapes.sort(key=lambda L: (int(np.prod(L)), sum(L), L))
        self.shapes = shapes
        self.volumes = sorted({int(np.prod(L)) for L in shapes})
        self._shape_volumes = [int(np.prod(L)) for L in shapes]
        self.selection = check_choice(self.name, "selection", selection, SELECTIONS)
        self._catalogue: _Catalogue | None = None
        n_prisms = int(np.prod([g * (g - 1) + 1 for g in self.grid]))
        # Up to MAX_PRISMS prisms both selections look partitions up in the catalogue; beyond,
        # first fit scans the grid shape by shape.
        self._tabulated = n_prisms <= MAX_PRISMS
        self._least = self.selection == "least-blocking"
        # Busy midplanes and segments -> {(volume, kind): catalogue index (-1: none free)}.
        self._memo = SelectMemo(MEMO_STATES)
        # (kind, catalogue index) -> (wrap, cables, midplanes): the wiring of a prism, computed once.
        self._wired: dict[tuple[str, int], tuple] = {}
        # midplanes (bytes) -> the sorted nodes of a partition on them, up to NODES_KEPT nodes.
        self._nodes: dict[bytes, np.ndarray] = {}
        self._nodes_held = 0
        if self._least and not self._tabulated:
            raise UserError(
                f"allocator {self.name!r}: option selection = 'least-blocking' counts every prism of midplanes; a "
                f"{'x'.join(map(str, self.grid))} midplane grid has {n_prisms:,} (at most {MAX_PRISMS:,}); use larger "
                "midplanes (option block) or selection = 'first-fit'"
            )

    # ------------------------------------------------------------------------ policy
    def is_sensitive(self, job: Job) -> bool:
        """The job's communication-sensitivity flag (given, or drawn; see the module docstring)."""
        flag = job.sched_args.get("comm_sensitive") if job.sched_args else None
        if flag is not None:
            if not isinstance(flag, (bool, np.bool_, int, np.integer)) or flag not in (0, 1, True, False):
                raise UserError(f"job {job.job_id}: sched_args['comm_sensitive'] must be true or false, got {flag!r}")
            return bool(flag)
        if self.sensitive_fraction <= 0.0:
            return False
        return bool(job_rng(self.seed, job.job_id, _SALT_SENSITIVE).random() < self.sensitive_fraction)

    def kind_for(self, job: Job) -> tuple[str, bool]:
        """(partition kind, sensitivity) for ``job`` under this policy."""
        s = self.is_sensitive(job)
        p = self.policy
        if p == "native":
            return "torus", s
        if p == "mesh":
            return "mesh", s
        if p == "cfca":
            return ("torus" if s else "contention-free"), s
        return ("torus" if s else "mesh"), s

    # ------------------------------------------------------------------------ state
    def new_state(self) -> PartitionState:
        st = PartitionState(self.n_nodes)
        st.midplane = np.full(self.n_mp, -1, dtype=np.int64)
        st.cable = np.full((self.D, self.n_mp), -1, dtype=np.int64)
        return st

    # ------------------------------------------------------------------------ geometry
    def wiring(self, origin: tuple[int, ...], L: tuple[int, ...], kind: str) -> tuple[tuple[bool, ...], tuple[np.ndarray, ...]]:
        """(wrap flags, cable segments per dimension) of a ``kind`` prism at ``origin``."""
        G = self.grid
        idx = [(o + np.arange(l)) % g for o, l, g in zip(origin, L, G)]
        wrap = []
        cables = []
        for d in range(self.D):
            g, l = G[d], L[d]
            if kind == "torus":
                w = True
            elif kind == "mesh":
                w = False
            else:
                w = l == g or l == 1
            wrap.append(w)
            if g == 1 or l == 1:
                cables.append(np.zeros(0, dtype=np.int64))  # closed inside the midplane, or no ring
                continue
            if w:
                seg = np.arange(g)  # the whole ring of each line (pass-through when l < g)
            else:
                seg = (origin[d] + np.arange(l - 1)) % g
            sel = list(idx)
            sel[d] = seg
            cables.append(np.ravel_multi_index(np.ix_(*sel), G).reshape(-1).astype(np.int64))
        return tuple(wrap), tuple(cables)

    def _midplanes(self, origin: tuple[int, ...], L: tuple[int, ...]) -> np.ndarray:
        idx = [(o + np.arange(l)) % g for o, l, g in zip(origin, L, self.grid)]
        return np.ravel_multi_index(np.ix_(*idx), self.grid).reshape(-1).astype(np.int64)

    def _free_origins(self, busy: np.ndarray, L: tuple[int, ...]) -> np.ndarray:
        """Origins (rows of grid coordinates, grid order) where an ``L`` prism has no busy
        midplane; a prism spanning a dimension is tried at coordinate 0 only."""
        S = busy
        for d, (l, g) in enumerate(zip(L, self.grid)):
            if l == g:
                S = np.repeat(S.sum(axis=d, keepdims=True), g, axis=d)
                continue
            acc = S.copy()
            for j in range(1, l):
                acc = acc + np.roll(S, -j, axis=d)
            S = acc
        ok = S == 0
        for d, (l, g) in enumerate(zip(L, self.grid)):
            if l == g and g > 1:
                sl = [slice(None)] * self.D
                sl[d] = slice(1, None)
                ok[tuple(sl)] = False
        return np.argwhere(ok)

    # ------------------------------------------------------------------------ select
    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        n = job.nodes
        if n > state.n_free:
            return None
        st: PartitionState = state  # type: ignore[assignment]
        need = -(-n // self.nodes_per_mp)
        vol = next((v for v in self.volumes if v >= need), None)
        if vol is None:
            return None
        kind, sens = self.kind_for(job)
        if self._tabulated:
            i = self._find(st, vol, kind)
            if i < 0:
                return None
            L, origin = self._catalogue.prisms[i]
            wired = self._wired.get((kind, i))
            if wired is None:
                wired = self._wired[(kind, i)] = self._wire(origin, L, kind)
            wrap, cables, mps = wired
        else:
            found = self._first_fit(st, vol, kind)
            if found is None:
                return None
            origin, L = found
            wrap, cables, mps = self._wire(origin, L, kind)
        pnodes = self._nodes.get(mps.tobytes()) if self._tabulated else None
        if pnodes is None:
            # Each midplane's row of mp_nodes is sorted: a stable sort merges the runs.
            pnodes = np.sort(self.mp_nodes[mps].reshape(-1), kind="stable")
            if self._tabulated:
                if self._nodes_held + len(pnodes) > NODES_KEPT:
                    self._nodes.clear()
                    self._nodes_held = 0
                self._nodes[mps.tobytes()] = pnodes
                self._nodes_held += len(pnodes)
        pnodes = pnodes[:n].copy()  # (the job's own array; the kept one stays as it is)
        info = PartitionInfo(
            kind=kind,
            block_origin=origin,
            blocks=tuple(L),
            origin=tuple(o * b for o, b in zip(origin, self.block_shape)),
            shape=tuple(l * b for l, b in zip(L, self.block_shape)),
            wrap=wrap,
            sensitive=sens,
            midplanes=mps,
            cables=cables,
        )
        return Placement(pnodes, info)

    def _wire(self, origin: tuple[int, ...], L: tuple[int, ...], kind: str) -> tuple:
        """(wrap flags, cable segments per dimension, midplanes) of a ``kind`` prism, its arrays
        read-only (they are shared by every placement on that prism)."""
        wrap, cables = self.wiring(origin, L, kind)
        mps = self._midplanes(origin, L)
        for a in (mps, *cables):
            a.flags.writeable = False
        return wrap, cables, mps

    def _first_fit(self, st: PartitionState, vol: int, kind: str) -> _Prism | None:
        """(origin, shape) of the first free ``kind`` prism of volume ``vol``, scanning the
        grid (for grids with more than :data:`MAX_PRISMS` prisms, which are not tabulated)."""
        busy = (st.midplane != -1).reshape(self.grid).astype(np.int64)
        cable = st.cable
        for L, v in zip(self.shapes, self._shape_volumes):
            if v < vol:
                continue
            if v > vol:
                break
            for o in self._free_origins(busy, L):
                origin = tuple(int(x) for x in o)
                _, cables = self.wiring(origin, L, kind)
                if any(len(c) and (cable[d, c] != -1).any() for d, c in enumerate(cables)):
                    continue
                return origin, tuple(L)
        return None

    def _find(self, st: PartitionState, vol: int, kind: str) -> int:
        """Catalogue index of the ``kind`` prism of volume ``vol`` that the selection takes in
        ``st`` (-1: none is free): the first free one in first-fit order, or with
        least-blocking the free one that blocks the fewest free partitions of the policy's
        kinds (ties: the first). A pure function of the busy midplanes and segments, so the
        answers are kept (a pass asks on the same few states many times)."""
        mp_busy = st.midplane != -1
        cable_busy = st.cable != -1
        answers = self._memo.entry(mp_busy, cable_busy).by_size
        got = answers.get((vol, kind))
        if got is not None:
            return got
        busy = np.concatenate([mp_busy, cable_busy.reshape(-1)])
        cat = self._catalogue
        if cat is None:
            cat = self._catalogue = _catalogue_for(self)
        cols = np.flatnonzero(busy)
        rows = cat.rows_of(st.placements.values(), len(cols))
        free = cat.free_bits(cols) if rows is None else cat.free_bits_of_rows(rows)
        lo, hi = cat.by_volume[vol]
        off = cat.offset[kind]
        cand = np.flatnonzero(np.unpackbits(free, count=cat.n_ref)[off + lo:off + hi])
        if len(cand) == 0:
            i = -1
        elif len(cand) == 1 or not self._least:
            i = lo + int(cand[0])
        else:
            blocked = np.bitwise_count(cat.overlap(kind)[cand + lo] & free).sum(axis=1)
            i = lo + int(cand[np.argmin(blocked)])  # argmin: the first of the least blocking
        answers[(vol, kind)] = i
        return i

    def fits_empty(self, job: Job) -> bool:
        """Whether ``job`` could ever be placed: on the empty machine every prism is free, so
        whenever a volume fits it (the same answer as ``select`` on an empty state)."""
        n = job.nodes
        if n > self.n_nodes or -(-n // self.nodes_per_mp) > self.volumes[-1]:
            return False
        self.kind_for(job)  # (a bad sensitivity flag raises here as in select)
        return True

    # ------------------------------------------------------------------------ commit
    def _info_for(self, job: Job, nodes: np.ndarray, st: PartitionState) -> PartitionInfo:
        info = placement_info(nodes)
        if isinstance(info, PartitionInfo):
            return info
        again = self.select(job, st)
        if again is not None and np.array_equal(again, nodes):
            return again.info
        raise SchedulerError(
            f"allocator {self.name!r}: job {job.job_id} was committed on nodes without their partition; "
            "commit the placement that select returned"
        )

    def commit(self, job: Job, nodes: np.ndarray, state: AllocState) -> None:
        self._check_nodes(job, nodes)
        st: PartitionState = state  # type: ignore[assignment]
        info = self._info_for(job, nodes, st)
        if (st.midplane[info.midplanes] != -1).any() or any(
            len(c) and (st.cable[d, c] != -1).any() for d, c in enumerate(info.cables)
        ):
            raise SchedulerError(f"allocator {self.name!r}: job {job.job_id} was given a partition that overlaps another")
        st.mark_busy(job.job_id, nodes)
        st.midplane[info.midplanes] = job.job_id
        for d, c in enumerate(info.cables):
            st.cable[d, c] = job.job_id
        st.placements[job.job_id] = info

    def release(self, job: Job, nodes: np.ndarray, state: AllocState) -> None:
        st: PartitionState = state  # type: ignore[assignment]
        st.mark_free(job.job_id, nodes)
        info: PartitionInfo | None = st.placements.pop(job.job_id, None)
        if info is None:
            raise SchedulerError(f"allocator {self.name!r}: job {job.job_id} released without a partition")
        st.midplane[info.midplanes] = -1
        for d, c in enumerate(info.cables):
            st.cable[d, c] = -1

    def block(self, placements: "Sequence[tuple[Job, np.ndarray]]", state: AllocState) -> None:
        """Hold, in ``state``, the nodes, midplanes and cables of each placement (a union)."""
        super().block(placements, state)
        st: PartitionState = state  # type: ignore[assignment]
        for job, nodes in placements:
            info = placement_info(nodes)
            if not isinstance(info, PartitionInfo):
                raise SchedulerError(f"allocator {self.name!r}: reservation of job {job.job_id} carries no partition")
            cur = st.midplane[info.midplanes]
            st.midplane[info.midplanes] = np.where(cur == -1, job.job_id, cur)
            for d, c in enumerate(info.cables):
                if len(c):
                    cur = st.cable[d, c]
                    st.cable[d, c] = np.where(cur == -1, job.job_id, cur)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_nodes={self.n_nodes}, block={self.block_shape}, grid={self.grid})"


def _catalogue_for(alloc: TorusPartitionAllocator) -> "_Catalogue":
    """The process's shared catalogue of ``alloc``'s grid and policy kinds."""
    key = (alloc.grid, POLICY_KINDS[alloc.policy])
    cat = _CATALOGUES.get(key)
    if cat is None:
        cat = _CATALOGUES[key] = _Catalogue(alloc, POLICY_KINDS[alloc.policy])
    return cat


class _Catalogue:
    """Every prism of midplanes of a grid (the allocator's shapes in order, origins in grid
    order, a prism spanning a dimension at coordinate 0 only), once per kind in ``kinds``: the
    *reference partitions* (least-blocking counts them), kind ``k``'s prism ``i`` at row
    ``offset[k] + i``. ``held`` marks the midplanes and cable segments each row holds
    (columns: the midplanes, then each dimension's segments; ``size``: how many);
    ``colbits[c]`` packs, over the rows, those that hold column ``c``, so the rows a state
    blocks are the OR of its busy columns' bits, or of the overlap rows (:meth:`overlap`) of
    the partitions that hold them."""

    def __init__(self, alloc: TorusPartitionAllocator, kinds: tuple[str, ...]):
        G, n_mp, D = alloc.grid, alloc.n_mp, alloc.D
        self.prisms: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
        self.by_volume: dict[int, tuple[int, int]] = {}
        for L, v in zip(alloc.shapes, alloc._shape_volumes):
            lo = self.by_volume.get(v, (len(self.prisms), 0))[0]
            for o in itertools.product(*(range(g) if l < g else range(1) for l, g in zip(L, G))):
                self.prisms.append((tuple(L), tuple(o)))
            self.by_volume[v] = (lo, len(self.prisms))
        P = len(self.prisms)
        #: (shape, origin) -> prism index.
        self.index = {p: i for i, p in enumerate(self.prisms)}
        self.kinds = kinds
        self.offset = {k: i * P for i, k in enumerate(kinds)}
        self.n_ref = P * len(kinds)
        held = np.zeros((self.n_ref, n_mp * (1 + D)), dtype=bool)
        for kind in kinds:
            off = self.offset[kind]
            for i, (L, o) in enumerate(self.prisms):
                held[off + i, alloc._midplanes(o, L)] = True
                _, cables = alloc.wiring(o, L, kind)
                for d, c in enumerate(cables):
                    held[off + i, n_mp * (1 + d) + c] = True
        self.held = held
        self.size = held.sum(axis=1).tolist()
        self.colbits = np.packbits(held.T, axis=1)
        self._all_free = np.full(self.colbits.shape[1], 0xFF, dtype=np.uint8)
        self._overlap: np.ndarray | None = None

    def free_bits(self, busy_cols: np.ndarray) -> np.ndarray:
        """Packed bits over the rows: those holding none of the columns ``busy_cols`` (the
        padding bits past the last row are set)."""
        if len(busy_cols) == 0:
            return self._all_free
        return ~np.bitwise_or.reduce(self.colbits[busy_cols], axis=0)

    def rows_of(self, infos: Any, n_busy: int) -> list[int] | None:
        """The rows of the partitions ``infos`` when they hold all ``n_busy`` busy columns;
        None when other columns are busy too (reservations blocked into the state). The
        partitions of a state never share a column and are all busy, so the sizes tell."""
        index, offset, size = self.index, self.offset, self.size
        rows = []
        total = 0
        for info in infos:
            r = offset[info.kind] + index[(info.blocks, info.block_origin)]
            rows.append(r)
            total += size[r]
        return rows if total == n_busy else None

    def free_bits_of_rows(self, rows: list[int]) -> np.ndarray:
        """:meth:`free_bits` of the state whose busy columns are those of the partitions in
        ``rows``: what none of them overlaps (a few rows to OR instead of every column)."""
        if not rows:
            return self._all_free
        return ~np.bitwise_or.reduce(self.overlap()[rows], axis=0)

    def overlap(self, kind: str | None = None) -> np.ndarray:
        """Row ``r`` (of ``kind``'s prisms only, when given, ``i`` for its prism ``i``):
        packed bits over the rows, those sharing a midplane or a segment with row ``r``
        (padding bits clear). Built on first use: per row, the OR of its columns' bits."""
        ov = self._overlap
        if ov is None:
            held, colbits = self.held, self.colbits
            ov = np.empty((self.n_ref, colbits.shape[1]), dtype=np.uint8)
            for a in range(0, self.n_ref, 256):
                r, c = np.nonzero(held[a:a + 256])  # row by row; every row holds a midplane
                starts = np.searchsorted(r, np.arange(min(256, self.n_ref - a)))
                ov[a:a + 256] = np.bitwise_or.reduceat(colbits[c], starts, axis=0)
            self._overlap = ov
        if kind is None:
            return ov
        off = self.offset[kind]
        return ov[off:off + len(self.prisms)]


@register_allocator
class NativeAllocator(TorusPartitionAllocator):
    """Every job on a torus partition."""

    name = "bgq-native"
    policy = "native"


@register_allocator
class MeshSchedAllocator(TorusPartitionAllocator):
    """MeshSched: every job on a mesh partition."""

    name = "bgq-mesh"
    policy = "mesh"


@register_allocator
class CfcaAllocator(TorusPartitionAllocator):
    """CFCA: communication-sensitive jobs on torus partitions, the others contention-free."""

    name = "bgq-cfca"
    policy = "cfca"


@register_allocator
class HybridAllocator(TorusPartitionAllocator):
    """Hybrid: communication-sensitive jobs on torus partitions, the others on meshes."""

    name = "bgq-hybrid"
    policy = "hybrid"
