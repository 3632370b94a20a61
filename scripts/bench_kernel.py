#!/usr/bin/env python3
"""Kernel speed: PHOLD on pdes (service and process styles) against SimPy and bare loops.

Every implementation runs the same PHOLD: N LPs, 10 initial events each, per-LP
``random.Random`` streams, destination uniform over all LPs, delay ``lookahead +
Exp(mean)``, until the same end time. Each measurement runs in a fresh Python process;
implementations are interleaved round by round so machine noise hits them alike; the table
gives medians over rounds and the ratios the kernel is judged by:

* pdes process style vs SimPy's fastest process idiom (a deque mailbox plus a bare event)
  and SimPy's Store-per-LP idiom;
* pdes process style vs a bare heapq + greenlet loop (the cost floor of process switching);
* pdes service style vs a bare heapq + callback loop.

Usage: ``python scripts/bench_kernel.py [--rounds 3] [--sizes 1000,10000]``. Needs simpy
(``pip install '.[bench]'``). The last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import time
from heapq import heappop, heappush

import harness as h

IMPLS = ["pdes-service", "pdes-process", "simpy-mailbox", "simpy-store", "bare-greenlet", "bare-callback"]
LOOKAHEAD = 1.0
MEAN = 1.0
EVENTS_PER_LP = 10


def _rngs(n: int, seed: int) -> list[random.Random]:
    return [random.Random(seed * 1_000_003 + i) for i in range(n)]


# -- pdes ---------------------------------------------------------------------------------
def run_pdes(style: str, n: int, end: float, seed: int) -> int:
    from pdes.examples.phold import PholdParams, run

    p = PholdParams(n_lps=n, events_per_lp=EVENTS_PER_LP, lookahead=LOOKAHEAD, mean_delay=MEAN, end_time=end, regions=1)
    _, st = run(p, style=style, seed=seed, comm=None)
    # Process starts are kernel events too but not PHOLD events: count PHOLD events only.
    return st.events - (n if style == "process" else 0)


# -- SimPy --------------------------------------------------------------------------------
def run_simpy_mailbox(n: int, end: float, seed: int) -> int:
    import collections

    import simpy

    env = simpy.Environment()
    rngs = _rngs(n, seed)
    count = [0]

    class LP:
        def __init__(self, i):
            self.i = i
            self.mailbox = collections.deque()
            self.waiter = None
            self.rng = rngs[i]

        def deliver(self, ev):
            self.mailbox.append(ev.value)
            w = self.waiter
            if w is not None:
                self.waiter = None
                w.succeed()

        def proc(self):
            mailbox = self.mailbox
            rng = self.rng
            event = env.event
            timeout = env.timeout
            while True:
                if not mailbox:
                    self.waiter = event()
                    yield self.waiter
                mailbox.popleft()
                count[0] += 1
                dest = lps[rng.randrange(n)]
                timeout(LOOKAHEAD + rng.expovariate(1.0 / MEAN)).callbacks.append(dest.deliver)

    lps = [LP(i) for i in range(n)]
    for lp in lps:
        env.process(lp.proc())
        for _ in range(EVENTS_PER_LP):
            env.timeout(lp.rng.expovariate(1.0 / MEAN)).callbacks.append(lp.deliver)
    env.run(until=end)
    return count[0]


def run_simpy_store(n: int, end: float, seed: int) -> int:
    import simpy

    env = simpy.Environment()
    rngs = _rngs(n, seed)
    stores = [simpy.Store(env) for _ in range(n)]
    count = [0]

    def putter(store):
        return lambda ev: store.put(ev.value)

    puts = [putter(s) for s in stores]

    def proc(i):
        store = stores[i]
        rng = rngs[i]
        while True:
            yield store.get()
            count[0] += 1
            dest = rng.randrange(n)
            env.timeout(LOOKAHEAD + rng.expovariate(1.0 / MEAN), 0).callbacks.append(puts[dest])

    for i in range(n):
        env.process(proc(i))
        for _ in range(EVENTS_PER_LP):
            env.timeout(rngs[i].expovariate(1.0 / MEAN), 0).callbacks.append(puts[i])
    env.run(until=end)
    return count[0]


# -- bare loops (the floors) --------------------------------------------------------------
def run_bare_greenlet(n: int, end: float, seed: int) -> int:
    from greenlet import getcurrent, greenlet

    rngs = _rngs(n, seed)
    heap: list = []
    seq = itertools.count()
    hub = getcurrent()
    now = [0.0]
    count = [0]
    lps: list = []

    def body(i):
        rng = rngs[i]
        switch = hub.switch
        while True:
            switch()  # wait for the next event
            count[0] += 1
            dest = lps[rng.randrange(n)]
            heappush(heap, (now[0] + LOOKAHEAD + rng.expovariate(1.0 / MEAN), next(seq), dest.switch, None))

    for i in range(n):
        g = greenlet(body)
        lps.append(g)
        g.switch(i)  # run to its first wait
    for i in range(n):
        for _ in range(EVENTS_PER_LP):
            heappush(heap, (rngs[i].expovariate(1.0 / MEAN), next(seq), lps[i].switch, None))
    heappush(heap, (end, -1, None, None))
    pop = heappop
    while True:
        t, _, fn, data = pop(heap)
        if fn is None:
            break
        now[0] = t
        fn(data)
    return count[0]


def run_bare_callback(n: int, end: float, seed: int) -> int:
    rngs = _rngs(n, seed)
    heap: list = []
    seq = itertools.count()
    now = [0.0]
    count = [0]

    class LP:
        __slots__ = ("rng",)

        def __init__(self, rng):
            self.rng = rng

        def event(self, data):
            count[0] += 1
            rng = self.rng
            dest = lps[rng.randrange(n)]
            heappush(heap, (now[0] + LOOKAHEAD + rng.expovariate(1.0 / MEAN), next(seq), dest.event, data))

    lps = [LP(r) for r in rngs]
    for lp in lps:
        for _ in range(EVENTS_PER_LP):
            heappush(heap, (lp.rng.expovariate(1.0 / MEAN), next(seq), lp.event, None))
    heappush(heap, (end, -1, None, None))
    pop = heappop
    while True:
        t, _, fn, data = pop(heap)
        if fn is None:
            break
        now[0] = t
        fn(data)
    return count[0]


RUNNERS = {
    "pdes-service": lambda n, e, s: run_pdes("service", n, e, s),
    "pdes-process": lambda n, e, s: run_pdes("process", n, e, s),
    "simpy-mailbox": run_simpy_mailbox,
    "simpy-store": run_simpy_store,
    "bare-greenlet": run_bare_greenlet,
    "bare-callback": run_bare_callback,
}


def one(impl: str, n: int, end: float, seed: int) -> dict:
    # Imports are not part of the measurement (numpy alone costs ~0.1 s to import).
    if impl.startswith("pdes"):
        import pdes.examples.phold  # noqa: F401
    elif impl.startswith("simpy"):
        import simpy  # noqa: F401
    else:
        import greenlet  # noqa: F401
    t0 = time.perf_counter()
    events = RUNNERS[impl](n, end, seed)
    wall = time.perf_counter() - t0
    return {"impl": impl, "n": n, "events": events, "wall_s": wall, "events_per_s": events / wall}


def main() -> None:
    ap = h.parser(__doc__, rounds=3, seed=1)
    ap.add_argument("--sizes", default="1000,10000", help="LP counts, comma separated")
    ap.add_argument("--events", type=int, default=20, help="mean PHOLD events per chain (sets the end time)")
    ap.add_argument("--impls", default=",".join(IMPLS))
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--end", type=float, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        h.emit(one(a.one, a.n, a.end, a.seed))
        return
    impls = a.impls.split(",")
    if any(i.startswith("simpy") for i in impls):
        try:
            import simpy  # noqa: F401
        except ImportError:
            sys.exit("bench_kernel: simpy is not installed; pip install '.[bench]' (or pass --impls without simpy-*)")
    sizes = [int(s) for s in a.sizes.split(",")]
    end = a.events * (LOOKAHEAD + MEAN)
    results: dict[tuple[str, int], list[float]] = {}
    counts: dict[tuple[str, int], int] = {}
    for r in range(a.rounds):
        for n in sizes:
            for impl in impls:
                res = h.run_json(
                    [sys.executable, __file__, "--one", impl, "--n", str(n), "--end", str(end), "--seed", str(a.seed)],
                    script="bench_kernel", timeout=None,
                )
                results.setdefault((impl, n), []).append(res["events_per_s"])
                counts[(impl, n)] = res["events"]
                print(f"  round {r + 1}/{a.rounds} n={n:>6} {impl:<14} {res['events_per_s']:>12,.0f} ev/s", file=sys.stderr)
    med = {k: h.median(v) for k, v in results.items()}
    print(f"PHOLD: {EVENTS_PER_LP} initial events per LP, lookahead {LOOKAHEAD}, mean {MEAN}, end {end}; "
          f"median of {a.rounds} interleaved rounds, fresh process each")
    print(f"{'impl':<15}" + "".join(f"{'n=' + str(n):>16}{'events':>10}" for n in sizes))
    for impl in impls:
        print(f"{impl:<15}" + "".join(f"{med[(impl, n)]:>14,.0f}/s{counts[(impl, n)]:>10}" for n in sizes))
    ratios = {}
    pairs = [
        ("pdes-process", "simpy-mailbox", 1.5),
        ("pdes-process", "simpy-store", None),
        ("pdes-process", "bare-greenlet", 0.8),
        ("pdes-service", "bare-callback", 0.8),
    ]
    print()
    print(f"{'ratio':<34}" + "".join(f"{'n=' + str(n):>10}" for n in sizes) + "   goal")
    for a_, b_, goal in pairs:
        if a_ not in impls or b_ not in impls:
            continue
        row = [h.ratio(med[(a_, n)], med[(b_, n)]) for n in sizes]
        ratios[f"{a_}/{b_}"] = {str(n): round(x, 3) for n, x in zip(sizes, row)}
        print(f"{a_ + ' / ' + b_:<34}" + "".join(f"{x:>10.2f}" for x in row) + (f"   >= {goal}" if goal else ""))
    h.emit({
        "bench": "kernel", "rounds": a.rounds, "sizes": sizes, "end_time": end,
        "events_per_s": {impl: {str(n): round(med[(impl, n)]) for n in sizes} for impl in impls},
        "ratios": ratios,
    })


if __name__ == "__main__":
    main()
