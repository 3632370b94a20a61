"""The kernel's statistics mode (Simulator(predict_ranks=...), pdes.predict)."""

from __future__ import annotations

import pytest

from pdes import ConfigError, Entity, Simulator
from pdes.examples.phold import PholdParams, lp_digests, run


def test_prediction_leaves_the_results_alone_and_counts_every_event():
    p = PholdParams(n_lps=40, events_per_lp=2, end_time=12.0, regions=4, remote=0.5, digest=True)
    plain_sim, plain = run(p, seed=2, comm=None)
    sim, st = run(p, seed=2, comm=None, predict_ranks=(4, 1, 2, 2))
    assert lp_digests(sim) == lp_digests(plain_sim) and st.events == plain.events
    assert sorted(st.predicted) == [1, 2, 4]
    one = st.predicted[1]
    assert one.speedup_bound == 1.0 and one.remote_fraction == 0.0 and one.events_per_rank == (st.events,)
    # One rank never waits for another: one window. More ranks: at most the equal windows
    # [T, T + lookahead) of the sequential statistics run (st.windows), since each rank runs
    # up to the others' earliest event + lookahead >= T + lookahead.
    assert one.windows == 1
    for k, r in st.predicted.items():
        assert 0 < r.windows <= st.windows and sum(r.events_per_rank) == st.events == r.events
        assert r.busiest_rank_share == max(r.events_per_rank) / st.events
        assert 1.0 <= r.speedup_bound <= k
    # Four regions on four ranks: each rank's events are its region's; half the sends cross.
    assert 0.3 < st.predicted[4].remote_fraction < 0.6


def test_a_run_that_cannot_be_split_has_a_bound_of_one():
    class Chain(Entity):
        def __init__(self, n):
            self.n = n
            if self.index == 0:
                self.send(self.eid, "hop", 0, delay=0.0)

        def hop(self, k):
            if k < 50:
                self.send((self.index + 1) % self.n, "hop", k + 1, delay=1.0)

    sim = Simulator(lookahead=1.0, predict_ranks=(2, 4))
    sim.add_entities(Chain, 4, 4, placement="cyclic")
    st = sim.run()
    # One event in flight at a time: every window has one event, on one rank.
    for r in st.predicted.values():
        assert r.speedup_bound == 1.0 and r.remote_fraction > 0.9


def test_replayed_windows_run_each_rank_up_to_the_others_next_event_plus_the_lookahead():
    from pdes.predict import replay_windows

    ten = [float(t) for t in range(10)]
    assert replay_windows([ten], 1.0, float("inf")) == (1, 10)  # alone: one window
    # Rank 1's event at 100 lets rank 0 run all ten at once; then rank 1 runs alone.
    assert replay_windows([ten, [100.0]], 1.0, float("inf")) == (2, 11)
    # Interleaved ranks advance one lookahead past the other's next event each window.
    assert replay_windows([[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]], 1.0, float("inf")) == (6, 6)
    assert replay_windows([[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]], 2.5, float("inf")) == (2, 4)
    # Nothing at or past the end runs; an empty run has no window.
    assert replay_windows([ten, []], 1.0, 4.5) == (1, 5) and replay_windows([[], []], 1.0, 9.0) == (0, 0)


def test_a_rank_ahead_of_the_others_runs_in_fewer_windows():
    class Local(Entity):
        # Entity 0 runs a chain of local hops; entity 1 (the other rank) waits until t = 40.
        def __init__(self):
            self.send(self.eid, "hop", 0, delay=0.0 if self.index == 0 else 40.0)

        def hop(self, k):
            if self.index == 0 and k < 30:
                self.send(self.eid, "hop", k + 1, delay=1.0)

    sim = Simulator(lookahead=1.0, predict_ranks=(2,))
    sim.add_entities(Local, 2, placement="block")
    st = sim.run()
    # Equal windows of one lookahead take one window per hop; rank 0 runs its chain up to
    # rank 1's event at 40 + 1 in one window, then rank 1 runs its event.
    assert st.windows == 32 and st.predicted[2].windows == 2 and st.predicted[2].events_per_rank == (31, 1)


@pytest.mark.parametrize("kw,match", [({"predict_ranks": (0, 2)}, "whole numbers >= 1"),
                                      ({"predict_ranks": 4}, "sequence of rank counts"),
                                      ({"predict_ranks": (2,), "lookahead": 0.0}, "lookahead > 0")])
def test_bad_predict_ranks_are_one_line_errors(kw, match):
    with pytest.raises(ConfigError, match=match):
        Simulator(**{"lookahead": 1.0, **kw})
