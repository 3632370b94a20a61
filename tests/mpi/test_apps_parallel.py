"""Apps under mpirun: the same app gives identical results sequentially and in parallel, and
failures surface on every rank."""

from __future__ import annotations

import numpy as np
import pytest

from apps import AppError, DeadlockError, app, run_app

pytestmark = pytest.mark.mpi


def _comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


CASES = [
    ("tiny-torus", "stencil3d", 32, {"face_bytes": 100_000, "iters": 2}),
    ("tiny-torus", "allreduce", 24, {"nbytes": 300_000, "iters": 2}),  # Rabenseifner, rendezvous, fold
    ("tiny-dragonfly", "pairs", 40, {"nbytes": 50_000, "iters": 3}),
    ("tiny-fattree3", "alltoall", 16, {"nbytes": 2000, "iters": 2}),
    ("tiny-mesh", "unstr-mesh", 27, {"nbytes": 4000, "nbytes_max": 90_000, "iters": 2}),
    ("tiny-dragonfly", "sub-a2a", 36, {"along": "x,yz", "nbytes": 500, "iters": 2}),
]


def _key(res):
    return (res.runtime, res.start, res.end, res.bytes_sent, res.messages, res.network_bytes, res.hop_bytes,
            res.intra_node_messages, res.events, res.hot_links)


@pytest.mark.parametrize("network", ["packet", "flow"])
@pytest.mark.parametrize("machine,name,ranks,args", CASES, ids=[c[1] for c in CASES])
def test_parallel_run_is_identical_to_the_sequential_one(machine, name, ranks, args, network):
    comm = _comm()
    par = run_app(machine, name, ranks, ranks_per_node=1, placement="random", seed=5, comm=comm, network=network, **args)
    assert par.sim_ranks == comm.size
    views = comm.allgather(_key(par))
    assert all(v == views[0] for v in views)  # every rank returns the same result
    if comm.rank == 0:
        seq = run_app(machine, name, ranks, ranks_per_node=1, placement="random", seed=5, comm=None, network=network,
                      **args)
        assert _key(par) == _key(seq)
        assert np.array_equal(par.net.link_bytes, seq.net.link_bytes)
        assert np.array_equal(par.net.link_busy, seq.net.link_busy)
        assert par.stats.remote_events > 0  # traffic really crossed ranks


@app("t-par-fail")
def _par_fail(mpi):
    mpi.compute(1e-6)
    if mpi.rank == mpi.size - 1:
        raise KeyError("last rank")
    mpi.barrier()


@app("t-par-deadlock")
def _par_deadlock(mpi):
    mpi.recv((mpi.rank + 1) % mpi.size)


def test_failures_and_deadlocks_are_raised_on_every_rank():
    comm = _comm()
    with pytest.raises(AppError) as ei:
        run_app("tiny-torus", "t-par-fail", 64, ranks_per_node=1, comm=comm)
    assert ei.value.rank == 63 and ei.value.error == "KeyError: 'last rank'"
    with pytest.raises(DeadlockError) as ei:
        run_app("tiny-torus", "t-par-deadlock", 64, ranks_per_node=1, comm=comm)
    assert len(ei.value.blocked) == 64
    assert ei.value.blocked[63] == (63, 63, "recv(source=0, tag=ANY_TAG, comm=world)")


def test_the_statistics_mode_predicts_an_apps_parallel_run():
    # Network placements are functions of the rank count (pdes.placement.ByRanks), so a
    # sequential run can place the machine for P ranks and foresee the parallel run.
    from mpi4py import MPI

    from apps import run_app

    comm = MPI.COMM_WORLD
    kw = dict(ranks_per_node=1, placement="random", seed=4, app_args={"iters": 2})
    par = run_app("tiny-dragonfly", "stencil3d", 16, comm=comm, **kw)
    seq = run_app("tiny-dragonfly", "stencil3d", 16, comm=None, predict_ranks=(comm.size,), **kw)
    pred = seq.stats.predicted[comm.size]
    assert pred.windows == par.stats.windows and pred.events == par.stats.events
    assert list(pred.events_per_rank) == par.stats.events_per_rank
    assert seq.runtime == par.runtime
