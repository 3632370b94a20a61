"""The sequential kernel: every verb, the error rules, determinism; placement and the windowed
loop on one rank; and, in separate processes, no MPI import in sequential runs and the abort of
every rank on an uncaught error."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import traceback

import pytest

from pdes import (
    ConfigError,
    Entity,
    Mailbox,
    PdesError,
    ProcessError,
    SendError,
    SimulationError,
    Simulator,
    UnknownEntityError,
    UnknownServiceError,
)
from tests_support import MPIRUN


class Recorder(Entity):
    def __init__(self, log=None):
        self.log = log if log is not None else []

    def ping(self, data):
        self.log.append((self.sim.now, repr(self), data))


def test_services_run_in_time_then_key_order():
    sim = Simulator(lookahead=1.0)
    a, b = sim.add_entities(Recorder, 2, name="r")
    log = b.log
    a.log = log
    a.send(b.eid, "ping", "late", delay=5.0)
    a.send(("r", 1), "ping", "early", delay=1.0)
    b.send(b.eid, "ping", "self-zero", delay=0.0)
    a.send(a.eid, "ping", "a-self", delay=1.0)
    sim.run()
    # At t=1 two events tie: a's keys (eid 0) sort before b's; within a, send order.
    assert log == [
        (0.0, "r[1]", "self-zero"),
        (1.0, "r[1]", "early"),
        (1.0, "r[0]", "a-self"),
        (5.0, "r[1]", "late"),
    ]
    assert sim.now == 5.0
    assert sim.stats.events == 4


class Chain(Recorder):
    def ping(self, data):
        super().ping(data)
        if data.endswith("!"):
            self.send(self.eid, "ping", data[:-1] + " then", delay=0.0)


@pytest.mark.parametrize("parallel", [False, True])
def test_events_created_during_a_group_of_tied_events_join_it_in_key_order(parallel):
    # At t=1 four events tie. Those that A and B create at t=1 (delay 0) join the group and,
    # having smaller keys than the events of later entities, run before them; C's runs last.
    sim = Simulator(lookahead=1.0, comm=None, parallel=parallel)
    log = []
    a, b, c = sim.add_entities(Chain, 3, log)
    c.send(c.eid, "ping", "c1!", delay=1.0)
    c.send(c.eid, "ping", "c2", delay=1.0)
    b.send(b.eid, "ping", "b1!", delay=1.0)
    a.send(a.eid, "ping", "a1!", delay=1.0)
    a.send(a.eid, "ping", "a2", delay=2.0)
    st = sim.run()
    assert [d for _, _, d in log] == ["a1!", "a1 then", "b1!", "b1 then", "c1!", "c2", "c1 then", "a2"]
    assert [t for t, _, _ in log] == [1.0] * 7 + [2.0]
    assert st.events == 8


@pytest.mark.parametrize("parallel", [False, True])
def test_events_at_or_after_end_time_are_not_executed(parallel):
    sim = Simulator(end_time=10.0, lookahead=1.0, comm=None, parallel=parallel)
    (r,) = sim.add_entities(Recorder, 1)
    for t in (9.999, 10.0, 10.5):
        r.send(r.eid, "ping", t, delay=t)
    st = sim.run()
    assert [d for _, _, d in r.log] == [9.999]
    assert st.events == 1
    assert sim.now == 10.0


def test_req_service_simian_alias_and_eid_lookup():
    sim = Simulator(lookahead=0.5)
    sim.add_entities(Recorder, 3, name="node")
    src = sim.entity("node", 0)
    src.req_service(0.5, "ping", 42, "node", 2)
    sim.run()
    assert sim.entity("node", 2).log == [(0.5, "node[2]", 42)]
    assert sim.eid("node", 2) == 2


def test_negative_delay_raises_at_the_call():
    sim = Simulator()
    (r,) = sim.add_entities(Recorder, 1)
    with pytest.raises(SendError, match="negative delay"):
        r.send(r.eid, "ping", None, delay=-1e-9)


def test_nan_delay_raises_at_the_call():
    sim = Simulator(lookahead=1.0)
    a, b = sim.add_entities(Recorder, 2)
    for dest in (a.eid, b.eid):
        with pytest.raises(SendError, match="invalid delay nan"):
            a.send(dest, "ping", None, delay=math.nan)
    assert sim._heap == []


def test_delay_below_lookahead_to_other_entity_raises_but_self_is_fine():
    sim = Simulator(lookahead=1e-6)
    a, b = sim.add_entities(Recorder, 2)
    a.send(a.eid, "ping", None, delay=0.0)  # self: any delay >= 0
    with pytest.raises(SendError, match=r"below the lookahead"):
        a.send(b.eid, "ping", None, delay=5e-7)
    a.send(b.eid, "ping", None, delay=1e-6)  # exactly the lookahead is allowed


def test_locality_group_allows_short_delays_inside_the_group():
    sim = Simulator(lookahead=1.0)
    ents = sim.add_entities(Recorder, 4, group=lambda i: i // 2)
    ents[0].send(ents[1].eid, "ping", "same group", delay=0.1)
    with pytest.raises(SendError, match="lookahead"):
        ents[1].send(ents[2].eid, "ping", "other group", delay=0.1)
    sim.run()
    assert ents[1].log == [(0.1, "Recorder[1]", "same group")]


def test_unknown_entity_and_service_are_named_at_send_time():
    sim = Simulator(lookahead=1.0)
    (r,) = sim.add_entities(Recorder, 1, name="r")
    with pytest.raises(UnknownEntityError, match=r"99"):
        r.send(99, "ping", None, delay=1.0)
    with pytest.raises(UnknownEntityError, match="'nope'"):
        r.send(("nope", 0), "ping", None, delay=1.0)
    with pytest.raises(UnknownEntityError, match=r"r\[5\] does not exist"):
        r.send(("r", 5), "ping", None, delay=1.0)
    with pytest.raises(UnknownServiceError, match="'pong'"):
        r.send(r.eid, "pong", None, delay=1.0)
    assert issubclass(UnknownServiceError, PdesError)


def test_invalid_simulator_and_entity_configuration():
    with pytest.raises(ConfigError, match="lookahead"):
        Simulator(lookahead=-1)
    with pytest.raises(ConfigError, match="end_time"):
        Simulator(end_time=0)
    with pytest.raises(ConfigError, match="parallel run needs lookahead"):
        Simulator(parallel=True, lookahead=0.0, comm=None)
    sim = Simulator()
    with pytest.raises(ConfigError, match="subclass of pdes.Entity"):
        sim.add_entities(object, 1)
    with pytest.raises(ConfigError, match="count"):
        sim.add_entities(Recorder, 0)
    sim.add_entities(Recorder, 1)
    with pytest.raises(ConfigError, match="already added"):
        sim.add_entities(Recorder, 1)


class GcProbe(Entity):
    def __init__(self):
        self.seen = None

    def probe(self, _data):
        import gc

        self.seen = gc.get_threshold()

    def fail(self, _data):
        raise RuntimeError("gc probe failed")


@pytest.mark.parametrize("parallel", [False, True])
def test_gc_threshold_applies_during_run_only_and_is_restored(parallel):
    import gc

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        sim = Simulator(lookahead=1.0, comm=None, parallel=parallel, gc_threshold=50_000)
        (e,) = sim.add_entities(GcProbe, 1)
        e.send(e.eid, "probe", delay=1.0)
        sim.run()
        assert e.seen == (50_000, 10, 10)
        assert gc.get_threshold() == (700, 10, 10)
        # A larger threshold of the caller's own is kept; None leaves the settings alone;
        # a failing run restores them too.
        gc.set_threshold(200_000, 10, 10)
        for kw in ({"gc_threshold": 50_000}, {"gc_threshold": None}):
            sim = Simulator(lookahead=1.0, comm=None, parallel=parallel, **kw)
            (e,) = sim.add_entities(GcProbe, 1)
            e.send(e.eid, "probe", delay=1.0)
            sim.run()
            assert e.seen == (200_000, 10, 10)
        gc.set_threshold(700, 10, 10)
        sim = Simulator(lookahead=1.0, comm=None, parallel=parallel)
        (e,) = sim.add_entities(GcProbe, 1)
        e.send(e.eid, "fail", delay=1.0)
        with pytest.raises(SimulationError, match="gc probe failed"):
            sim.run()
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)
    for bad in (0, -5, 1.5, "many", True):
        with pytest.raises(ConfigError, match="gc_threshold"):
            Simulator(gc_threshold=bad)


def test_exception_in_service_names_entity_time_and_keeps_traceback():
    class Bad(Entity):
        def boom(self, data):
            raise ValueError("broken model")

    sim = Simulator()
    (b,) = sim.add_entities(Bad, 1, name="bad")
    b.send(b.eid, "boom", None, delay=2.5)
    with pytest.raises(SimulationError) as ei:
        sim.run()
    msg = str(ei.value)
    assert "broken model" in msg and "bad[0]" in msg and "t=2.5" in msg and "'boom'" in msg
    assert isinstance(ei.value.__cause__, ValueError)
    assert ei.value.time == 2.5
    # The original traceback is kept: it reaches into the model's own frame.
    assert "in boom" in "".join(traceback.format_exception(ei.value))


def test_exception_in_process_names_the_process():
    class P(Entity):
        def __init__(self):
            self.spawn(self.body, name="worker")

        def body(self):
            self.sleep(3.0)
            raise KeyError("lost")

    sim = Simulator()
    sim.add_entities(P, 1)
    with pytest.raises(SimulationError, match=r"process 'worker' of P\[0\] at t=3.0"):
        sim.run()


def test_error_of_a_process_caught_by_a_service_is_not_blamed_later():
    class N(Entity):
        def __init__(self):
            self.p = self.spawn(self.body, name="fragile")
            self.send(self.eid, "poke", None, delay=1.0)
            self.send(self.eid, "later", None, delay=2.0)

        def body(self):
            self.hibernate()
            raise ValueError("handled by the service")

        def poke(self, _):
            try:
                self.p.resume()
            except ValueError:
                pass

        def later(self, _):
            raise RuntimeError("the real bug")

    sim = Simulator()
    sim.add_entities(N, 1)
    with pytest.raises(SimulationError, match=r"the real bug \(in service 'later' of N\[0\] at t=2.0\)"):
        sim.run()


def test_process_sleep_hibernate_wake_join_and_results():
    trace = []

    class Node(Entity):
        def __init__(self):
            self.sleeper = self.spawn(self.sleepy, 2.0, name="sleepy")
            self.waiter = self.spawn(self.waiting, name="waiting")
            self.spawn(self.joiner, name="joiner")

        def sleepy(self, dt):
            trace.append(("sleepy-start", self.now))
            self.sleep(dt)
            trace.append(("sleepy-woke", self.now))
            self.wake(self.waiter, "hello")
            return "slept"

        def waiting(self):
            v = self.hibernate()
            trace.append(("waiter-woke", self.now, v))
            self.sleep(1.0)
            return 7

        def joiner(self):
            r1 = self.waiter.join()
            r2 = self.sleeper.join()  # already done: returns at once
            trace.append(("joined", self.now, r1, r2))

    sim = Simulator()
    (n,) = sim.add_entities(Node, 1)
    st = sim.run()
    assert trace == [
        ("sleepy-start", 0.0),
        ("sleepy-woke", 2.0),
        ("waiter-woke", 2.0, "hello"),
        ("joined", 3.0, 7, "slept"),
    ]
    assert n.sleeper.done and n.sleeper.result == "slept"
    assert st.blocked == []


def test_spawn_with_delay_and_kwargs():
    seen = []

    class N(Entity):
        def __init__(self):
            self.spawn(self.body, 1, b=2, delay=4.0)

        def body(self, a, *, b):
            seen.append((self.now, a, b))

    sim = Simulator()
    sim.add_entities(N, 1)
    sim.run()
    assert seen == [(4.0, 1, 2)]


def test_blocking_calls_outside_a_process_raise():
    class N(Entity):
        def __init__(self):
            self.p = self.spawn(self.body)

        def body(self):
            self.hibernate()

        def svc(self, data):
            self.p.sleep(1.0)

    sim = Simulator()
    (n,) = sim.add_entities(N, 1)
    with pytest.raises(ProcessError, match="outside"):
        n.sleep(1.0)
    with pytest.raises(ProcessError, match="outside"):
        n.p.hibernate()
    with pytest.raises(ProcessError, match="outside"):
        Mailbox(n).get()
    with pytest.raises(ProcessError, match="outside"):
        n.p.join()
    with pytest.raises(ProcessError, match="outside"):
        n.p.receive()
    n.send(n.eid, "svc", None, delay=1.0)
    with pytest.raises(SimulationError, match="outside process"):
        sim.run()


def test_wake_of_non_hibernating_process_raises():
    class N(Entity):
        def __init__(self):
            self.p = self.spawn(self.body)
            self.send(self.eid, "poke", None, delay=0.5)

        def body(self):
            self.sleep(1.0)

        def poke(self, data):
            self.p.wake()

    sim = Simulator()
    sim.add_entities(N, 1)
    with pytest.raises(SimulationError, match="not hibernating"):
        sim.run()


def test_hibernating_processes_at_end_are_reported_not_lost():
    class N(Entity):
        def __init__(self):
            self.spawn(self.stuck, name="stuck")
            self.spawn(self.late, name="late")

        def stuck(self):
            self.sim  # noqa: B018
            p = self._current_process("hibernate")
            p.waiting_for = "recv(source=3, tag=7)"
            p.hibernate()

        def late(self):
            self.sleep(100.0)

    sim = Simulator(end_time=10.0)
    sim.add_entities(N, 1, name="n")
    st = sim.run()
    states = {(b.process, b.state, b.waiting_for) for b in st.blocked}
    assert states == {("stuck", "hibernating", "recv(source=3, tag=7)"), ("late", "scheduled", "")}
    assert all(b.entity == "n[0]" for b in st.blocked)


def test_blocked_processes_say_which_call_and_model_line_they_wait_in():
    class Server(Entity):
        inboxes = ("req",)

        def __init__(self):
            self.box = Mailbox(self)
            self.spawn(self.serve, name="serve", inbox="req")
            self.spawn(self.consume, name="consume")
            self.spawn(self.napper, name="napper")

        def serve(self):
            self._loop()

        def _loop(self):
            while True:
                self.current_process().receive()

        def consume(self):
            self.box.get()

        def napper(self):
            self.sleep(50.0)

    sim = Simulator(end_time=10.0)
    sim.add_entities(Server, 1)
    st = sim.run()
    where = {b.process: b.location for b in st.blocked}
    me = os.path.basename(__file__)
    assert where["serve"].startswith("receive() in ")
    assert "Server._loop" in where["serve"] and "< " in where["serve"] and "Server.serve" in where["serve"]
    assert me in where["serve"]
    assert where["consume"].startswith("Mailbox.get() in ") and "Server.consume" in where["consume"]
    assert where["napper"].startswith("sleep() in ") and "Server.napper" in where["napper"]
    # Lines point at the blocking statement of the model.
    line = int(where["napper"].rsplit(":", 1)[1].rstrip(")"))
    assert "self.sleep(50.0)" in open(__file__).read().splitlines()[line - 1]


def test_mailbox_immediate_delivery_from_service_and_deferred_from_process():
    got = []

    class N(Entity):
        def __init__(self):
            self.mb = Mailbox(self)
            self.spawn(self.reader)
            self.spawn(self.writer)

        def deliver(self, item):
            self.mb.put(item)

        def reader(self):
            for _ in range(3):
                item = self.mb.get()
                got.append((self.now, item))

        def writer(self):
            self.sleep(1.0)
            self.mb.put("from-process")
            self.send(self.eid, "deliver", "from-service", delay=1.0)
            self.mb.put("queued")

    sim = Simulator()
    sim.add_entities(N, 1)
    sim.run()
    assert got == [(1.0, "from-process"), (1.0, "queued"), (2.0, "from-service")]


def test_kill_process_makes_its_pending_events_noops():
    log = []

    class N(Entity):
        def __init__(self):
            self.p = self.spawn(self.body)
            self.send(self.eid, "stop", None, delay=1.5)

        def body(self):
            try:
                while True:
                    self.sleep(1.0)
                    log.append(self.now)
            finally:
                log.append("cleanup")

        def stop(self, _):
            self.p.kill()

    sim = Simulator(end_time=10.0)
    (n,) = sim.add_entities(N, 1)
    st = sim.run()
    assert log == [1.0, "cleanup"]
    assert n.p.done and n.p.killed
    assert st.blocked == []


def test_entity_rng_streams_depend_only_on_seed_and_id():
    def draws(seed):
        sim = Simulator(seed=seed)
        ents = sim.add_entities(Recorder, 3)
        return [e.rng.random() for e in ents], [float(e.np_rng.random()) for e in ents]

    a, b, c = draws(1), draws(1), draws(2)
    assert a == b
    assert a != c
    assert len(set(a[0])) == 3  # distinct streams per entity


def test_two_simulators_coexist_in_one_process():
    class Ticker(Entity):
        def __init__(self, period):
            self.ticks = 0
            self.spawn(self.body, period)

        def body(self, period):
            while True:
                self.sleep(period)
                self.ticks += 1

    s1 = Simulator(end_time=10.5)
    s2 = Simulator(end_time=10.5)
    (t1,) = s1.add_entities(Ticker, 1, 1.0)
    (t2,) = s2.add_entities(Ticker, 1, 2.0)
    s1.run()
    s2.run()
    assert (t1.ticks, t2.ticks) == (10, 5)


def test_run_twice_and_late_add_are_errors():
    sim = Simulator()
    sim.add_entities(Recorder, 1)
    sim.run()
    with pytest.raises(ConfigError):
        sim.run()
    with pytest.raises(ConfigError):
        sim.add_entities(Recorder, 1, name="late")


def test_entity_lookup_errors():
    sim = Simulator()
    sim.add_entities(Recorder, 2, name="r")
    assert [repr(e) for e in sim.entities("r")] == ["r[0]", "r[1]"]
    with pytest.raises(UnknownEntityError, match="known: r"):
        sim.entity("x", 0)
    with pytest.raises(UnknownEntityError):
        sim.eid("r", -1)


def _traced_model(seed, style):
    """A model mixing services, processes, RNG draws and equal-time ties."""
    log = []

    class Node(Entity):
        def __init__(self, n):
            self.n = n
            self.spawn(self.proc)

        def proc(self):
            for _ in range(20):
                self.sleep(self.rng.choice([0.0, 0.5, 1.0]))
                dest = self.rng.randrange(self.n)
                self.send(dest, "hit", (self.eid, self.rng.random()), delay=1.0)

        def hit(self, data):
            log.append((self.sim.now, self.eid, data))

    sim = Simulator(seed=seed, lookahead=1.0)
    sim.add_entities(Node, 8, 8)
    sim.run()
    return log


def test_determinism_identical_event_traces():
    a = _traced_model(5, "x")
    b = _traced_model(5, "x")
    c = _traced_model(6, "x")
    assert a == b
    assert a != c
    assert len(a) == 160


def test_infinite_end_time_leaves_clock_at_last_event():
    sim = Simulator()
    (r,) = sim.add_entities(Recorder, 1)
    r.send(r.eid, "ping", None, delay=3.25)
    sim.run()
    assert sim.now == 3.25 and math.isfinite(sim.stats.end_time)


def test_resume_from_service_runs_the_process_inside_the_event():
    order = []

    class N(Entity):
        def __init__(self):
            self.p = self.spawn(self.body)
            self.send(self.eid, "poke", "v1", delay=2.0)

        def body(self):
            v = self.hibernate()
            order.append(("woke", self.now, v))
            p2 = self.current_process()
            self.sleep(1.0)
            order.append(("slept", self.now, p2 is self.p))

        def poke(self, v):
            self.p.resume(v)
            order.append(("poke returned", self.now))

    sim = Simulator()
    sim.add_entities(N, 1)
    st = sim.run()
    assert order == [("woke", 2.0, "v1"), ("poke returned", 2.0), ("slept", 3.0, True)]
    assert st.events == 3  # start, poke, sleep end: the resume itself cost no event


def test_inbox_messages_reach_a_process_in_order_even_while_it_sleeps():
    got = []

    class N(Entity):
        inboxes = ("mail",)

        def __init__(self):
            self.p = self.spawn(self.body, inbox="mail", delay=1.0)
            for k in range(3):
                self.send(self.eid, "mail", k, delay=0.5 * k)  # k=0,1 arrive before the start

        def body(self):
            self.sleep(5.0)  # message 2 arrives meanwhile
            for _ in range(3):
                got.append(self.current_process().receive())
            got.append(self.now)

    sim = Simulator()
    sim.add_entities(N, 1)
    sim.run()
    assert got == [0, 1, 2, 6.0]


def test_inbox_must_be_declared():
    class N(Entity):
        def __init__(self):
            self.spawn(lambda: None, inbox="mail")

    sim = Simulator()
    with pytest.raises(ProcessError, match="inboxes"):
        sim.add_entities(N, 1)


def test_windowed_loop_skips_empty_stretches_of_time():
    sim = Simulator(lookahead=1.0, comm=None, parallel=True)
    ents = sim.add_entities(Recorder, 3)
    for e in ents:
        e.send(e.eid, "ping", "first", delay=0.0)
        e.send(e.eid, "ping", "much later", delay=1000.0)
    st = sim.run()
    # One window at t=0 and one at t=1000, not a thousand empty ones in between.
    assert st.windows == 2
    assert st.events == 6 and sim.now == 1000.0


def test_placement_of_entities_on_ranks():
    from pdes import place

    assert place("block", "x", 10, 3).tolist() == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert place("cyclic", "x", 5, 2).tolist() == [0, 1, 0, 1, 0]
    h = place("hash", "x", 200, 4)
    assert h.tolist() == place("hash", "x", 200, 4).tolist()  # stable
    assert set(h.tolist()) == {0, 1, 2, 3}
    assert place(5, "x", 3, 4).tolist() == [1, 1, 1]
    assert place(lambda i, p: (i // 2) % p, "x", 6, 2).tolist() == [0, 0, 1, 1, 0, 0]
    assert place([1, 0, 1], "x", 3, 2).tolist() == [1, 0, 1]
    with pytest.raises(ConfigError, match="unknown placement"):
        place("round", "x", 3, 2)
    with pytest.raises(ConfigError, match="expected 3 ranks"):
        place([0, 1], "x", 3, 2)
    with pytest.raises(ConfigError, match="valid ranks are 0..1"):
        place(lambda i, p: 2, "x", 3, 2)


# -- launched as separate processes ---------------------------------------------------------
_LAUNCHER_VARS = ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "PMIX_SIZE", "PMIX_RANK")


def test_sequential_runs_never_import_mpi4py():
    code = textwrap.dedent("""
        import sys
        from pdes.examples.phold import PholdParams, run
        sim, st = run(PholdParams(n_lps=20, end_time=5.0, regions=2, remote=0.5))
        assert st.events > 0 and st.ranks == 1
        print("mpi4py" in sys.modules)
    """)
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_VARS}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed (pip install '.[mpi]')")
def test_uncaught_error_outside_a_run_aborts_every_rank(tmp_path):
    # Rank 1 fails while building its model; rank 0 is already waiting in the first window's
    # collective. With the abort hook installed, every rank ends promptly with the rank shown.
    script = tmp_path / "model.py"
    script.write_text(textwrap.dedent("""
        from pdes import Entity, Simulator
        from pdes.parallel import install_abort_hook, world_comm

        class E(Entity):
            def __init__(self):
                if self.index == 1:
                    raise RuntimeError("bad model input on one rank")
                self.send(self.eid, "tick", None, delay=0.0)

            def tick(self, _):
                self.send(self.eid, "tick", None, delay=1.0)

        comm = world_comm()
        install_abort_hook(comm)
        sim = Simulator(lookahead=1.0, end_time=1e9, comm=comm)
        sim.add_entities(E, 2, placement="cyclic")
        sim.run()
    """))
    out = subprocess.run([MPIRUN, "-n", "2", sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "[rank 1] uncaught RuntimeError" in text and "bad model input on one rank" in text
