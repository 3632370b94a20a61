"""Point-to-point semantics: matching, wildcards, non-overtaking, eager and rendezvous, probe,
requests, PROC_NULL, contexts; with exact timings on an idle single-switch network."""

from __future__ import annotations

import pytest

from apps import ANY_SOURCE, ANY_TAG, PROC_NULL, AppError, app, run_app
from apps.testing import alpha_beta, switch_machine
from models.network import NetworkConfig

M = switch_machine(8)
IDEAL = NetworkConfig(model="ideal")
A, B = alpha_beta(M, IDEAL)  # alpha = o_s + 2L + o_r, beta = 1 / link bandwidth
O_S = IDEAL.send_overhead
CTRL = 64
POLL = 1e-7  # default time of an unsuccessful test or iprobe


def run(name, ranks=2, network=IDEAL, **kw):
    return run_app(M, name, ranks, ranks_per_node=1, network=network, comm=None, **kw)


OUT: dict = {}


@app("t-nonovertaking")
def _nonovertaking(mpi, *, big, small):
    if mpi.rank == 0:
        r1 = mpi.isend(1, big, tag=5, data="first")
        mpi.send(1, small, tag=5, data="second")
        mpi.wait(r1)
    else:
        mpi.compute(1e-3)  # both have arrived (or, for rendezvous, their RTS) before the receives
        a = mpi.recv(0, ANY_TAG)
        b = mpi.recv(ANY_SOURCE, 5)
        OUT["order"] = (a.data, b.data, a.nbytes, b.nbytes)


@pytest.mark.parametrize("big", [60_000, 1_000_000])
@pytest.mark.parametrize("network", ["ideal", "packet"])
def test_messages_of_one_sender_match_in_send_order_even_when_the_network_reorders_them(big, network):
    # On both models the small second message arrives before the large first one: matching
    # must still give the first message to the first receive.
    OUT.clear()
    run("t-nonovertaking", network=network, big=big, small=8)
    assert OUT["order"] == ("first", "second", big, 8)


@app("t-nonovertaking-posted")
def _nonovertaking_posted(mpi):
    if mpi.rank == 0:
        mpi.compute(1e-4)
        r = mpi.isend(1, 200_000, tag=1, data="big")
        mpi.send(1, 8, tag=1, data="small")
        mpi.wait(r)
    else:
        ra = mpi.irecv(0, 1)
        rb = mpi.irecv(0, 1)
        mpi.waitall([ra, rb])
        OUT["posted"] = (ra.data, rb.data)


def test_posted_receives_get_messages_in_send_order():
    OUT.clear()
    run("t-nonovertaking-posted")
    assert OUT["posted"] == ("big", "small")


@app("t-wildcards")
def _wildcards(mpi):
    if mpi.rank == 0:
        mpi.compute(1e-3)  # everything below has arrived by now
        got = [mpi.recv(ANY_SOURCE, 9)]  # earliest arrived with tag 9
        got.append(mpi.recv(2, ANY_TAG))  # earliest arrived from 2
        got.append(mpi.recv(ANY_SOURCE, ANY_TAG))
        got.append(mpi.recv(ANY_SOURCE, ANY_TAG))
        got.append(mpi.recv(1, 7))
        OUT["got"] = [(s.source, s.tag, s.data) for s in got]
    elif mpi.rank == 1:
        mpi.send(0, 8, tag=7, data="1a")  # t = 0
        mpi.compute(2e-4)
        mpi.send(0, 8, tag=9, data="1b")  # t = 2e-4
        mpi.compute(2e-3)
        mpi.send(0, 8, tag=7, data="late")  # after rank 0 has posted its last receive
    else:
        mpi.compute(1e-4)
        mpi.send(0, 8, tag=9, data="2a")  # t = 1e-4
        mpi.compute(2e-4)
        mpi.send(0, 8, tag=3, data="2b")  # t = 3e-4


def test_wildcard_receives_take_the_earliest_arrived_match():
    OUT.clear()
    run("t-wildcards", ranks=3)
    # Unexpected at t = 1 ms, in arrival order: 1a (1, 7), 2a (2, 9), 1b (1, 9), 2b (2, 3).
    assert OUT["got"] == [(2, 9, "2a"), (2, 3, "2b"), (1, 7, "1a"), (1, 9, "1b"), (1, 7, "late")]


