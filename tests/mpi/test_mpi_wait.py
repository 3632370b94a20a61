"""Waiting in the kernel at the window exchange (PDES_MPI_WAIT=block, pdes.mpi_wait): the
same events as the sequential run on every path (table and batches in shared memory, or over
the node's sockets where there is no futex, batches too large for them through MPI, the
meeting followed by MPI's collective), and a one-line error for a bad value."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.mpi


def _phold(monkeypatch, mode: str, **patch):
    from mpi4py import MPI

    import pdes.mpi_wait as mw
    import pdes.parallel as par
    from pdes.examples.phold import PholdParams, lp_digests, run

    monkeypatch.setenv("PDES_MPI_WAIT", mode)
    if "one_node_max" in patch:
        monkeypatch.setattr(mw, "ONE_NODE_MAX_RANKS", patch["one_node_max"])
    if "max_batch" in patch:
        monkeypatch.setattr(par, "MAX_SOCKET_BATCH", patch["max_batch"])
    if patch.get("no_futex"):
        monkeypatch.setattr(mw, "_futex_call", lambda: None)
    comm = MPI.COMM_WORLD
    p = PholdParams(n_lps=48, events_per_lp=3, end_time=30.0, regions=4, remote=0.5, digest=True)
    sim, st = run(p, seed=5, comm=comm, parallel=True)
    return comm, p, lp_digests(sim), st


@pytest.mark.parametrize("patch", [{}, {"max_batch": 0}, {"max_batch": 150}, {"no_futex": True},
                                   {"no_futex": True, "max_batch": 150}, {"one_node_max": 1}],
                         ids=["shared-memory", "large-batches-via-mpi", "some-ranks-over-the-limit", "sockets",
                              "sockets-some-ranks-over-the-limit", "meet-then-mpi"])
def test_blocking_wait_gives_the_sequential_events(monkeypatch, patch):
    from pdes.examples.phold import lp_digests, run

    comm, p, digests, st = _phold(monkeypatch, "block", **patch)
    assert st.windows > 0 and (st.remote_events > 0 or comm.size == 1)
    everyone = comm.allgather((st.events, st.windows, st.remote_events))
    assert len(set(everyone)) == 1
    if comm.rank == 0:
        seq_sim, seq_st = run(p, seed=5, comm=None)
        assert digests == lp_digests(seq_sim) and st.events == seq_st.events


def test_a_failure_on_one_rank_reaches_every_rank_when_blocking(monkeypatch):
    from mpi4py import MPI

    from pdes import Entity, SimulationError, Simulator

    monkeypatch.setenv("PDES_MPI_WAIT", "block")
    comm = MPI.COMM_WORLD
    if comm.size < 2:
        pytest.skip("needs two ranks")

    class Ping(Entity):
        def __init__(self, n):
            self.n = n
            self.send(self.eid, "tick", 0, delay=0.0)

        def tick(self, k):
            if self.index == self.n - 1 and k == 7:
                raise RuntimeError("broken on purpose")
            self.send((self.index + 1) % self.n, "tick", k + 1, delay=1.0)

    n = 2 * comm.size
    sim = Simulator(lookahead=1.0, end_time=50.0, comm=comm)
    sim.add_entities(Ping, n, n)
    with pytest.raises(SimulationError, match="broken on purpose"):
        sim.run()


def test_a_bad_wait_mode_is_one_line_naming_the_variable(monkeypatch):
    from mpi4py import MPI

    from pdes import ConfigError, Simulator

    monkeypatch.setenv("PDES_MPI_WAIT", "nap")
    comm = MPI.COMM_WORLD
    if comm.size < 2:
        pytest.skip("needs two ranks")
    sim = Simulator(lookahead=1.0, comm=comm)
    with pytest.raises(ConfigError, match="PDES_MPI_WAIT.*auto.*block.*spin"):
        sim.run()
