"""The traffic skeleton: open-loop synthetic traffic of a named pattern at an offered load.

The job has two ranks per node (``ranks_per_node=2``, block mapping): rank 2i is node i's
*injector*, rank 2i+1 its *sink*. Splitting the roles keeps both exact with blocking MPI
calls: the injector sleeps until each message's creation time, the sink sits in a wildcard
receive and reads the clock the moment a message arrives.

Injector of node i: messages of ``msg_bytes`` are created at the times of a Poisson process
of rate ``load * B_i / msg_bytes`` (B_i: the node's injection bandwidth, the bandwidth of its
injection link), from one common start t0 after the set-up (an allgather of the ranks'
nodes, the split of the injectors' communicator and two allreduces that fix t0, see
``docs/traffic.md``) until t0 + ``duration``; each goes to the sink of the node the pattern
(:mod:`apps.traffic.patterns`) draws, with its creation time as payload. A message is sent at
its creation time whatever is in flight: the load is offered, not adapted. At the end the
injectors tell every sink how many messages to expect (a reduce-scatter of their counts),
through the sink of their own node.

Sink: receives until it has them all; a message's latency is its arrival (the receive's
completion) minus its creation time.

Measurement window ``[t0 + warmup, t0 + duration)``: the injector counts the bytes created in
it (the offered bytes), the sink the bytes that arrive in it (the accepted bytes) and the
latencies of the messages created in it. Every rank returns its figures (an injector
``{"offered_bytes", "messages", "inject_bw"}``, a sink ``{"accepted_bytes", "latencies"}``);
:func:`apps.traffic.sweep.traffic_point` turns them into the offered and accepted fractions
of injection bandwidth and the latency statistics.
"""

from __future__ import annotations

from typing import Any

from ..mpi.p2p import ANY_SOURCE
from ..registry import app
from ..traffic.patterns import build_pattern, check_pattern, pattern_names
from ._args import count, nbytes as _nbytes, optional, seconds

__all__ = ["traffic", "DATA_TAG", "END_TAG"]

DATA_TAG = 1
END_TAG = 2