@app("t-posted-order")
def _posted_order(mpi):
    if mpi.rank == 0:
        exact = mpi.irecv(1, 4)
        wild = mpi.irecv(ANY_SOURCE, ANY_TAG)
        exact2 = mpi.irecv(1, 4)
        mpi.waitall([exact, wild, exact2])
        OUT["posted"] = (exact.data, wild.data, exact2.data)
    else:
        for k in range(3):
            mpi.send(0, 8, tag=4, data=k)


def test_an_arriving_message_matches_the_earliest_posted_receive():
    OUT.clear()
    run("t-posted-order")
    assert OUT["posted"] == (0, 1, 2)


@app("t-eager-vs-rdv")
def _eager_vs_rdv(mpi, *, nbytes, delay):
    if mpi.rank == 0:
        t0 = mpi.now
        mpi.send(1, nbytes, data="x")
        OUT["send_done"] = mpi.now - t0
    else:
        t0 = mpi.now
        mpi.compute(delay)
        st = mpi.recv(0)
        OUT["recv_done"] = mpi.now - t0
        OUT["data"] = st.data


def test_eager_send_completes_at_once_and_the_receive_after_one_message_time():
    OUT.clear()
    res = run("t-eager-vs-rdv", nbytes=1000, delay=0.0)
    assert OUT["send_done"] == 0.0
    assert OUT["recv_done"] == pytest.approx(A + 1000 * B, rel=1e-12)
    assert OUT["data"] == "x"
    assert res.runtime == pytest.approx(A + 1000 * B, rel=1e-12)
    assert res.bytes_sent == 1000 and res.messages == 1


def test_rendezvous_send_completes_only_after_the_receiver_matched():
    # The receiver posts its receive at D; RTS long arrived. CTS leaves at D and takes
    # alpha + c beta; the data then leaves: the sender's buffer is free after o_s + n / B
    # (ideal model: injection time), the receive completes alpha + n beta after the CTS.
    OUT.clear()
    n, d = 1_000_000, 1e-3
    res = run("t-eager-vs-rdv", nbytes=n, delay=d)
    cts = d + A + CTRL * B
    assert OUT["send_done"] == pytest.approx(cts + O_S + n * B, rel=1e-12)
    assert OUT["recv_done"] == pytest.approx(cts + A + n * B, rel=1e-12)
    assert OUT["data"] == "x"
    assert res.bytes_sent == n + 2 * CTRL and res.messages == 3


def test_the_eager_threshold_is_a_run_option():
    OUT.clear()
    run("t-eager-vs-rdv", nbytes=1000, delay=1e-3, eager_threshold=999)
    assert OUT["send_done"] > 1e-3
    OUT.clear()
    run("t-eager-vs-rdv", nbytes=1000, delay=1e-3, eager_threshold="1KiB")
    assert OUT["send_done"] == 0.0


@app("t-probe")
def _probe(mpi):
    if mpi.rank == 0:
        t0 = mpi.now
        assert mpi.iprobe(1) is None
        st = mpi.probe(ANY_SOURCE, ANY_TAG)
        t_probe = mpi.now - t0
        assert mpi.iprobe(1, 3).nbytes == 500_000
        r = mpi.recv(st.source, st.tag)
        OUT["probe"] = (st.source, st.tag, st.nbytes, r.nbytes, r.data, t_probe)
    else:
        mpi.compute(1e-4)
        mpi.send(0, 500_000, tag=3, data="p")


def test_probe_blocks_until_an_envelope_arrives_and_does_not_consume_it():
    OUT.clear()
    run("t-probe")
    src, tag, nb, rnb, data, t = OUT["probe"]
    assert (src, tag, nb, rnb, data) == (1, 3, 500_000, 500_000, "p")
    assert t == pytest.approx(1e-4 + A + CTRL * B, rel=1e-12)  # the RTS carries the envelope


