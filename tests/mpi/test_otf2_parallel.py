"""OTF2 under mpirun: a run recorded in parallel writes one trace (on rank 0) that replays to
the sequential runtime, and a replay in parallel is identical to the sequential replay."""

from __future__ import annotations

import pytest

pytest.importorskip("otf2")

from apps import run_app  # noqa: E402

pytestmark = pytest.mark.mpi


def test_record_and_replay_in_parallel_match_the_sequential_runs(tmp_path):
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    path = comm.bcast(str(tmp_path / "trace") if comm.rank == 0 else None, root=0)
    args = {"face_bytes": 100_000, "iters": 2, "compute_s": 2e-6}
    par = run_app("tiny-torus", "stencil3d", 32, ranks_per_node=1, placement="random", seed=5, app_args=args,
                  otf2=path, comm=comm)
    assert par.sim_ranks == comm.size and par.otf2["ranks"] == 32  # the counts reach every rank
    comm.Barrier()
    rep = run_app("tiny-torus", "otf2", 32, ranks_per_node=1, placement="random", seed=5, trace=path, comm=comm)
    views = comm.allgather((rep.runtime, rep.events, rep.bytes_sent))
    assert all(v == views[0] for v in views)
    if comm.rank == 0:
        seq = run_app("tiny-torus", "stencil3d", 32, ranks_per_node=1, placement="random", seed=5, app_args=args,
                      comm=None)
        seq_rep = run_app("tiny-torus", "otf2", 32, ranks_per_node=1, placement="random", seed=5, trace=path,
                          comm=None)
        assert par.runtime == seq.runtime == rep.runtime == seq_rep.runtime
        assert rep.events == seq_rep.events == seq.events
