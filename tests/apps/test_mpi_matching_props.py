"""Matching properties under random programs (hypothesis): whatever the sizes (eager and
rendezvous mixed), delays, tags, wildcards and network model, every message is received
exactly once and messages of one sender that one kind of receive accepts arrive in the order
they were sent (non-overtaking)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from apps import ANY_SOURCE, ANY_TAG, app, run_app
from apps.testing import switch_machine

M = switch_machine(4)
SIZES = [0, 100, 5000, 70_000, 300_000]  # the last two go by rendezvous
DELAYS = [0.0, 1e-7, 2e-6, 3e-5]
OUT: dict = {}

# A sender's program: (tag, size index, delay index) per message.
message = st.tuples(st.integers(0, 2), st.integers(0, len(SIZES) - 1), st.integers(0, len(DELAYS) - 1))
programs = st.lists(st.lists(message, min_size=1, max_size=6), min_size=3, max_size=3)


@app("t-prop")
def _prop(mpi, *, progs, mode, recv_delays, order):
    if mpi.rank > 0:
        reqs = []
        for seq, (tag, si, di) in enumerate(progs[mpi.rank - 1]):
            if DELAYS[di]:
                mpi.compute(DELAYS[di])
            if seq % 2:
                mpi.send(0, SIZES[si], tag=tag, data=(mpi.rank, seq))
            else:
                reqs.append(mpi.isend(0, SIZES[si], tag=tag, data=(mpi.rank, seq)))
        mpi.waitall(reqs)
        return
    got = []
    if mode == "any":
        for d in recv_delays:
            if d:
                mpi.compute(d)
            st_ = mpi.recv(ANY_SOURCE, ANY_TAG)
            got.append((st_.source, st_.tag, st_.nbytes, st_.data))
    else:
        # One receive per message, described by (source or ANY, tag or ANY), posted in a
        # shuffled order, all at once.
        reqs = [mpi.irecv(src, tag) for src, tag in order]
        for d in recv_delays[:1]:
            if d:
                mpi.compute(d)
        mpi.waitall(reqs)
        got = [(r.source, r.tag, r.nbytes, r.data) for r in reqs]
    OUT["got"] = got


def _check(progs, got, order=None):
    sent = {(s + 1, seq): (tag, SIZES[si]) for s, prog in enumerate(progs) for seq, (tag, si, _) in enumerate(prog)}
    assert sorted(d for *_, d in got) == sorted(sent)  # each message exactly once
    for src, tag, nbytes, (s, seq) in got:
        assert (src, (tag, nbytes)) == (s, sent[(s, seq)])
    if order is not None:
        for (want_src, want_tag), (src, tag, _, _) in zip(order, got):
            assert want_src in (ANY_SOURCE, src) and want_tag in (ANY_TAG, tag)
    # Non-overtaking: among receives of one kind, one sender's messages come in send order.
    kinds = order if order is not None else [(ANY_SOURCE, ANY_TAG)] * len(got)
    for kind in set(kinds):
        for s in range(1, 4):
            seqs = [d[1] for k, (_, _, _, d) in zip(kinds, got) if k == kind and d[0] == s]
            assert seqs == sorted(seqs)


@settings(max_examples=30, deadline=None)
@given(programs, st.lists(st.sampled_from(DELAYS), min_size=18, max_size=18), st.sampled_from(["ideal", "packet"]))
def test_wildcard_receives_get_every_message_once_in_each_senders_order(progs, delays, network):
    n = sum(len(p) for p in progs)
    OUT.clear()
    run_app(M, "t-prop", 4, ranks_per_node=1, network=network, comm=None, progs=progs, mode="any",
            recv_delays=delays[:n], order=None)
    _check(progs, OUT["got"])


@settings(max_examples=30, deadline=None)
@given(programs, st.randoms(use_true_random=False), st.sampled_from(["tag", "source", "exact"]),
       st.sampled_from(DELAYS), st.sampled_from(["ideal", "packet"]))
def test_posted_receives_match_in_posting_and_sending_order(progs, rnd, kind, delay, network):
    # Receives that name the tag only (any source), the source only (any tag), or both: one
    # per message, so a complete matching always exists whatever MPI's greedy order picks.
    order = []
    for s, prog in enumerate(progs):
        for tag, _, _ in prog:
            order.append((ANY_SOURCE if kind == "tag" else s + 1, ANY_TAG if kind == "source" else tag))
    rnd.shuffle(order)
    OUT.clear()
    run_app(M, "t-prop", 4, ranks_per_node=1, network=network, comm=None, progs=progs, mode="posted",
            recv_delays=[delay], order=order)
    _check(progs, OUT["got"], order)
