"""Every skeleton runs on every topology family (fat-tree, torus, mesh, dragonfly), moves the
bytes its definition implies, and is deterministic; plus the skeletons' own building blocks
(the pairs permutation, the unstr-mesh graph, the timekeeper's O(1) cost)."""

from __future__ import annotations

import random
import re

import pytest

from apps import AppConfigError, app_names, run_app
from apps.mpi.comm import derive_seed, dims_create
from apps.skeletons.pairs import Permutation
from apps.skeletons.unstr_mesh import neighbours

MACHINES = ["tiny-fattree", "tiny-fattree3", "tiny-torus", "tiny-mesh", "tiny-dragonfly"]
P = 16  # ranks; two per node, so intra-node copies happen too
RPN = 2
ITERS = 2


def _a2a_bruck_bytes(p, n):
    # Bruck moves, at step j, the blocks whose index has bit j set: sum_j c_j * n per rank.
    return p * sum(sum(1 for i in range(p) if i & (1 << j)) for j in range((p - 1).bit_length())) * n


def _mesh_bytes(p, n, seed=0):
    key = random.Random(derive_seed(seed, "job", 0, "unstr-mesh")).getrandbits(64)
    dims = dims_create(p, 3)
    return sum(s for r in range(p) for _, s in neighbours(r, dims, 1, 6, key, n, None))


# app -> (arguments, bytes one iteration sends in total over all ranks)
APPS = {
    "allreduce": ({"nbytes": 1000}, P * 4 * 1000),  # recursive doubling: lg 16 exchanges
    "stencil2d": ({"face_bytes": 500}, P * 2 * 2 * 500),  # 2 dims x 2 directions
    "stencil3d": ({"face_bytes": (100, 200, 300)}, P * 2 * (100 + 200 + 300)),
    "stencil4d": ({"face_bytes": 50}, P * 2 * 4 * 50),
    "pairs": ({"nbytes": 700}, P * 700),  # 16 ranks: everyone has a partner
    "sub-a2a": ({"nbytes": 100, "along": "x,yz"}, P * (4 + 4) * 100),  # 4x2x2 grid, two scattered a2a of 4 peers
    "unstr-mesh": ({"nbytes": 300}, _mesh_bytes(P, 300)),
    "even-odd": ({"nbytes": 900}, P * 900),
    "ring": ({"nbytes": 800}, P * 800),
    "alltoall": ({"nbytes": 100}, _a2a_bruck_bytes(P, 100)),
}


def test_every_registered_app_is_covered():
    from apps import get_app

    builtin = {n for n in app_names() if get_app(n).fn.__module__.startswith("apps.skeletons")}
    # traffic (open-loop, no iterations) has its own tests: tests/apps/test_traffic.py.
    assert builtin == set(APPS) | {"timekeeper", "traffic"}


@pytest.mark.parametrize("machine", MACHINES)
@pytest.mark.parametrize("name", sorted(APPS))
def test_skeleton_runs_on_every_topology_family(name, machine):
    args, per_iter = APPS[name]
    base = run_app(machine, name, P, ranks_per_node=RPN, iters=0, comm=None, **args)
    res = run_app(machine, name, P, ranks_per_node=RPN, iters=ITERS, comm=None, **args)
    # Set-up traffic (communicator creation) cancels out; the rest is the iterations'.
    assert res.bytes_sent - base.bytes_sent == ITERS * per_iter
    assert res.runtime > base.runtime > 0 or (res.runtime > 0 and base.bytes_sent == 0)
    if name == "even-odd":
        # Block mapping, two ranks per node: ranks 2i and 2i+1 share a node, so every
        # exchange is an intra-node copy and nothing crosses the network.
        assert res.network_bytes == 0 and not res.hot_links and res.intra_node_messages == ITERS * P
    else:
        assert res.network_bytes > 0
        assert res.hot_links and res.hot_links[0]["bytes"] > 0
    again = run_app(machine, name, P, ranks_per_node=RPN, iters=ITERS, comm=None, **args)
    assert (again.runtime, again.events, again.bytes_sent) == (res.runtime, res.events, res.bytes_sent)