@app("t-requests")
def _requests(mpi):
    if mpi.rank == 0:
        reqs = [mpi.irecv(1, 1), mpi.irecv(2, 2)]
        t0 = mpi.now
        assert not mpi.test(reqs[0]) and not reqs[1].test()
        assert mpi.now - t0 == pytest.approx(2 * POLL, rel=1e-12)  # an unsuccessful test takes the poll time
        i, r = mpi.waitany(reqs)
        OUT["first"] = (i, r.source, mpi.now - t0)
        mpi.wait(reqs[1 - i])
        OUT["second"] = (reqs[1 - i].source, mpi.now - t0)
        t1 = mpi.now
        assert reqs[0].test() and mpi.test(reqs[1]) and mpi.now == t1  # a successful one is free
    elif mpi.rank == 1:
        mpi.compute(2e-4)
        mpi.send(0, 100, tag=1)
    else:
        mpi.compute(1e-4)
        mpi.send(0, 100, tag=2)


def test_waitany_returns_the_first_completed_request():
    OUT.clear()
    run("t-requests", ranks=3)
    assert OUT["first"][:2] == (1, 2)
    assert OUT["first"][2] == pytest.approx(1e-4 + A + 100 * B, rel=1e-12)
    assert OUT["second"][0] == 1
    assert OUT["second"][1] == pytest.approx(2e-4 + A + 100 * B, rel=1e-12)


@app("t-polling")
def _polling(mpi, *, how):
    # MPI's progress rule: a repeated test or iprobe eventually succeeds. Busy loops must end.
    limit = 10**6
    if mpi.rank == 0:
        mpi.compute(1e-4)
        mpi.send(1, 1000, tag=4, data="polled")  # eager
        big = mpi.isend(1, 200_000, tag=5)  # rendezvous: done once rank 1 has matched it
        polls = 0
        while not big.test():
            polls += 1
            if polls > limit:
                raise RuntimeError("test() never succeeds")
        OUT["sender"] = mpi.now
        return
    t0 = mpi.now
    polls = 0
    if how == "iprobe":
        while (st := mpi.iprobe(0, ANY_TAG)) is None:
            polls += 1
            if polls > limit:
                raise RuntimeError("iprobe() never succeeds")
        got = mpi.recv(st.source, st.tag).data
    else:
        req = mpi.irecv(0, 4)
        while not mpi.test(req):
            polls += 1
            if polls > limit:
                raise RuntimeError("test() never succeeds")
        got = req.data
    OUT["receiver"] = (got, polls, t0, mpi.now)
    mpi.compute(1e-3)
    mpi.recv(0, 5)


@pytest.mark.parametrize("how", ["test", "iprobe"])
@pytest.mark.parametrize("poll", [None, 1e-6])
def test_polling_loops_progress_and_end(how, poll):
    OUT.clear()
    kw = {} if poll is None else {"poll_time": poll}
    res = run("t-polling", how=how, **kw)
    poll = POLL if poll is None else poll
    got, polls, t0, t_done = OUT["receiver"]
    arrival = t0 + 1e-4 + A + 1000 * B
    assert got == "polled"
    assert arrival <= t_done <= arrival + poll * (1 + 1e-9)  # found within one poll of its arrival
    assert abs(polls - (arrival - t0) / poll) <= 1
    # The sender's test loop ends once the receiver has matched (at t_done + 1 ms) and the
    # data has left: CTS (alpha + c beta), then the injection of the data.
    cts = t_done + 1e-3 + A + CTRL * B
    assert cts + O_S + 200_000 * B <= OUT["sender"] <= cts + O_S + 200_000 * B + poll * (1 + 1e-9)
    assert res.runtime > 0


def test_the_poll_time_is_a_checked_run_option():
    from apps import AppConfigError

    with pytest.raises(AppConfigError, match="poll_time must be a duration > 0 seconds"):
        run("t-polling", how="test", poll_time=0)
    with pytest.raises(AppConfigError, match="poll_time: "):
        run("t-polling", how="test", poll_time="soon")


@app("t-procnull-self")
def _procnull_self(mpi):
    mpi.send(PROC_NULL, 10)
    st = mpi.recv(PROC_NULL)
    assert st.source == PROC_NULL and st.nbytes == 0
    t0 = mpi.now
    r = mpi.isend(mpi.rank, 1000, tag=2, data=mpi.rank)
    got = mpi.recv(mpi.rank, 2)
    mpi.wait(r)
    OUT[mpi.rank] = (got.data, mpi.now - t0)


