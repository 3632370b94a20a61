"""Collective results: every algorithm of every collective delivers the right data to the
right ranks, for power-of-two and other communicator sizes, roots other than 0, and data
split into segments (numpy arrays) or kept whole (numbers)."""

from __future__ import annotations

import numpy as np
import pytest

from apps import AppError, app, run_app
from apps.mpi.collectives import COLLECTIVES, THRESHOLDS, auto
from apps.testing import switch_machine

M = switch_machine(16)
OUT: dict = {}
SIZES = [1, 2, 3, 5, 6, 8, 12]
ROOTED = {"bcast", "reduce", "gather", "scatter"}
POF2_ONLY = {("allgather", "recursive_doubling"), ("bcast", "scatter_doubling_allgather")}


@app("t-coll")
def _coll(mpi, *, coll, alg, nbytes=4096, root=0):
    p, r = mpi.size, mpi.rank
    arr = np.arange(10, dtype=np.int64) * (r + 1)
    if coll == "barrier":
        mpi.compute(1e-5 * r)
        mpi.barrier(algorithm=alg)
        out = mpi.now
    elif coll == "bcast":
        out = mpi.bcast(nbytes, root=root, data=("payload", root) if r == root else None, algorithm=alg)
    elif coll == "reduce":
        out = (mpi.reduce(nbytes, root=root, data=arr, algorithm=alg), mpi.reduce(nbytes, root=root, data=r + 1, op="max", algorithm=alg))
    elif coll == "allreduce":
        out = (mpi.allreduce(nbytes, data=arr, algorithm=alg), mpi.allreduce(nbytes, data=r + 1, algorithm=alg))
    elif coll == "gather":
        out = mpi.gather(nbytes, root=root, data=r * 10, algorithm=alg)
    elif coll == "scatter":
        out = mpi.scatter(nbytes, root=root, data=[i * 3 for i in range(p)] if r == root else None, algorithm=alg)
    elif coll == "allgather":
        out = mpi.allgather(nbytes, data=r * 10, algorithm=alg)
    elif coll == "alltoall":
        out = mpi.alltoall(nbytes, data=[(r, j) for j in range(p)], algorithm=alg)
    elif coll == "alltoallv":
        sizes = [(r + j) % 3 * 100 for j in range(p)]
        recv = [(i + r) % 3 * 100 for i in range(p)]
        out = (mpi.alltoallv(sizes, data=[(r, j) for j in range(p)], algorithm=alg),
               mpi.alltoallv(sizes, data=[(r, j) for j in range(p)], recv_bytes=recv, algorithm=alg))
    elif coll == "reduce_scatter":
        out = (mpi.reduce_scatter(nbytes, data=[r * 100 + j for j in range(p)], algorithm=alg),
               mpi.reduce_scatter([100 * (j + 1) for j in range(p)], data=[arr + j for j in range(p)], algorithm=alg))
    else:  # pragma: no cover
        raise ValueError(coll)
    OUT[r] = out


CASES = [(c, a) for c, algs in COLLECTIVES.items() for a in algs]


def _run(coll, alg, p, **kw):
    OUT.clear()
    return run_app(M, "t-coll", p, ranks_per_node=1, network="ideal", comm=None, coll=coll, alg=alg, **kw)


@pytest.mark.parametrize("coll,alg", CASES)
def test_every_algorithm_gives_the_mpi_result(coll, alg):
    for p in SIZES:
        pof2 = p & (p - 1) == 0
        if (coll, alg) in POF2_ONLY and not pof2:
            with pytest.raises(AppError, match="power-of-two"):
                _run(coll, alg, p)
            continue
        roots = sorted({p - 1, min(1, p - 1)}) if coll in ROOTED else [0]
        for root in roots:  # root 1 of an odd-sized fold is the special case of reduce_scatter_gather
            _run(coll, alg, p, root=root)
            _check(coll, p, root)


def _check(coll, p, root):
    assert sorted(OUT) == list(range(p)), (coll, p)
    arr = np.arange(10, dtype=np.int64)
    tri = p * (p + 1) // 2
    for r in range(p):
        got = OUT[r]
        if coll == "barrier":
            start = M.topology.link_lat.min()  # ranks start one lookahead after launch
            assert got >= start + 1e-5 * (p - 1)  # nobody leaves before the last enters
        elif coll == "bcast":
            assert got == ("payload", root)
        elif coll == "reduce":
            if r == root:
                assert np.array_equal(got[0], arr * tri) and got[1] == p
            else:
                assert got == (None, None)
        elif coll == "allreduce":
            assert np.array_equal(got[0], arr * tri) and got[1] == tri
        elif coll == "gather":
            assert got == ([i * 10 for i in range(p)] if r == root else None)
        elif coll == "scatter":
            assert got == r * 3
        elif coll == "allgather":
            assert got == [i * 10 for i in range(p)]
        elif coll == "alltoall":
            assert got == [(i, r) for i in range(p)]
        elif coll == "alltoallv":
            want = [(i, r) for i in range(p)]
            assert got[0] == want
            assert got[1] == [w if (i + r) % 3 else None for i, w in enumerate(want)]
        elif coll == "reduce_scatter":
            assert got[0] == 100 * p * (p - 1) // 2 + p * r
            assert np.array_equal(got[1], arr * tri + p * r)