def _load(v: Any, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 < v <= 1.0:
        raise ValueError(f"{name} must be a fraction of the injection bandwidth in (0, 1], got {v!r}")
    return float(v)


def _msg_bytes(v: Any, name: str) -> float:
    b = _nbytes(v, name)
    if b < 1:
        raise ValueError(f"{name} must be a size >= 1 byte, got {v!r}")
    return b


def _duration(v: Any, name: str) -> float:
    t = seconds(v, name)
    if t <= 0:
        raise ValueError(f"{name} must be a duration > 0 seconds, got {v!r}")
    return t


def _pattern(v: Any, name: str) -> str:
    names = pattern_names()
    if v not in names:
        raise ValueError(f"{name} must be one of {', '.join(names)}, got {v!r}")
    return v


def _fraction(v: Any, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {v!r}")
    return float(v)


def _shift(v: Any, name: str) -> int:
    return count(v, name, lo=-(1 << 62))


CHECKS = {
    "pattern": _pattern, "load": _load, "msg_bytes": _msg_bytes, "duration": _duration, "warmup": seconds,
    "shift": optional(_shift), "hot_nodes": lambda v, name: count(v, name, lo=1), "hot_fraction": _fraction,
}


def _validate(size: int, *, pattern: str, duration: Any, warmup: Any, shift: Any, hot_nodes: Any,
              hot_fraction: Any, **_: Any) -> None:
    if size % 2 or size < 4:
        raise ValueError(f"traffic runs an injector and a sink on every node: it needs an even number of "
                         f"ranks >= 4 (ranks_per_node=2), got {size}")
    if seconds(warmup, "warmup") >= _duration(duration, "duration"):
        raise ValueError(f"warmup ({warmup!r}) must be shorter than duration ({duration!r})")
    check_pattern(pattern, size // 2, shift=shift, hot_nodes=hot_nodes, hot_fraction=hot_fraction)


@app("traffic", checks=CHECKS, validate=_validate)
def traffic(mpi: Any, *, pattern: str = "uniform", load: float = 0.1, msg_bytes: Any = 4096, duration: Any = "100us",
            warmup: Any = "20us", shift: int | None = None, hot_nodes: int = 1, hot_fraction: float = 0.1) -> dict:
    """Open-loop synthetic traffic: every node injects msg_bytes messages at Poisson times
    offering load x its injection bandwidth, to destinations of the named pattern, for
    duration; returns each rank's offered and accepted bytes and latencies after warmup
    (2 ranks per node: injector 2i, sink 2i+1)."""
    warm = seconds(warmup, "warmup")
    dur = _duration(duration, "duration")
    msg = _msg_bytes(msg_bytes, "msg_bytes")
    # The node of every rank: the pattern is defined on the job's nodes, and the layout of
    # injector/sink pairs is checked here, where the mapping is known.
    rank_nodes = mpi.allgather(8, data=mpi.node)
    nodes = tuple(rank_nodes[0::2])
    if rank_nodes[1::2] != list(nodes) or len(set(nodes)) != len(nodes):
        raise ValueError("traffic needs ranks 2i and 2i+1 on node i and one pair per node "
                         "(ranks_per_node=2 with the block mapping)")
    injector = mpi.rank % 2 == 0
    inj = mpi.comm_split(0 if injector else None, mpi.rank)
    # Every injector starts at one common time t0, after every rank is through the set-up:
    # an injector that started as soon as it was through would load the network while late
    # ranks' set-up messages are still under way, and past saturation those would queue
    # behind the traffic without bound. The first allreduce gives the time the last rank
    # entered it; the second the longest any rank took to get through it (d), on the idle
    # network. The second is the same collective, entered within d of the first's start, so
    # every rank is through it by about start + 2d: t0 = start + 3d leaves one d of slack.
    start = mpi.allreduce(8, data=mpi.now, op="max")
    d = mpi.allreduce(8, data=mpi.now - start, op="max")
    t0 = start + 3.0 * d
    if mpi.now > t0:
        # Not seen: the network carries nothing else until t0.
        raise ValueError(f"the set-up collectives took {(mpi.now - start) * 1e6:.3g} us, longer than the "
                         f"{3 * d * 1e6:.3g} us allowed before traffic starts")
    t_lo = t0 + warm
    t_hi = t0 + dur
    if not injector:
        return _sink(mpi, t_lo, t_hi)
    pat = build_pattern(pattern, nodes=nodes, topology=mpi.topology, rng=mpi.job_rng("traffic-pattern"),
                        shift=shift, hot_nodes=hot_nodes, hot_fraction=hot_fraction)
    bw = float(mpi.topology.link_bw[mpi.node])
    return _inject(mpi, inj, pat, load * bw / msg, msg, t0, t_lo, t_hi, bw)


def _inject(mpi: Any, inj: Any, pat: Any, rate: float, msg: float, t0: float, t_lo: float, t_hi: float,
            bw: float) -> dict:
    me = inj.rank
    n = pat.n
    counts = [0] * n
    rng = mpi.rng
    expo = rng.expovariate
    dest = pat.dest
    isend = mpi.isend
    pending = []
    offered = 0.0
    created = 0
    t = t0
    while True:
        t += expo(rate)
        if t >= t_hi:
            break
        j = dest(me, rng)
        if j is None:
            continue
        dt = t - mpi.now
        if dt > 0:
            mpi.compute(dt)
        req = isend(2 * j + 1, msg, DATA_TAG, t)
        if not req.done:  # rendezvous: completes once the receiver has matched it
            pending.append(req)
        counts[j] += 1
        if t >= t_lo:
            offered += msg
            created += 1
    mpi.waitall(pending)
    expected = inj.reduce_scatter(8, data=counts)
    mpi.send(mpi.rank + 1, 8, END_TAG, expected)
    return {"offered_bytes": offered, "messages": created, "inject_bw": bw}


def _sink(mpi: Any, t_lo: float, t_hi: float) -> dict:
    end = mpi.irecv(mpi.rank - 1, END_TAG)
    expected = None
    got = 0
    accepted = 0.0
    latencies = []
    req = None
    while expected is None or got < expected:
        if req is None:
            req = mpi.irecv(ANY_SOURCE, DATA_TAG)
        if expected is None:
            mpi.waitany([req, end])
            if not req.done:
                expected = end.data
                continue
        elif not req.done:
            mpi.wait(req)
        now = mpi.now
        created = req.data
        if t_lo <= now < t_hi:
            accepted += req.nbytes
        if t_lo <= created:
            latencies.append(now - created)
        got += 1
        req = None
    return {"accepted_bytes": accepted, "latencies": latencies}
