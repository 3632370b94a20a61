"""What an app returns on each rank comes back in run_app's result (AppResult.rank_results)."""

from __future__ import annotations

from apps import app, run_app


@app("test-returns")
def returns(mpi, *, skip=1):
    """Rank r returns (r, its node, the clock) except rank ``skip``, which returns nothing."""
    mpi.barrier()
    if mpi.rank != skip:
        return {"rank": mpi.rank, "node": mpi.node, "t": mpi.now}


def test_rank_results_in_world_rank_order_none_for_no_value():
    res = run_app("tiny-torus", "test-returns", 6, ranks_per_node=2, placement=[5, 9, 3])
    assert len(res.rank_results) == 6 and res.rank_results[1] is None
    got = [r for r in res.rank_results if r is not None]
    assert [r["rank"] for r in got] == [0, 2, 3, 4, 5]
    assert [r["node"] for r in got] == [5, 9, 9, 3, 3]
    assert all(res.start < r["t"] <= res.end for r in got)


def test_apps_that_return_nothing_give_all_none():
    res = run_app("tiny-torus", "ring", 4, ranks_per_node=1, iters=1)
    assert res.rank_results == (None,) * 4
