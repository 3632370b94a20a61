"""First events (Entity.send_first) and deferred events (first_key, Simulator.post, on_idle):
the kernel's support for state updates that a model applies lazily, as the packet model's
credits are."""

from __future__ import annotations

from pdes import Entity, Simulator


class Node(Entity):
    def __init__(self, log):
        self.log = log

    def ping(self, data):
        self.log.append((self.sim.now, self.index, data))

    def go(self, plan):
        for dest, delay, first in plan:
            (self.send_first if first else self.send)(dest, "ping", (self.index, first), delay)


def _run(plans, end_time=float("inf")):
    log = []
    sim = Simulator(lookahead=1.0, end_time=end_time)
    nodes = sim.add_entities(Node, len(plans), log)
    for n, plan in zip(nodes, plans):
        n.after(0.0, n.go, [(nodes[d].eid, t, f) for d, t, f in plan])
    sim.run()
    return sim, log


def test_first_events_run_before_ordinary_events_at_one_time_in_key_order():
    # Entity 0 sends an ordinary event, entities 1 and 2 first events, all due at t=1.
    sim, log = _run([[(0, 1.0, False)], [(0, 1.0, True)], [(0, 1.0, True)], [(0, 2.0, False)]])
    assert [x[2] for x in log] == [(1, True), (2, True), (0, False), (3, False)]
    # A first event still counts as one event of its sender.
    assert sim.stats.events == 4 + 4


def test_first_events_due_at_the_end_time_do_not_run():
    sim, log = _run([[(0, 1.0, True), (0, 0.5, False)], []], end_time=1.0)
    assert [x[2] for x in log] == [(0, False)]
    assert sim.now == 1.0


class Lazy(Entity):
    """Adds amounts to a counter after a delay, either as first events (eager) or deferred:
    the key is taken, the amount waits in a list, and is applied by the next read."""

    def __init__(self, deferred, reads):
        self.deferred = deferred
        self.reads = reads
        self.total = 0
        self.pend = []
        if deferred:
            self.sim.on_idle(self.flush)

    def add(self, nb):
        self.total += nb

    def produce(self, plan):
        for delay, nb in plan:
            if self.deferred:
                self.pend.append((self.sim.now + delay, self.first_key(), nb))
            else:
                self.send_first(self.eid, "add", nb, delay)

    def read(self, _):
        now = self.sim.now
        self.total += sum(nb for t, _, nb in self.pend if t <= now)
        self.pend = [e for e in self.pend if e[0] > now]
        self.reads.append((now, self.total))

    def flush(self, t):
        self.total += sum(nb for u, _, nb in self.pend if u < t)
        for u, key, nb in self.pend:
            if u >= t:
                self.sim.post(u, key, self.eid, "add", nb)
        self.pend = []


def _lazy(deferred, end_time=float("inf")):
    reads = []
    sim = Simulator(lookahead=1.0, end_time=end_time)
    (e,) = sim.add_entities(Lazy, 1, deferred, reads)
    e.after(0.0, e.produce, [(1.0, 1), (2.0, 2), (2.0, 4), (5.0, 8), (9.0, 16)])
    for t in (1.0, 2.0, 3.0, 6.0):
        e.after(t, e.read, None)
    e.after(7.0, e.produce, [(1.5, 32)])
    sim.run()
    return reads, sim.stats.events, sim.now, e.total


def test_deferred_events_behave_as_first_events_to_the_end():
    eager = _lazy(False)
    assert eager[0] == [(1.0, 1), (2.0, 7), (3.0, 7), (6.0, 15)]
    # Same reads, same count of events, same end time (the last deferred event, 9.0) and total.
    assert _lazy(True) == eager
    assert eager[2] == 9.0 and eager[3] == 63


def test_deferred_events_at_or_after_the_end_time_stay_unrun():
    eager = _lazy(False, end_time=8.5)
    # 32 is due at exactly 8.5 and 16 at 9.0: neither runs.
    assert eager[2] == 8.5 and eager[3] == 15
    assert _lazy(True, end_time=8.5) == eager
    # Exactly at the end time: not run either way.
    assert _lazy(True, end_time=9.0) == _lazy(False, end_time=9.0)
