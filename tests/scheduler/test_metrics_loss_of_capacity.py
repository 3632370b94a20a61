"""Loss of capacity, vectorised, against the event walk it replaced (kept here as the
reference): bit for bit on random schedules with many ties and on the CTC-SP2 log."""

from __future__ import annotations

import heapq

import numpy as np
import pytest

from scheduler.metrics import _interval_min, _loss_of_capacity


def walk(submit, start, end, nodes, n_nodes, t0, t1):
    """The event walk: apply every event of an instant, then count the idle nodes over the
    interval to the next one when a waiting job would fit them."""
    span = t1 - t0
    if span <= 0 or len(submit) == 0:
        return 0.0
    n = len(submit)
    times = np.concatenate([submit, start, end])
    kinds = np.concatenate([np.zeros(n, np.int8), np.ones(n, np.int8), np.full(n, 2, np.int8)])
    idx = np.concatenate([np.arange(n)] * 3)
    order = np.lexsort((kinds, times))
    times_l, kinds_l, idx_l = times[order].tolist(), kinds[order].tolist(), idx[order].tolist()
    nodes_l = nodes.tolist()
    waiting: list[tuple[int, int]] = []
    started = bytearray(n)
    busy = 0
    lost = 0.0
    m = len(times_l)
    k = 0
    while k < m:
        t = times_l[k]
        while k < m and times_l[k] == t:
            kind, j = kinds_l[k], idx_l[k]
            if kind == 0:
                heapq.heappush(waiting, (nodes_l[j], j))
            elif kind == 1:
                started[j] = 1
                busy += nodes_l[j]
            else:
                busy -= nodes_l[j]
            k += 1
        while waiting and started[waiting[0][1]]:
            heapq.heappop(waiting)
        if k < m and waiting:
            idle = n_nodes - busy
            if idle > 0 and waiting[0][0] <= idle:
                lo = t if t > t0 else t0
                hi = times_l[k] if times_l[k] < t1 else t1
                if hi > lo:
                    lost += idle * (hi - lo)
    return lost / (n_nodes * span)


def _schedule(rng, n, n_nodes, grain):
    """A random valid-looking schedule (capacity is not enforced: the metric does not care)."""
    submit = np.sort(rng.integers(0, 50 * n, n)).astype(float) * grain
    start = submit + rng.integers(0, 200, n) * grain * (rng.random(n) < 0.7)
    end = start + rng.integers(0, 300, n) * grain
    nodes = rng.integers(1, n_nodes + 1, n).astype(np.int64)
    return submit, start, end, nodes


@pytest.mark.parametrize("seed", range(12))
def test_random_schedules_match_the_walk(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    n_nodes = int(rng.integers(1, 64))
    grain = [1.0, 0.1, 7.3][seed % 3]
    s, st, e, nd = _schedule(rng, n, n_nodes, grain)
    windows = [(float(s.min()), float(e.max())), (float(s.min()), float(s.max())),
               (float(np.quantile(s, 0.2)), float(np.quantile(s, 0.7))), (5.0, 5.0)]
    for t0, t1 in windows:
        assert _loss_of_capacity(s, st, e, nd, n_nodes, t0, t1) == walk(s, st, e, nd, n_nodes, t0, t1)


def test_interval_min_against_brute_force():
    rng = np.random.default_rng(3)
    g = 300
    a = rng.integers(0, g, 500)
    b = np.minimum(a + rng.integers(0, 80, 500), g)
    v = rng.integers(1, 1000, 500).astype(np.int64)
    got = _interval_min(a, b, v, g)
    big = np.iinfo(np.int64).max
    want = [min([int(v[j]) for j in range(500) if a[j] <= p < b[j]], default=big) for p in range(g)]
    assert got.tolist() == want
    assert _interval_min(a[:0], b[:0], v[:0], 4).tolist() == [big] * 4


def test_ctc_log_matches_the_walk():
    from scheduler.replay_engine import replay
    from scheduler.swf import read_swf
    from simhpc.traces import trace_path

    path = trace_path("CTC-SP2-1996-3.1-cln.swf.gz")
    if not path.exists():
        pytest.skip("the CTC-SP2 log is not shipped in this checkout")
    r = replay(read_swf(path), order="fcfs", backfill="easy")
    t = r.table
    ran = t.ran
    s, st, e, nd = t.submit[ran], t.start[ran], t.end[ran], t.nodes[ran]
    n_nodes = r.metrics.n_nodes
    for t0, t1 in ((float(s.min()), float(e.max())), (float(np.quantile(s, 0.1)), float(np.quantile(s, 0.9)))):
        new = _loss_of_capacity(s, st, e, nd, n_nodes, t0, t1)
        assert new > 0 and new == walk(s, st, e, nd, n_nodes, t0, t1)
    assert r.metrics.loss_of_capacity == walk(s, st, e, nd, n_nodes, float(s.min()), float(e.max()))
