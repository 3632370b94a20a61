"""The replay API: traces, job lists, machines and presets, and its results."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.allocators import ALLOCATORS, FirstFreeAllocator, register_allocator
from scheduler.errors import UserError
from scheduler.job import Job
from scheduler.replay_engine import Machine, replay, resolve_machine
from scheduler.swf import read_swf

SIX = Path(__file__).resolve().parents[1] / "data" / "backfill6.swf"


def test_replay_of_a_path():
    r = replay(SIX, order="fcfs", backfill="conservative")
    assert [j.start_time for j in r.jobs] == [0, 10, 20, 30, 30, 5]
    assert r.machine == Machine(n_nodes=8, cores_per_node=1)
    assert len(r.table) == 6 and r.metrics.jobs == 6
    assert r.swf_report.kept == 6
    s = r.summary()
    assert s["jobs"] == 6 and s["backfill"] == "conservative" and s["events"] == r.stats.events


def test_a_trace_without_a_machine_size_asks_for_the_replay_arguments(tmp_path):
    p = tmp_path / "nohdr.swf"
    p.write_text("1 0 -1 10 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1\n")
    with pytest.raises(UserError, match=r"nohdr\.swf: the header gives no machine size .*; give it with nodes=N or machine=PRESET$"):
        replay(p)
    assert replay(p, nodes=4).machine.n_nodes == 4


def test_replay_of_a_read_trace_and_of_a_job_list():
    tr = read_swf(SIX)
    a = replay(tr, backfill="easy")
    b = replay(tr, backfill="easy")
    assert a.table.equals(b.table)
    assert tr.jobs[0].start_time is None  # the trace's jobs are not consumed
    assert replay(tr, limit=2).metrics.jobs == 2
    with pytest.raises(UserError, match="read it again with the machine's size"):
        replay(tr, nodes=16)
    jobs = [Job(job_id=1, job_size=2, submit_time=0, request_time=5, run_time=5)]
    with pytest.raises(UserError, match="needs the machine size"):
        replay(jobs)
    assert replay(jobs, nodes=2).metrics.makespan == 5.0


def test_oversized_jobs_in_a_job_list():
    jobs = [Job(job_id=1, job_size=3, submit_time=0, request_time=5, run_time=5),
            Job(job_id=2, job_size=1, submit_time=0, request_time=5, run_time=5)]
    r = replay(jobs, nodes=2)
    assert r.summary()["rejected"] == 1 and r.metrics.jobs == 1
    with pytest.raises(UserError, match="job 1 needs 3 nodes"):
        replay(jobs, nodes=2, strict=True)


def test_machine_resolution_by_size():
    assert resolve_machine() is None
    assert resolve_machine(nodes=16, cores_per_node=4) == Machine(n_nodes=16, cores_per_node=4)
    with pytest.raises(UserError, match=r"the node count must be a whole number >= 1, got -1"):
        resolve_machine(nodes=-1)


class TopoProbe(FirstFreeAllocator):
    name = "test-topo-probe"
    seen: list = []

    def __init__(self, **kw):
        super().__init__(**kw)
        TopoProbe.seen.append((self.n_nodes, self.topology))


@pytest.fixture
def probe_allocator():
    register_allocator(TopoProbe)
    TopoProbe.seen.clear()
    yield
    del ALLOCATORS["test-topo-probe"]


def test_machine_preset_gives_size_cores_and_topology(probe_allocator):
    from models.presets import get_machine

    preset = get_machine("tiny-fattree3")  # 16 nodes, 4 cores per node
    m = resolve_machine(machine="tiny-fattree3")
    assert (m.n_nodes, m.cores_per_node, m.name) == (16, 4, "tiny-fattree3")
    assert m.topology.describe() == preset.topology.describe()
    r = replay(SIX, machine="tiny-fattree3", allocator="test-topo-probe")
    assert TopoProbe.seen == [(16, m.topology)]
    assert r.summary()["machine"] == "tiny-fattree3" and r.summary()["nodes"] == 16
    assert [j.nodes for j in r.jobs] == [2, 2, 2, 1, 1, 1]  # processes at 4 per node
    # A topology gives placement metrics by job-size bin (the --json "placement" object).
    bins = r.summary()["placement"]["bins"]
    assert sum(b["jobs"] for b in bins) == len(r.jobs)
    with pytest.raises(UserError, match="unknown machine 'big'"):
        replay(SIX, machine="big")