@pytest.mark.parametrize("machine", MACHINES)
def test_timekeeper_runs_its_time_with_o1_events(machine):
    small = run_app(machine, "timekeeper", 2, runtime="1.5ms", comm=None)
    big = run_app(machine, "timekeeper", 32, ranks_per_node=4, runtime="1.5ms", comm=None)
    assert small.runtime == big.runtime == pytest.approx(1.5e-3, rel=1e-12)
    assert small.events == big.events <= 4  # launch, timer, report
    assert big.bytes_sent == 0


def test_skeleton_arguments_are_checked_before_the_run():
    with pytest.raises(AppConfigError, match=r"grid 4x3 has 12 cells but the job has 16 ranks.*stencil2d\(grid=None"):
        run_app("tiny-torus", "stencil2d", 16, grid=(4, 3), comm=None)
    with pytest.raises(AppConfigError, match="mode must be one of random, fixed"):
        run_app("tiny-torus", "pairs", 4, mode="shuffle", comm=None)
    with pytest.raises(AppConfigError, match="along must name axes"):
        run_app("tiny-torus", "sub-a2a", 8, along="w", comm=None)
    with pytest.raises(AppConfigError, match=r"needs argument 'runtime'; parameters: timekeeper\(runtime\)"):
        run_app("tiny-torus", "timekeeper", 4, comm=None)
    with pytest.raises(AppConfigError, match=r"has no parameter 'bytes'; parameters: ring\(iters=10, nbytes=65536"):
        run_app("tiny-torus", "ring", 4, bytes=10, comm=None)
    with pytest.raises(AppConfigError, match="nbytes: cannot parse 'lots'"):
        run_app("tiny-torus", "ring", 4, nbytes="lots", comm=None)
    with pytest.raises(AppConfigError, match="algorithm 'ring' is not one of allreduce's: auto, recursive_doubling"):
        run_app("tiny-torus", "allreduce", 4, algorithm="ring", comm=None)


# A bad value for every parameter of every built-in skeleton: bind_args refuses each without
# the job's size and without running anything (an experiment file's [[apps]] is checked so).
BAD_VALUES = {
    "iters": -3, "nbytes": "lots", "compute_s": -1, "algorithm": "magic", "mode": "shuffle",
    "grid": "4xq", "face_bytes": -8, "periodic": "no", "along": "w", "degree": -1, "radius": 0,
    "nbytes_max": -5, "runtime": "soon",
    "pattern": "zigzag", "load": 1.5, "msg_bytes": 0, "duration": "soon", "warmup": -1, "shift": "x",
    "hot_nodes": 0, "hot_fraction": 2,
}


def _builtin_app_names() -> list[str]:
    """The skeletons simhpc ships (not the apps other test modules register on import)."""
    from apps.registry import get_app

    return [n for n in app_names() if get_app(n).fn.__module__.startswith("apps.skeletons.")]


@pytest.mark.parametrize("name", _builtin_app_names())
def test_every_skeleton_parameter_value_is_checked_before_any_job_runs(name):
    from apps.registry import REQUIRED, bind_args, get_app

    info = get_app(name)
    assert sorted(info.checks) == sorted(p for p, _ in info.params)  # every parameter has a check
    required = {p: "1s" for p, d in info.params if d is REQUIRED}
    for param, _ in info.params:
        bad = BAD_VALUES[param]
        with pytest.raises(AppConfigError, match=rf"apps\.2\.args\.{param}\b.*{re.escape(repr(bad))}.*\(app '{name}'\)"):
            bind_args(name, {**required, param: bad}, key="apps.2.args")
        with pytest.raises(AppConfigError, match=rf"^app '{name}': {param}\b"):
            bind_args(name, {**required, param: bad})


def test_an_app_declares_value_checks_of_its_own_parameters():
    from apps import app
    from apps.registry import bind_args

    def positive(v, key):
        if not v > 0:
            raise ValueError(f"{key} must be > 0, got {v!r}")

    @app("test-checked", checks={"width": positive})
    def checked(mpi, *, width=1, depth=2):
        pass

    assert bind_args("test-checked", {"width": 3, "depth": -1}) == {"width": 3, "depth": -1}
    with pytest.raises(AppConfigError, match=r"^app 'test-checked': width must be > 0, got 0$"):
        bind_args("test-checked", {"width": 0})
    with pytest.raises(AppConfigError, match="checks names 'height', which is not a parameter; parameters: width, depth"):
        app("test-checked-bad", checks={"height": positive})(checked)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 100, 1000])
