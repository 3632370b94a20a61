"""Failures: an app that raises fails its job (AppError with job, rank, time and the error);
ranks blocked forever are reported as a deadlock with what each waits for, never hung; a run
cut by its end time is a timeout, not a deadlock."""

from __future__ import annotations

import pytest

from apps import AppError, AppTimeoutError, DeadlockError, app, run_app
from apps.testing import switch_machine

M = switch_machine(8)


def run(name, ranks=4, **kw):
    return run_app(M, name, ranks, ranks_per_node=1, network="ideal", comm=None, **kw)


@app("t-raises")
def _raises(mpi):
    if mpi.rank == 2:
        mpi.compute(1e-3)
        raise ValueError("boom")
    mpi.recv(2)  # would wait forever: the job is killed instead


def test_an_app_that_raises_fails_its_job_with_the_error():
    with pytest.raises(AppError) as ei:
        run("t-raises")
    e = ei.value
    assert (e.job, e.rank) == (0, 2)
    assert e.time == pytest.approx(1e-3 + M.topology.link_lat.min(), rel=1e-12)
    assert e.error == "ValueError: boom"
    assert "job 0 (app 't-raises') failed: rank 2 raised at t=" in str(e)
    assert "in _raises" in e.traceback and 'raise ValueError("boom")' in e.traceback


@app("t-recv-first")
def _recv_first(mpi):
    other = (mpi.rank + 1) % mpi.size
    mpi.recv(other, tag=7)
    mpi.send(other, 8, tag=7)


def test_a_deadlock_is_reported_with_every_blocked_rank_and_what_it_waits_for():
    with pytest.raises(DeadlockError) as ei:
        run("t-recv-first", ranks=3)
    e = ei.value
    assert e.blocked == [(r, r, f"recv(source={(r + 1) % 3}, tag=7, comm=world)") for r in range(3)]
    assert "deadlock in job 0 (app 't-recv-first'): 3 of 3 ranks blocked forever" in str(e)
    assert "rank 1 on node 1: recv(source=2, tag=7, comm=world)" in str(e)


@app("t-send-first")
def _send_first(mpi, *, nbytes):
    other = 1 - mpi.rank
    mpi.send(other, nbytes)
    mpi.recv(other)


def test_blocking_sends_deadlock_above_the_eager_threshold_only():
    assert run("t-send-first", ranks=2, nbytes=1000).runtime > 0  # buffered: fine
    with pytest.raises(DeadlockError) as ei:
        run("t-send-first", ranks=2, nbytes=1 << 20)
    assert ei.value.blocked[0] == (0, 0, "send(dest=1, tag=0, 1048576 bytes, comm=world; rendezvous: waiting for the receiver)")


@app("t-missing-barrier")
def _missing_barrier(mpi):
    sub = mpi.comm_split(0)
    if mpi.rank != 3:
        sub.barrier()


def test_a_collective_not_called_by_every_rank_is_reported_with_its_algorithm():
    with pytest.raises(DeadlockError) as ei:
        run("t-missing-barrier")
    text = str(ei.value)
    assert "3 of 4 ranks blocked forever" in text
    assert "rank 2 on node 2: barrier(dissemination, 0 bytes, comm=split(world, color=0)): recv(source=" in text


@app("t-probe-forever")
def _probe_forever(mpi):
    if mpi.rank == 0:
        mpi.compute(1e-3)
        mpi.send(1, 8, tag=1)
        mpi.probe(1, 5)
    elif mpi.rank == 1:
        req = mpi.irecv(0, 1)
        mpi.waitall([req, mpi.irecv(0, 2), mpi.irecv(0, 3)])
    else:
        mpi.waitany([mpi.irecv(0, 4), mpi.irecv(1, 4)])


def test_probe_waitall_and_waitany_deadlocks_name_the_pending_requests():
    with pytest.raises(DeadlockError) as ei:
        run("t-probe-forever", ranks=3)
    assert ei.value.blocked == [
        (0, 0, "probe(source=1, tag=5, comm=world)"),
        # the tag-1 receive completed while rank 1 waited: only the pending ones are listed
        (1, 1, "waitall(recv(source=0, tag=2, comm=world); recv(source=0, tag=3, comm=world))"),
        (2, 2, "waitany(recv(source=0, tag=4, comm=world); recv(source=1, tag=4, comm=world))"),
    ]


def test_the_kernel_lists_the_same_blocked_processes():
    from models.network import Network, NetworkConfig, network_lookahead
    from models.node_model import NodeModel
    from pdes import Simulator
    from apps import JobManager, LaunchSpec, MpiNode, MpiShared

    sim = Simulator(lookahead=network_lookahead(M.topology), comm=None)
    net = Network(sim, M.topology, NetworkConfig(model="ideal"), node_cls=MpiNode,
                  node_args=(MpiShared(NodeModel.from_machine(M)),))
    mgr = sim.add_entity(JobManager, net.node_offset, name="job_manager")
    mgr.launch_at(0.0, LaunchSpec.build(job=3, app="t-recv-first", args={}, rank_nodes=[0, 1], report_to=mgr.eid))
    st = sim.run()
    assert [(b.process, b.state, b.waiting_for) for b in st.blocked] == [
        ("job3.rank0", "hibernating", "recv(source=1, tag=7, comm=world)"),
        ("job3.rank1", "hibernating", "recv(source=0, tag=7, comm=world)"),
    ]
    assert mgr.records[3].status == "running"


@app("t-long")
def _long(mpi):
    mpi.compute(1.0)


def test_a_run_cut_by_end_time_is_a_timeout_not_a_deadlock():
    with pytest.raises(AppTimeoutError, match="had not finished at end_time=0.5 s: 4 ranks still working"):
        run("t-long", end_time=0.5)
    assert run("t-long", end_time=2.0).runtime == 1.0


@app("t-bad-compute")
def _bad_compute(mpi):
    mpi.compute(-1)


def test_misused_mpi_calls_fail_the_job():
    with pytest.raises(AppError, match=r"MpiError: compute\(seconds=-1\): the duration must be a finite number >= 0"):
        run("t-bad-compute")


@app("t-bad-size")
def _bad_size(mpi, *, call, nbytes):
    if call == "send":
        mpi.send(1 - mpi.rank, nbytes)
    elif call == "isend":
        mpi.isend(1 - mpi.rank, nbytes)
    else:
        getattr(mpi, call)(nbytes)


@pytest.mark.parametrize("call", ["send", "isend", "allreduce", "bcast"])
@pytest.mark.parametrize("nbytes", [float("inf"), float("nan"), -1, "1KiB"])
def test_sizes_that_are_not_finite_byte_counts_fail_the_job(call, nbytes):
    with pytest.raises(AppError, match=rf"MpiError: {call}: the size must be"):
        run("t-bad-size", ranks=2, call=call, nbytes=nbytes)
