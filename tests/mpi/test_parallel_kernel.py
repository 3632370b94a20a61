"""The parallel kernel under mpirun: identical results for any P, failure handling, statistics."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.mpi


def _comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


def _needs_two_ranks(comm):
    if comm.size < 2:
        pytest.skip("needs at least two ranks")


@pytest.mark.parametrize("style", ["service", "process"])
def test_phold_identical_to_sequential_event_for_event(style):
    from pdes.examples.phold import PholdParams, lp_digests, run

    comm = _comm()
    p = PholdParams(n_lps=96, events_per_lp=5, end_time=25.0, regions=8, remote=0.3, digest=True)
    sim, st = run(p, style=style, seed=17, comm=comm, parallel=True)  # windowed even at P = 1
    par = lp_digests(sim)
    if comm.rank == 0:
        seq_sim, seq_st = run(p, style=style, seed=17, comm=None)
        assert par == lp_digests(seq_sim)
        assert st.events == seq_st.events
        assert st.ranks == comm.size
        assert len(st.events_per_rank) == comm.size and all(n > 0 for n in st.events_per_rank)
        assert (st.remote_events > 0 or comm.size == 1) and st.windows > 0
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


@pytest.mark.parametrize("where", ["service", "process"])
def test_sys_exit_in_a_model_on_one_rank_stops_every_rank(where):
    import sys

    from pdes import Entity, RemoteRankError, SimulationError, Simulator

    comm = _comm()

    class Quitter(Entity):
        def __init__(self, n):
            self.n = n
            if where == "process":
                self.spawn(self.body)
            else:
                self.send(self.eid, "tick", None, delay=1.0)

        def _maybe_quit(self):
            if self.index == self.n - 1 and self.now >= 4.0:
                sys.exit(3)

        def tick(self, _):
            self._maybe_quit()
            self.send(self.eid, "tick", None, delay=1.0)

        def body(self):
            while True:
                self.sleep(1.0)
                self._maybe_quit()

    n = 2 * comm.size
    sim = Simulator(lookahead=1.0, end_time=50.0, comm=comm, parallel=True)
    sim.add_entities(Quitter, n, n, placement="cyclic")
    owner = sim.rank_of(n - 1)
    with pytest.raises(SimulationError) as ei:
        sim.run()
    err = ei.value
    assert "SystemExit: 3" in str(err) and f"Quitter[{n - 1}]" in str(err)
    assert isinstance(err, RemoteRankError) == (comm.rank != owner)


@pytest.mark.parametrize("signame,where", [("SIGINT", "service"), ("SIGTERM", "process")])
def test_a_signal_on_one_rank_stops_every_rank_at_the_same_exchange(signame, where):
    # Before, the signalled rank raised alone (or a SimulationError) and the others waited
    # for it in the next collective forever, busy-polling.
    import os
    import signal

    from pdes import Entity, Interrupted, Simulator

    comm = _comm()
    signum = getattr(signal, signame)
    last = comm.size - 1

    class Busy(Entity):
        def __init__(self, n):
            self.n = n
            if where == "process":
                self.spawn(self.body)
            else:
                self.send(self.eid, "tick", None, delay=1.0)

        def _step(self):
            if self.index == self.n - 1 and self.now == 7.0:
                os.kill(os.getpid(), signum)  # handled at once: this rank is running events
            self.send((self.index + 1) % self.n, "ping", None, delay=1.0)

        def tick(self, _):
            self._step()
            self.send(self.eid, "tick", None, delay=1.0)

        def body(self):
            while True:
                self.sleep(1.0)
                self._step()

        def ping(self, _):
            pass

    n = 2 * comm.size
    sim = Simulator(lookahead=1.0, end_time=1000.0, comm=comm, parallel=True)
    sim.add_entities(Busy, n, n, placement="cyclic")
    assert sim.rank_of(n - 1) == last
    before = signal.getsignal(signum)
    with pytest.raises(Interrupted) as ei:
        sim.run()
    assert ei.value.signum == signum and ei.value.collective
    assert signal.getsignal(signum) is before  # the run's handler is gone
    # Every rank stopped after the window of the signal: none ran on towards the end time.
    assert comm.allgather(sim.now) == [7.0] * comm.size


def test_remote_send_below_lookahead_is_an_error_at_the_call():
    from pdes import Entity, SendError, Simulator

    comm = _comm()
    _needs_two_ranks(comm)

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
    _needs_two_ranks(comm)

    class E(Entity):
        pass

    sim = Simulator(lookahead=1.0, comm=comm)
    made = sim.add_entities(E, 8, placement=lambda i, p: (i // 2) % p, group=lambda i: i // 2)
    assert all(sim.rank_of(e.eid) == comm.rank for e in made)
    with pytest.raises(ConfigError, match="group"):
        sim.add_entities(E, 4, name="bad", placement="cyclic", group=lambda i: 0)


def test_end_time_is_the_same_on_every_rank():
    from pdes.examples.phold import PholdParams, run

    comm = _comm()
    p = PholdParams(n_lps=20, events_per_lp=1, max_hops=5, end_time=1e9, regions=4, remote=0.5)
    sim, st = run(p, seed=3, comm=comm)
    ends = comm.allgather((st.end_time, sim.now))
    assert len(set(ends)) == 1
    seq_sim, seq_st = run(p, seed=3, comm=None) if comm.rank == 0 else (None, None)
    if comm.rank == 0:
        assert st.end_time == seq_st.end_time == seq_sim.now


def test_unpicklable_remote_data_stops_every_rank_naming_the_event():
    from pdes import Entity, RemoteRankError, SimulationError, Simulator

    comm = _comm()
    _needs_two_ranks(comm)

    class E(Entity):
        def __init__(self):
            if self.index == 0:
                self.send(self.eid, "go", None, delay=0.5)

        def go(self, _):
            self.send(1, "hit", lambda: None, delay=1.0)  # a lambda cannot cross ranks

        def hit(self, _):
            pass

    sim = Simulator(lookahead=1.0, end_time=10.0, comm=comm)
    sim.add_entities(E, comm.size, placement="cyclic")
    with pytest.raises(SimulationError) as ei:
        sim.run()
    err = ei.value
    assert "event 'hit' from E[0] to E[1] due at t=1.5" in str(err) and "picklable" in str(err)
    if comm.rank == 0:
        assert not isinstance(err, RemoteRankError) and err.rank == 0
        assert err.__cause__ is not None
    else:
        assert isinstance(err, RemoteRankError) and "rank 0 failed" in str(err)


def test_remote_event_that_cannot_be_delivered_stops_every_rank():
    from pdes import Entity, RemoteRankError, SimulationError, Simulator

    comm = _comm()
    _needs_two_ranks(comm)

    class E(Entity):
        inboxes = ("mail",)  # declared, but no process is ever spawned to take it

        def __init__(self):
            if self.index == 0:
                self.send(1, "mail", "hello", delay=1.0)

    sim = Simulator(lookahead=1.0, end_time=10.0, comm=comm)
    sim.add_entities(E, comm.size, placement="cyclic")
    with pytest.raises(SimulationError) as ei:
        sim.run()
    err = ei.value
    assert "event 'mail' from E[0] to E[1]" in str(err)
    if comm.rank == 1:
        assert not isinstance(err, RemoteRankError) and "on rank 1" in str(err)
    else:
        assert isinstance(err, RemoteRankError) and "rank 1 failed" in str(err)


def test_remote_send_to_unknown_service_is_an_error_at_the_call():
    from pdes import Entity, Simulator, UnknownServiceError

    comm = _comm()
    _needs_two_ranks(comm)

    class E(Entity):
        def known(self, _):
            pass

    sim = Simulator(lookahead=1.0, comm=comm)
    sim.add_entities(E, comm.size, placement="cyclic")
    me = sim.entity("E", comm.rank)
    other = sim.eid("E", (comm.rank + 1) % comm.size)
    with pytest.raises(UnknownServiceError, match="'nope'"):
        me.send(other, "nope", None, delay=1.0)
    me.send(other, "known", None, delay=1.0)
    st = sim.run()
    assert st.events == comm.size and st.remote_events == comm.size


def test_hibernating_processes_of_every_rank_are_reported():
    from pdes import Entity, Simulator

    comm = _comm()

    class N(Entity):
        def __init__(self):
            self.spawn(self.body, name="waiter")

        def body(self):
            p = self.current_process()
            p.waiting_for = f"message {self.index}"
            p.hibernate()

    n = 2 * comm.size + 1
    sim = Simulator(lookahead=1.0, end_time=5.0, comm=comm)
    sim.add_entities(N, n, name="n", placement="cyclic")
    st = sim.run()
    got = sorted((b.entity, b.state, b.waiting_for, b.rank) for b in st.blocked)
    assert got == sorted((f"n[{i}]", "hibernating", f"message {i}", i % comm.size) for i in range(n))
    assert len({tuple(x) for x in comm.allgather(got)}) == 1


def test_empty_stretches_of_time_are_skipped():
    from pdes import Entity, Simulator

    comm = _comm()

    class E(Entity):
        def __init__(self):
            self.send(self.eid, "ping", None, delay=0.0)
            self.send(self.eid, "ping", None, delay=500.0)

        def ping(self, _):
            pass

    sim = Simulator(lookahead=1.0, comm=comm, parallel=True)
    sim.add_entities(E, 2 * comm.size)
    st = sim.run()
    assert st.windows == 2 and st.events == 4 * comm.size


def test_the_statistics_mode_predicts_this_runs_windows_and_events_per_rank():
    # A sequential run with predict_ranks=(P,) has the parallel run's windows and puts the
    # same events on each rank (windows and results do not depend on the rank count).
    from pdes.examples.phold import PholdParams, run

    comm = _comm()
    p = PholdParams(n_lps=64, events_per_lp=3, end_time=15.0, regions=8, remote=0.3)
    _, st = run(p, seed=3, comm=comm, parallel=True)
    _, seq = run(p, seed=3, comm=None, predict_ranks=(comm.size, 16))
    pred = seq.predicted[comm.size]
    assert pred.windows == st.windows and pred.events == st.events == seq.events
    assert list(pred.events_per_rank) == st.events_per_rank
    assert 1.0 <= pred.speedup_bound <= comm.size and seq.predicted[16].speedup_bound <= 16
