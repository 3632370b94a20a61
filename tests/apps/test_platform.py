"""The one machine assembly (apps.platform) and the read-only views other layers use:
``Simulator.local_entity`` and the scheduler entity's progress."""

from __future__ import annotations

import math

import pytest

import apps.platform as platform_mod
import apps.run as run_mod
from apps import JobManager, LaunchSpec, MpiNode, MpiOptions, Platform, build_platform, map_ranks, run_app
from apps.errors import AppConfigError
from models.network import NetworkConfig, network_lookahead
from models.presets import get_machine
from pdes import Entity, Simulator
from scheduler.job import Job
from scheduler.lifecycle import SchedulerEntity, simulate


# ------------------------------------------------------------------------ the assembly
def test_entity_layout_network_nodes_then_the_manager_last():
    m = get_machine("tiny-fattree3")
    p = build_platform(m, "packet", seed=4, comm=None)
    assert isinstance(p, Platform) and p.machine is m and p.topology is m.topology
    sim = p.sim
    assert sim.lookahead == network_lookahead(m.topology) and sim.seed == 4 and sim.end_time == math.inf
    assert p.config == NetworkConfig(model="packet")
    assert all(isinstance(n, MpiNode) for n in p.net.nodes) and len(p.net.nodes) == m.n_nodes
    # The manager is the last entity: callers add theirs after it, and no id moves.
    assert isinstance(p.manager, JobManager)
    assert p.manager_eid == sim.eid("job_manager") == sim.n_entities - 1
    assert p.manager.node_offset == p.net.node_offset


def test_preset_names_and_network_configs_are_accepted_and_bad_networks_named():
    p = build_platform("tiny-torus", NetworkConfig(model="ideal"), seed=0, end_time=5.0, comm=None)
    assert p.machine.name == "tiny-torus" and p.config.model == "ideal" and p.sim.end_time == 5.0
    with pytest.raises(AppConfigError, match="network must be"):
        build_platform("tiny-torus", 3, comm=None)


def test_a_job_run_on_the_platform_is_run_app_event_for_event():
    args = {"iters": 3, "nbytes": 4096}
    ref = run_app("tiny-fattree3", "allreduce", 8, ranks_per_node=2, seed=7, comm=None, app_args=args)
    p = build_platform("tiny-fattree3", "packet", seed=7, comm=None)
    rank_nodes = map_ranks(8, tuple(range(4)), 2, "block")
    spec = LaunchSpec.build(job=0, app="allreduce", args=ref.args, rank_nodes=rank_nodes,
                            report_to=p.manager_eid, options=MpiOptions())
    assert p.launch(spec) is not None
    st = p.sim.run()
    rec = p.shared_record(0)
    assert rec.status == "ok"
    assert (rec.start, rec.end, rec.bytes_sent, rec.messages) == (ref.start, ref.end, ref.bytes_sent, ref.messages)
    assert st.events == ref.events
    states = p.job_states(0)
    assert sorted(s["node"] for s in states) == [0, 1, 2, 3]
    assert all(s["unfinished"] == [] for s in states)
    assert sum(s["bytes_sent"] for s in states) == rec.bytes_sent


def test_on_end_is_called_when_a_job_ends():
    ended = []
    p = build_platform("tiny-torus", "ideal", seed=0, comm=None, on_end=ended.append)
    spec = LaunchSpec.build(job=5, app="ring", args={"iters": 1, "nbytes": 8}, rank_nodes=(0, 1, 2),
                            report_to=p.manager_eid, options=MpiOptions())
    p.launch(spec)
    p.sim.run()
    assert [r.job for r in ended] == [5] and ended[0].status == "ok"


class _Calls:
    """Wraps build_platform and counts its calls."""

    def __init__(self):
        self.calls = 0
        self.real = platform_mod.build_platform

    def __call__(self, *a, **kw):
        self.calls += 1
        return self.real(*a, **kw)


def test_run_app_experiments_and_studies_all_build_through_build_platform(monkeypatch):
    from simhpc.experiment import loads
    from simhpc.experiment.runner import run_experiment
    from simhpc.studies import BackgroundApp, ForegroundJob, InterferenceStudy, run_study

    calls = _Calls()
    monkeypatch.setattr(platform_mod, "build_platform", calls)
    monkeypatch.setattr(run_mod, "build_platform", calls)
    run_app("tiny-torus", "ring", 4, ranks_per_node=1, comm=None, iters=1, nbytes=8)
    assert calls.calls == 1
    exp = loads("""
name = "p"
seed = 2
[machine]
preset = "tiny-torus"
[workload]
jobs = 3
inter_arrival = { dist = "exponential", mean = "10s" }
size = { dist = "uniform", low = 2, high = 4 }
run_time = { dist = "uniform", low = "10s", high = "20s" }
[[apps]]
name = "ring"
args = { iters = 1, nbytes = 8 }
request_time = "10min"
[scheduler]
ranks_per_node = 1
""")
    calls.calls = 0
    res = run_experiment(exp, comm=None, progress=False)
    # The experiment, then one ideal-network run (through run_app) per completed app job.
    assert calls.calls == 1 + res.n_jobs
    study = InterferenceStudy(name="t", machine="tiny-torus", ranks_per_node=1, allocator="random", k=(1,), seeds=1,
                              foreground=ForegroundJob(app="ring", ranks=4, args={"iters": 1, "nbytes": 8}),
                              background=(BackgroundApp(app="ring", ranks=4, args={"iters": 1, "nbytes": 8}),))
    calls.calls = 0
    out = run_study(study, comm=None)
    assert out.runs["status"][0] == "ok"
    # The run among the background, then the foreground alone and on the ideal network.
    assert calls.calls == 3


# -------------------------------------------------------------------------- the views
class _Plain(Entity):
    pass


def test_local_entity_returns_the_entity_or_none():
    sim = Simulator(comm=None)
    (a,) = sim.add_entities(_Plain, 1)
    assert sim.local_entity(a.eid) is a
    assert sim.local_entity(a.eid + 1) is None


def test_scheduler_progress_views():
    jobs = [Job(job_id=i, job_size=1, nodes=1, submit_time=float(i), run_time=2.0, request_time=3.0)
            for i in range(3)]
    res = simulate(jobs, n_nodes=2, backfill="easy")
    assert len(res.ran) == 3

    seen = []

    class Probe(Entity):
        def __init__(self, sched_eid):
            self.sched_eid = sched_eid
            for t in (0.5, 1.5, 100.0):
                self.after(t, self.look)

        def look(self, _=None):
            s = self.sim.local_entity(self.sched_eid)
            seen.append((s.unsubmitted, len(s.queue), len(s.running), s.finished))

    from scheduler.allocators import make_allocator
    from scheduler.backfill import make_backfill
    from scheduler.ordering import make_ordering

    sim = Simulator(comm=None)
    sim.add_entity(Probe, 1)
    sched = sim.add_entity(SchedulerEntity, name="scheduler", jobs=[j.fresh() for j in jobs],
                           allocator=make_allocator("firstfree", n_nodes=2), ordering=make_ordering("fcfs", n_nodes=2),
                           backfill=make_backfill("easy"))
    assert sched.unsubmitted == 3 and not sched.finished
    sim.run()
    assert sched.finished and sched.unsubmitted == 0
    assert seen == [(2, 0, 1, False), (1, 0, 2, False), (0, 0, 0, True)]