def test_pairs_permutation_is_a_bijection_with_a_symmetric_partner(n):
    rng = random.Random(n)
    perm = Permutation(n, [rng.getrandbits(64) for _ in range(4)])
    image = [perm(i) for i in range(n)]
    assert sorted(image) == list(range(n))
    assert all(perm.inverse(perm(i)) == i for i in range(n))
    partners = [perm.partner(i) for i in range(n)]
    for i, q in enumerate(partners):
        if q is None:
            assert n % 2 == 1 and perm(i) == n - 1
        else:
            assert q != i and partners[q] == i
    assert sum(q is None for q in partners) == n % 2


@pytest.mark.parametrize("n", [1, 2, 3, 5, 16, 63, 100, 1000, 4097])
def test_pairs_partner_lists_match_the_partner_of_each_rank(n):
    for seed in range(3):
        rng = random.Random(n * 10 + seed)
        perm = Permutation(n, [rng.getrandbits(64) for _ in range(4)])
        assert perm.partners() == [-1 if q is None else q for q in map(perm.partner, range(n))]


def test_pairs_shared_pairings_give_each_rank_its_own_draws_in_any_order():
    from apps.skeletons.pairs import _Pairings

    n, iters = 37, 12
    ref = random.Random(5)
    perms = [Permutation(n, [ref.getrandbits(64) for _ in range(4)]) for _ in range(iters)]
    shared = _Pairings(n, random.Random(5))
    asks = [(i, r) for i in range(iters) for r in range(n)]
    random.Random(1).shuffle(asks)  # ranks far behind others too (lists dropped by then)
    for i, r in sorted(asks[: len(asks) // 2]) + asks[len(asks) // 2:]:
        assert shared.partner(i, r) == perms[i].partner(r)
    assert shared.oldest > 0


def test_pairs_reshuffles_each_iteration_and_fixed_does_not():
    rng = random.Random(1)
    pairings = set()
    for _ in range(5):
        perm = Permutation(64, [rng.getrandbits(64) for _ in range(4)])
        pairings.add(tuple(perm.partner(i) for i in range(64)))
    assert len(pairings) == 5
    # The same seed and stream give the same pairing on every rank: 'fixed' mode moves the
    # same bytes over the same links in every iteration.
    one = run_app("tiny-torus", "pairs", 32, ranks_per_node=1, mode="fixed", iters=1, nbytes=4096, comm=None)
    three = run_app("tiny-torus", "pairs", 32, ranks_per_node=1, mode="fixed", iters=3, nbytes=4096, comm=None)
    assert (three.net.link_bytes == 3 * one.net.link_bytes).all()
    rnd = run_app("tiny-torus", "pairs", 32, ranks_per_node=1, mode="random", iters=3, nbytes=4096, comm=None)
    assert not (rnd.net.link_bytes == 3 * one.net.link_bytes).all()


def test_unstr_mesh_graph_is_symmetric_and_of_bounded_degree():
    dims = (6, 5, 4)
    p = 120
    for degree in (3, 6, 26):
        nb = {r: dict(neighbours(r, dims, 1, degree, 12345, 100, 400)) for r in range(p)}
        for r, d in nb.items():
            assert r not in d and len(d) <= 26
            for o, size in d.items():
                assert nb[o][r] == size and 100 <= size <= 400
                ca, cb = (r // 20, r // 4 % 5, r % 4), (o // 20, o // 4 % 5, o % 4)
                assert max(abs(x - y) for x, y in zip(ca, cb)) == 1
        interior = [r for r in range(p) if all(0 < c < d - 1 for c, d in zip((r // 20, r // 4 % 5, r % 4), dims))]
        mean = sum(len(nb[r]) for r in interior) / len(interior)
        assert abs(mean - degree) < 0.25 * degree + 1