def test_auto_selection_follows_mpich_thresholds():
    T = THRESHOLDS
    assert auto("bcast", 4, 1 << 20) == "binomial"  # fewer than BCAST_MIN_PROCS ranks
    assert auto("bcast", 16, T["BCAST_SHORT_MSG_SIZE"] - 1) == "binomial"
    assert auto("bcast", 16, T["BCAST_SHORT_MSG_SIZE"]) == "scatter_doubling_allgather"
    assert auto("bcast", 12, T["BCAST_SHORT_MSG_SIZE"]) == "scatter_ring_allgather"
    assert auto("bcast", 16, T["BCAST_LONG_MSG_SIZE"]) == "scatter_ring_allgather"
    assert auto("allreduce", 16, 2048) == "recursive_doubling"
    assert auto("allreduce", 16, 2049) == "rabenseifner"
    assert auto("allreduce", 16, 2049, builtin_op=False) == "recursive_doubling"
    assert auto("allreduce", 4096, 4000) == "recursive_doubling"  # n < pof2
    assert auto("reduce", 16, 2048) == "binomial" and auto("reduce", 16, 2049) == "reduce_scatter_gather"
    assert auto("allgather", 16, 524288 // 16 - 1) == "recursive_doubling"
    assert auto("allgather", 16, 524288 // 16) == "ring"
    assert auto("allgather", 12, 81920 // 12 - 1) == "bruck" and auto("allgather", 12, 81920 // 12 + 1) == "ring"
    assert auto("alltoall", 8, 256) == "bruck" and auto("alltoall", 7, 256) == "scattered"
    assert auto("alltoall", 8, 257) == "scattered" and auto("alltoall", 8, 32769) == "pairwise"
    assert auto("reduce_scatter", 8, 524287) == "recursive_halving" and auto("reduce_scatter", 8, 524288) == "pairwise"
    assert auto("barrier", 5, 0) == "dissemination" and auto("gather", 5, 10) == "binomial"


@app("t-coll-auto")
def _coll_auto(mpi, *, nbytes):
    OUT[mpi.rank] = mpi.allreduce(nbytes, data=mpi.rank)


def test_forced_algorithms_per_run_and_per_call():
    from apps import AppConfigError

    OUT.clear()
    r1 = run_app(M, "t-coll-auto", 8, ranks_per_node=1, network="ideal", comm=None, nbytes=64)
    r2 = run_app(M, "t-coll-auto", 8, ranks_per_node=1, network="ideal", comm=None, nbytes=64,
                 algorithms={"allreduce": "rabenseifner"})
    assert OUT[3] == 28
    assert r1.messages == 3 * 8 and r2.messages == 6 * 8  # lg p steps vs 2 lg p steps
    with pytest.raises(AppConfigError, match="no algorithm 'ring'"):
        run_app(M, "t-coll-auto", 8, comm=None, nbytes=64, algorithms={"allreduce": "ring"})
    with pytest.raises(AppConfigError, match="unknown collective"):
        run_app(M, "t-coll-auto", 8, comm=None, nbytes=64, algorithms={"allreduc": "ring"})
    with pytest.raises(AppError, match="unknown algorithm 'nope'"):
        _run("allreduce", "nope", 4)


@app("t-comms")
def _comms(mpi):
    r = mpi.rank
    row = mpi.comm_split(r // 4, key=-r)  # rows of 4, reversed order
    odd = mpi.comm_split(1 if r % 2 else None)
    cart = mpi.cart_create((2, 4), periods=(False, True))
    line = cart.cart_sub((False, True))
    col = cart.cart_sub((True, False))
    OUT[r] = {
        "row": (row.rank, row.size, row.group, row.allreduce(8, data=r)),
        "odd": None if odd is None else (odd.rank, odd.size, odd.allgather(8, data=r)),
        "coords": cart.coords,
        "shift1": cart.cart_shift(1, 1), "shift0": cart.cart_shift(0, 1),
        "line": (line.rank, line.size, line.dims, line.allgather(8, data=r)),
        "col": (col.rank, col.size, col.dims, col.allgather(8, data=r)),
        "dup": mpi.dup().allreduce(8, data=1),
    }


def test_comm_split_cart_create_and_cart_sub():
    from apps import PROC_NULL

    OUT.clear()
    run_app(M, "t-comms", 8, ranks_per_node=1, network="ideal", comm=None)
    o = OUT[5]
    assert o["row"] == (2, 4, (7, 6, 5, 4), 22)
    assert o["odd"] == (2, 4, [1, 3, 5, 7]) and OUT[4]["odd"] is None
    assert o["coords"] == (1, 1)
    assert o["shift1"] == (4, 6)  # periodic along dimension 1
    assert o["shift0"] == (1, PROC_NULL)  # not periodic along dimension 0: rank 5 is on the edge
    assert OUT[0]["shift0"] == (PROC_NULL, 4)
    assert o["line"] == (1, 4, (4,), [4, 5, 6, 7])
    assert o["col"] == (1, 2, (2,), [1, 5])
    assert all(OUT[r]["dup"] == 8 for r in range(8))


def test_dims_create_is_balanced_and_sorted():
    from apps import dims_create

    assert dims_create(8, 3) == (2, 2, 2)
    assert dims_create(12, 2) == (4, 3)
    assert dims_create(7, 2) == (7, 1)
    assert dims_create(64, 4) == (4, 4, 2, 2)
    assert dims_create(8192, 3) == (32, 16, 16)
