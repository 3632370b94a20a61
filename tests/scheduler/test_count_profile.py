"""CountProfile, the free-node profile of conservative backfilling: in-place updates keep it
as short as a rebuilt one, and the compression's search (earlier) agrees with find."""

from __future__ import annotations

import random

from scheduler.backfill import CountProfile, _slot_end


def values(p: CountProfile, at: list[float]) -> list[int]:
    out = []
    for t in at:
        k = max(i for i, u in enumerate(p.times) if u <= t)
        out.append(p.free[k])
    return out


def test_add_drops_breakpoints_that_no_longer_change_the_count():
    p = CountProfile(0.0, 4, [], 0.0)
    p.add(10.0, 20.0, -2)
    assert (p.times, p.free) == ([0.0, 10.0, 20.0], [4, 2, 4])
    p.add(10.0, 20.0, 2)  # taken back: the profile is flat again
    assert (p.times, p.free) == ([0.0], [4])
    p.add(5.0, 10.0, -1)
    p.add(10.0, 15.0, -1)  # adjacent equal counts merge
    assert (p.times, p.free) == ([0.0, 5.0, 15.0], [4, 3, 4])


def test_earlier_is_find_with_the_jobs_own_slot():
    rng = random.Random(7)
    for _ in range(300):
        n_nodes = rng.randint(4, 16)
        ends = sorted(rng.uniform(1, 100) for _ in range(rng.randint(0, 5)))

        class J:  # a running job's row needs .nodes only
            def __init__(self, n):
                self.nodes = n

        rows = [(e, i, J(rng.randint(1, 3))) for i, e in enumerate(ends)]
        busy = sum(r[2].nodes for r in rows)
        if busy > n_nodes:
            continue
        p = CountProfile(0.0, n_nodes - busy, rows, 0.0)
        # reserve some slots where they fit, then a job of interest at its earliest slot
        for _ in range(rng.randint(0, 6)):
            n, d = rng.randint(1, n_nodes), rng.choice([0.0, rng.uniform(1, 60)])
            s = p.find(n, d)
            p.add(s, _slot_end(s, d), -n)
        n, d = rng.randint(1, n_nodes), rng.choice([0.0, rng.uniform(1, 60)])
        s = p.find(n, d) + rng.choice([0.0, rng.uniform(0, 50)])  # a slot at or after its earliest
        if not p.fits(s, n, d):
            continue
        e = _slot_end(s, d)
        p.add(s, e, -n)
        assert min(p.free) >= 0
        stop = next((k for k, t in enumerate(p.times) if t >= s), len(p.times))
        assert p.earlier(n, d, stop) == p.find(n, d, before=s, own=(s, e, n))