def test_proc_null_is_a_no_op_and_a_rank_can_send_to_itself_through_memory():
    OUT.clear()
    run("t-procnull-self")
    # A self-message is an intra-node copy: o_s + n / mem_bw + o_r (no latency configured).
    t = O_S + 1000 / M.mem_bw_per_node + IDEAL.recv_overhead
    assert OUT[0] == (0, pytest.approx(t, rel=1e-12)) and OUT[1][0] == 1


@app("t-contexts")
def _contexts(mpi):
    sub = mpi.dup()
    if mpi.rank == 0:
        sub.send(1, 8, tag=1, data="sub")
        mpi.send(1, 8, tag=1, data="world")
    elif mpi.rank == 1:
        mpi.compute(1e-3)
        w = mpi.recv(ANY_SOURCE, ANY_TAG)  # must not see the sub-communicator's message
        s = sub.recv(ANY_SOURCE, ANY_TAG)
        OUT["ctx"] = (w.data, s.data)
    mpi.barrier()  # a collective's messages never match application receives


def test_communicators_have_separate_contexts():
    OUT.clear()
    run("t-contexts", ranks=3)
    assert OUT["ctx"] == ("world", "sub")


@app("t-bad-dest")
def _bad_dest(mpi):
    mpi.send(mpi.size, 8)


def test_a_bad_rank_fails_the_job_with_a_clear_error():
    with pytest.raises(AppError, match="dest 2 is not a rank of communicator world"):
        run("t-bad-dest")


@app("t-sendrecv-tags")
def _sendrecv_tags(mpi):
    other = 1 - mpi.rank
    st = mpi.sendrecv(other, 10 * (mpi.rank + 1), tag=mpi.rank, recvtag=other, data=mpi.rank)
    OUT[mpi.rank] = (st.source, st.tag, st.nbytes, st.data)


def test_sendrecv_with_distinct_tags():
    OUT.clear()
    run("t-sendrecv-tags")
    assert OUT == {0: (1, 1, 20, 1), 1: (0, 0, 10, 0)}


@app("t-sendrecv-checks")
def _sendrecv_checks(mpi):
    import numpy as np

    from apps import MpiError

    other = 1 - mpi.rank
    errs = []
    for kw in (dict(dest=2), dict(dest=other, source=2), dict(dest=other, source=-7), dict(dest=other, recvtag=-3),
               dict(dest=other, tag=-1), dict(dest=1.5), dict(dest=other, tag=2.5), dict(dest=2, tag=-1),
               dict(dest=2, source=other), dict(dest=PROC_NULL, tag=-1)):
        try:
            mpi.sendrecv(nbytes=8, **kw)
        except MpiError as exc:
            errs.append(str(exc))
    st = mpi.sendrecv(np.int64(other), 8, tag=np.int32(3), data=mpi.rank)
    sent = mpi.sendrecv(other, 8, source=PROC_NULL, tag=4, data=mpi.rank)
    got = mpi.sendrecv(PROC_NULL, 8, source=other, tag=4)
    OUT[mpi.rank] = (errs, st.source, st.tag, st.data, sent.source, got.source, got.data)


def test_sendrecv_checks_its_arguments_in_order_and_converts_integers():
    # source first, then the receive tag, the destination and the send tag (each error
    # names what is wrong); numpy integers are ranks and tags; PROC_NULL on either side.
    OUT.clear()
    run("t-sendrecv-checks")
    errs = [
        "source 2 is not a rank of communicator world (size 2) nor ANY_SOURCE",
        "source 2 is not a rank of communicator world (size 2) nor ANY_SOURCE",
        "source -7 is not a rank of communicator world (size 2) nor ANY_SOURCE",
        "tag must be >= 0 or ANY_TAG, got -3",
        "tag must be >= 0, got -1",
        "source must be an integer, got 1.5",
        "tag must be an integer, got 2.5",
        "source 2 is not a rank of communicator world (size 2) nor ANY_SOURCE",
        "dest 2 is not a rank of communicator world (size 2)",
        "tag must be >= 0, got -1",
    ]
    assert OUT == {0: (errs, 1, 3, 1, PROC_NULL, 1, 1), 1: (errs, 0, 3, 0, PROC_NULL, 0, 0)}
