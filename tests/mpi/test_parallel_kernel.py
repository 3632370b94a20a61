"""The parallel kernel under mpirun: identical results for any P, failure handling, statistics."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.mpi


def _comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


@pytest.mark.parametrize("style", ["service", "process"])
def test_phold_identical_to_sequential_event_for_event(style):
    from pdes.examples.phold import PholdParams, lp_digests, run

    comm = _comm()
    p = PholdParams(n_lps=96, events_per_lp=5, end_time=25.0, regions=8, remote=0.3, digest=True)
    sim, st = run(p, style=style, seed=17, comm=comm)
    par = lp_digests(sim)
    if comm.rank == 0:
        seq_sim, seq_st = run(p, style=style, seed=17, comm=None)
        assert par == lp_digests(seq_sim)
        assert st.events == seq_st.events
        assert st.ranks == comm.size
        assert len(st.events_per_rank) == comm.size and all(n > 0 for n in st.events_per_rank)
        assert st.remote_events > 0 and st.windows > 0
        assert len(st.sync_s_per_rank) == comm.size


def test_every_rank_sees_the_same_statistics():
    from pdes.examples.phold import PholdParams, run

    comm = _comm()
    p = PholdParams(n_lps=40, events_per_lp=2, end_time=10.0, regions=4, remote=0.5)
    _, st = run(p, seed=1, comm=comm)
    allst = comm.allgather((st.events, st.windows, st.remote_events, tuple(st.events_per_rank)))
    assert len(set(allst)) == 1


def test_exception_on_one_rank_stops_every_rank_with_the_error():
    from pdes import Entity, RemoteRankError, SimulationError, Simulator

    comm = _comm()

    class Chatty(Entity):
        def __init__(self, n):
            self.n = n
            self.send(self.eid, "tick", 0, delay=0.0)

        def tick(self, k):
            if self.index == self.n - 1 and self.now >= 5.0:
                raise RuntimeError("model bug on the last entity")
            self.send((self.index + 1) % self.n, "tick", k + 1, delay=1.0)

    n = 2 * comm.size
    sim = Simulator(lookahead=1.0, end_time=100.0, comm=comm)
    sim.add_entities(Chatty, n, n)
    owner = sim.rank_of(n - 1)
    with pytest.raises(SimulationError) as ei:
        sim.run()
    err = ei.value
    if comm.rank == owner:
        assert not isinstance(err, RemoteRankError)
        assert "model bug on the last entity" in str(err) and f"Chatty[{n - 1}]" in str(err)
    else:
        assert isinstance(err, RemoteRankError)
        assert f"rank {owner} failed" in str(err) and "model bug on the last entity" in str(err)
    assert err.time >= 5.0 or isinstance(err, RemoteRankError)


def test_remote_send_below_lookahead_is_an_error_at_the_call():
    from pdes import Entity, SendError, Simulator

    comm = _comm()

    class E(Entity):
        pass

    sim = Simulator(lookahead=1.0, comm=comm)
    sim.add_entities(E, comm.size, placement="cyclic")
    me = sim.entity("E", comm.rank)
    other = (comm.rank + 1) % comm.size
    with pytest.raises(SendError, match="below the lookahead"):
        me.send(sim.eid("E", other), "__init__", None, delay=0.5)


def test_placement_callable_and_group_consistency_is_checked():
    from pdes import ConfigError, Entity, Simulator

    comm = _comm()

    class E(Entity):
        pass

    sim = Simulator(lookahead=1.0, comm=comm)
    made = sim.add_entities(E, 8, placement=lambda i, p: (i // 2) % p, group=lambda i: i // 2)
    assert all(sim.rank_of(e.eid) == comm.rank for e in made)
    with pytest.raises(ConfigError, match="group"):
        sim.add_entities(E, 4, name="bad", placement="cyclic", group=lambda i: 0)
