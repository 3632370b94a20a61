"""Blue Gene/Q-style partitions: prisms of midplanes, their wiring, kinds and policies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alloc_helpers import Driver, build, job
from models.topology import Torus
from scheduler.allocators import make_allocator
from scheduler.allocators.torus_partitions import PartitionInfo
from scheduler.errors import UserError

POLICIES = ["bgq-native", "bgq-mesh", "bgq-cfca", "bgq-hybrid"]


def line_machine(n_mid: int) -> Torus:
    """A ring of ``n_mid`` midplanes of 2x2x2 routers (8 nodes each) along dimension 1."""
    return Torus(dims=(2, 2 * n_mid, 2))


def make(name: str, topo: Torus, **kw):
    return make_allocator(name, n_nodes=topo.n_nodes, topology=topo, block=(2, 2, 2), **kw)


def check_partitions(alloc, state) -> None:
    G = alloc.grid
    used_mp: dict[int, int] = {}
    used_cable: dict[tuple[int, int], int] = {}
    for jid, info in state.placements.items():
        assert isinstance(info, PartitionInfo)
        nodes = np.flatnonzero(state.owner == jid)
        L = info.blocks
        # The smallest volume of midplanes that holds the job.
        need = -(-len(nodes) // alloc.nodes_per_mp)
        assert int(np.prod(L)) == min(v for v in alloc.volumes if v >= need)
        # A prism: every midplane of the box, the job's nodes inside it.
        assert len(info.midplanes) == int(np.prod(L))
        coords = np.array(np.unravel_index(info.midplanes, G)).T
        for d in range(len(G)):
            assert len(np.unique(coords[:, d])) == L[d]
        assert set(np.unique(alloc.mp_nodes[info.midplanes].reshape(-1)).tolist()) >= set(nodes.tolist())
        assert info.shape == tuple(l * b for l, b in zip(L, alloc.block_shape))
        # Kind and wrap flags per policy.
        sens = info.sensitive
        expect = {"bgq-native": "torus", "bgq-mesh": "mesh",
                  "bgq-cfca": "torus" if sens else "contention-free",
                  "bgq-hybrid": "torus" if sens else "mesh"}[alloc.name]
        assert info.kind == expect
        for d, (l, g) in enumerate(zip(L, G)):
            want = {"torus": True, "mesh": False, "contention-free": l in (1, g)}[info.kind]
            assert info.wrap[d] == want
            cross = int(np.prod(L)) // l
            segs = len(info.cables[d])
            if g == 1 or l == 1:
                assert segs == 0
            elif info.wrap[d]:
                assert segs == g * cross  # the whole ring of each line, pass-through included
            else:
                assert segs == (l - 1) * cross  # only between its own midplanes
        for m in info.midplanes.tolist():
            assert used_mp.setdefault(m, jid) == jid, "two partitions share a midplane"
        for d, c in enumerate(info.cables):
            for s in c.tolist():
                assert used_cable.setdefault((d, s), jid) == jid, "two partitions share cable wiring"


@pytest.mark.parametrize("name", POLICIES)
@settings(max_examples=50, deadline=None, derandomize=True)
@given(seq=st.lists(st.tuples(st.booleans(), st.integers(1, 96), st.integers(0, 99), st.booleans()), min_size=1, max_size=30))
def test_partitions_never_share_midplanes_or_wiring(name, seq):
    alloc = build(name, "bgq", block=(2, 2, 2))  # grid 2 x 3 x 2 of 8-node midplanes
    d = Driver(alloc)
    for arrive, n, k, sens in seq:
        if arrive:
            d.arrive(n, sched_args={"comm_sensitive": sens})
            check_partitions(alloc, d.state)
        else:
            d.depart(k)
    d.drain()


def test_pass_through_wiring_blocks_a_second_torus_on_the_same_line():
    topo = line_machine(4)  # 4 midplanes in a ring
    # Native: a 2-midplane torus partition that does not span the ring takes its whole
    # wiring, so the other two (free) midplanes cannot form a torus.
    d = Driver(make("bgq-native", topo))
    assert d.arrive(16) is not None
    assert d.arrive(16) is None
    assert d.arrive(8) is not None  # one midplane needs no cable
    # MeshSched: each partition takes only the segment between its midplanes.
    d = Driver(make("bgq-mesh", topo))
    assert d.arrive(16) is not None and d.arrive(16) is not None
    info = d.state.placements[2]
    assert info.kind == "mesh" and info.wrap == (False, False, False)


@pytest.mark.parametrize("sensitive,fits", [(False, True), (True, False)])
def test_cfca_gives_insensitive_jobs_contention_free_partitions(sensitive, fits):
    topo = line_machine(4)
    d = Driver(make("bgq-cfca", topo))
    a = d.arrive(16, sched_args={"comm_sensitive": True})  # a torus, pass-through included
    assert d.state.placements[1].kind == "torus" and a is not None
    d.depart(0)
    d.arrive(16, sched_args={"comm_sensitive": False})
    info = d.state.placements[2]
    # Contention-free: torus where it spans (dims 0 and 2, one midplane long), mesh along the ring.
    assert info.kind == "contention-free" and info.wrap == (True, False, True)
    got = d.arrive(16, sched_args={"comm_sensitive": sensitive})
    assert (got is not None) == fits


def test_hybrid_and_native_on_a_full_span_partition_need_no_pass_through():
    topo = line_machine(2)
    d = Driver(make("bgq-hybrid", topo))
    d.arrive(16, sched_args={"comm_sensitive": True})
    info = d.state.placements[1]
    assert info.kind == "torus" and info.blocks == (1, 2, 1) and info.shape == (2, 4, 2) and info.origin == (0, 0, 0)


def test_sensitivity_flag_and_deterministic_draws():
    topo = line_machine(4)
    a = make("bgq-cfca", topo, sensitive_fraction=0.5, seed=9)
    flags = [a.is_sensitive(job(i, 8)) for i in range(200)]
    assert 60 < sum(flags) < 140
    b = make("bgq-cfca", topo, sensitive_fraction=0.5, seed=9)
    assert flags == [b.is_sensitive(job(i, 8)) for i in range(200)]
    assert a.is_sensitive(job(1, 8, sched_args={"comm_sensitive": False})) is False
    assert make("bgq-cfca", topo).is_sensitive(job(3, 8)) is False  # default fraction 0
    with pytest.raises(UserError, match="comm_sensitive"):
        a.is_sensitive(job(1, 8, sched_args={"comm_sensitive": "yes"}))


def test_mira_shaped_machine_uses_midplanes_of_512_nodes():
    mira = Torus(dims=(8, 12, 16, 16, 2))
    alloc = make_allocator("bgq-native", n_nodes=mira.n_nodes, topology=mira)
    assert alloc.block_shape == (4, 4, 4, 4, 2) and alloc.grid == (2, 3, 4, 4, 1) and alloc.nodes_per_mp == 512
    d = Driver(alloc)
    p = d.arrive(1000)  # 2 midplanes
    assert d.state.placements[1].n_midplanes == 2 and len(p) == 1000
    p = d.arrive(512 * 5)  # 5 midplanes: no 5-prism exists in 2x3x4x4: the next volume, 6
    assert d.state.placements[2].n_midplanes == 6


def test_partition_options_are_validated():
    topo = line_machine(3)
    with pytest.raises(UserError, match=r"block\[1\] = 4 does not divide the machine's extent 6"):
        make_allocator("bgq-native", n_nodes=topo.n_nodes, topology=topo, block=(2, 4, 2))
    with pytest.raises(UserError, match="sensitive_fraction must be a finite number in"):
        make("bgq-cfca", topo, sensitive_fraction=1.5)
    mesh = Torus.mesh(dims=(4, 4))
    with pytest.raises(UserError, match="wrapped in every dimension"):
        make_allocator("bgq-mesh", n_nodes=mesh.n_nodes, topology=mesh, block=(2, 2))
    with pytest.raises(UserError, match="needs a torus topology, got a fattree"):
        build("bgq-native", "ft3")
