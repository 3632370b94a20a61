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
    for k, r in st.predicted.items():
        assert r.windows == st.windows > 0 and sum(r.events_per_rank) == st.events == r.events
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


@pytest.mark.parametrize("kw,match", [({"predict_ranks": (0, 2)}, "whole numbers >= 1"),
                                      ({"predict_ranks": 4}, "sequence of rank counts"),
                                      ({"predict_ranks": (2,), "lookahead": 0.0}, "lookahead > 0")])
def test_bad_predict_ranks_are_one_line_errors(kw, match):
    with pytest.raises(ConfigError, match=match):
        Simulator(**{"lookahead": 1.0, **kw})
