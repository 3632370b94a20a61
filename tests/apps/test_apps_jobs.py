"""The job protocol (launch, report, kill) through the job manager, several jobs at once and
their interference, rank-to-node mapping, the node model and run_app's options."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from apps import (AppConfigError, JobManager, LaunchSpec, MpiNode, MpiOptions, MpiShared, app, map_ranks, run_app)
from apps.testing import switch_machine
from models.network import Network, NetworkConfig, network_lookahead
from models.node_model import NodeModel, NodeModelError
from models.presets import get_machine
from pdes import Simulator

TORUS = get_machine("tiny-torus")


def build(machine=TORUS, model="packet", on_end=None):
    sim = Simulator(lookahead=network_lookahead(machine.topology), comm=None)
    net = Network(sim, machine.topology, NetworkConfig(model=model), mem_bw=machine.mem_bw_per_node,
                  node_cls=MpiNode, node_args=(MpiShared(NodeModel.from_machine(machine)),))
    mgr = sim.add_entity(JobManager, net.node_offset, on_end, True, name="job_manager")
    return sim, net, mgr


def ring_spec(mgr, job, nodes, **args):
    return LaunchSpec.build(job=job, app="ring", args={"iters": 3, "nbytes": 1_000_000, **args}, rank_nodes=nodes,
                            report_to=mgr.eid)


def test_jobs_sharing_a_link_slow_each_other_down_and_keep_their_traffic_apart():
    # On the 4x4x4 torus, 0 -> 2 and 1 -> 3 both cross the x link 1 -> 2.
    assert set(TORUS.topology.route(0, 2)) & set(TORUS.topology.route(1, 3))
    alone = {}
    for job, nodes in ((1, [0, 2]), (2, [1, 3])):
        sim, net, mgr = build()
        mgr.launch_at(0.0, ring_spec(mgr, job, nodes))
        sim.run()
        alone[job] = mgr.records[job].runtime
    ended = []
    sim, net, mgr = build(on_end=ended.append)
    mgr.launch_at(0.0, ring_spec(mgr, 1, [0, 2]))
    mgr.launch_at(0.0, ring_spec(mgr, 2, [1, 3]))
    sim.run()
    st = net.stats()
    for job in (1, 2):
        rec = mgr.records[job]
        assert rec.status == "ok" and rec.reports == rec.expected == 2
        assert 1.9 * alone[job] < rec.runtime < 2.1 * alone[job]  # the shared link is split in two
        assert st.job_bytes[job] == rec.bytes_sent == 2 * 3 * 1_000_000 + 2 * 3 * 2 * 64  # data + RTS/CTS
    assert [r.job for r in ended] == [1, 2] or [r.job for r in ended] == [2, 1]
    assert len(mgr.records[1].node_reports) == 2 and mgr.records[1].node_reports[0].ranks == 1


@app("t-chatty")
def _chatty(mpi, *, fail_at=None):
    for i in range(1000):
        if fail_at is not None and mpi.rank == 1 and i == fail_at:
            raise RuntimeError("rank 1 gives up")
        mpi.sendrecv((mpi.rank + 1) % mpi.size, 100_000, source=(mpi.rank - 1) % mpi.size)


def test_kill_ends_the_job_everywhere_and_later_messages_are_discarded():
    sim, net, mgr = build(model="ideal")
    nodes = [0, 1, 2, 3]
    mgr.launch_at(0.0, LaunchSpec.build(job=5, app="t-chatty", args={}, rank_nodes=nodes, report_to=mgr.eid))
    mgr.after(1e-4, lambda _: mgr.kill_job(5))
    st = sim.run()
    rec = mgr.records[5]
    assert rec.status == "killed" and rec.end == 1e-4 and rec.reports == 0
    assert st.blocked == []  # every rank process was ended
    assert sum(sim.entity("node", n).discarded.get(5, 0) for n in nodes) > 0  # messages in flight at the kill
    assert sim.now < 2e-4  # nothing kept running


def test_a_failing_rank_reports_at_once_and_the_manager_kills_the_rest():
    sim, net, mgr = build(model="ideal")
    nodes = [4, 5, 6, 7]
    mgr.launch_at(0.0, LaunchSpec.build(job=9, app="t-chatty", args={"fail_at": 3}, rank_nodes=nodes, report_to=mgr.eid))
    st = sim.run()
    rec = mgr.records[9]
    assert rec.status == "failed" and rec.failed_rank == 1 and rec.error == "RuntimeError: rank 1 gives up"
    assert rec.end == rec.fail_time and rec.reports == 1
    assert st.blocked == []
    assert sim.now < rec.fail_time + 1e-5


def test_a_kill_that_overtakes_the_launch_cancels_it():
    sim, net, mgr = build()
    spec = ring_spec(mgr, 4, [0, 1])
    node = sim.entity("node", 0)
    node.kill(4)
    node.launch(spec)
    assert 4 not in node._jobs


def test_a_job_level_app_is_launched_on_rank_0s_node_only():
    sim, net, mgr = build()
    spec = LaunchSpec.build(job=2, app="timekeeper", args={"runtime": 3.0}, rank_nodes=[9, 9, 10, 11], report_to=mgr.eid)
    assert spec.nodes == (9, 10, 11) and spec.launch_nodes() == (9,)
    assert dict(spec.node_ranks) == {9: (0, 1), 10: (2,), 11: (3,)}
    mgr.launch_at(1.0, spec)
    st = sim.run()
    rec = mgr.records[2]
    assert rec.status == "ok" and rec.start == 1.0 + sim.lookahead and rec.runtime == 3.0
    assert st.events == 4  # manager launch, node launch, timer, report


def test_launch_spec_and_options_are_validated():
    with pytest.raises(AppConfigError, match="eager_threshold: cannot parse"):
        MpiOptions(eager_threshold="big")
    with pytest.raises(AppConfigError, match="ctrl_bytes must be a whole number"):
        MpiOptions(ctrl_bytes=-1)
    assert MpiOptions(eager_threshold="1KiB").eager_threshold == 1024
    with pytest.raises(AppConfigError, match="at least one rank"):
        LaunchSpec.build(job=1, app="ring", args={}, rank_nodes=[], report_to=0)


def test_rank_to_node_mappings():
    nodes = [10, 11, 12]
    assert map_ranks(5, nodes, 2, "block") == (10, 10, 11, 11, 12)
    assert map_ranks(5, nodes, 2, "round_robin") == (10, 11, 12, 10, 11)
    assert map_ranks(4, nodes, 2, lambda r, n, k: (n - 1) - r // k) == (12, 12, 11, 11)
    assert map_ranks(3, nodes, 1, np.array([2, 0, 1])) == (12, 10, 11)
    with pytest.raises(AppConfigError, match="do not fit on 3 nodes with 2 ranks per node"):
        map_ranks(7, nodes, 2)
    with pytest.raises(AppConfigError, match="more than ranks_per_node=2"):
        map_ranks(3, nodes, 2, [0, 0, 0])
    with pytest.raises(AppConfigError, match="valid: 0..2"):
        map_ranks(2, nodes, 2, [0, 3])
    with pytest.raises(AppConfigError, match="unknown rank mapping 'snake'; valid: block, round_robin, topology"):
        map_ranks(2, nodes, 2, "snake")


def test_node_model_roofline():
    nm = NodeModel(cores=4, flops_per_node="100GF", mem_bw_per_node="20GB/s")
    assert nm.compute_time(flops=25e9) == pytest.approx(1.0)  # a core's share of the peak
    assert nm.compute_time(bytes=20e9) == pytest.approx(1.0)  # alone on the node
    assert nm.compute_time(bytes=20e9, ranks_on_node=4) == pytest.approx(4.0)  # bandwidth shared
    assert nm.compute_time(flops=25e9, bytes=5e9, ranks_on_node=2) == pytest.approx(1.0)  # compute bound
    assert nm.compute_time(flops=25e9, ranks_on_node=8) == pytest.approx(2.0)  # more ranks than cores
    assert NodeModel.from_machine(TORUS) == NodeModel(cores=4, flops_per_node=100e9, mem_bw_per_node=20e9)
    with pytest.raises(NodeModelError, match="cores must be an integer >= 1"):
        NodeModel(cores=0, flops_per_node=1, mem_bw_per_node=1)
    with pytest.raises(NodeModelError, match="flops_per_node must be a finite number > 0"):
        NodeModel(cores=1, flops_per_node=-5, mem_bw_per_node=1)
    with pytest.raises(NodeModelError, match="bytes must be a finite number >= 0"):
        nm.compute_time(bytes=math.nan)
    with pytest.raises(TypeError):
        NodeModel(4, 1, 1)  # keyword-only


@app("t-compute")
def _compute(mpi):
    t0 = mpi.now
    mpi.compute(flops=1e9, bytes=2e9)  # 0.04 s of flops (25 GF/s per core); memory bound
    mpi.compute(seconds=0.5)
    assert mpi.now - t0 == pytest.approx(0.1 * mpi.ranks_on_node + 0.5)  # 2e9 / (20e9 / k)


@pytest.mark.parametrize("rpn", [1, 2])
def test_compute_uses_the_node_model_of_the_machine(rpn):
    res = run_app(TORUS, "t-compute", 2, ranks_per_node=rpn, comm=None)
    assert res.runtime == pytest.approx(0.1 * rpn + 0.5)


def test_run_app_placements():
    m = switch_machine(32)
    a = run_app(m, "ring", 8, ranks_per_node=2, placement="random", seed=1, iters=1, comm=None)
    b = run_app(m, "ring", 8, ranks_per_node=2, placement="random", seed=1, iters=1, comm=None)
    c = run_app(m, "ring", 8, ranks_per_node=2, placement="random", seed=2, iters=1, comm=None)
    assert a.nodes == b.nodes != c.nodes and len(a.nodes) == 4 and list(a.nodes) == sorted(a.nodes)
    assert a.rank_nodes == tuple(n for n in a.nodes for _ in range(2))
    d = run_app(m, "ring", 4, placement=[7, 3], mapping="round_robin", iters=1, comm=None)
    assert d.nodes == (7, 3) and d.rank_nodes == (7, 3, 7, 3) and d.ranks_per_node == 4
    with pytest.raises(AppConfigError, match="needs 40 nodes; machine switch32 has 32"):
        run_app(m, "ring", 40, ranks_per_node=1, comm=None)
    with pytest.raises(AppConfigError, match="node 99 does not exist"):
        run_app(m, "ring", 2, placement=[0, 99], comm=None)
    with pytest.raises(AppConfigError, match="unknown placement 'spread'"):
        run_app(m, "ring", 2, placement="spread", comm=None)
    with pytest.raises(AppConfigError, match="unknown app 'rign'; valid: allreduce"):
        run_app(m, "rign", 2, comm=None)
    with pytest.raises(Exception, match="network model 'wormhole' is unknown; valid: packet, flow, ideal"):
        run_app(m, "ring", 2, network="wormhole", comm=None)


def test_app_result_as_json():
    res = run_app("tiny-dragonfly", "alltoall", 16, ranks_per_node=1, placement="random", iters=1, nbytes="1KiB", comm=None)
    d = json.loads(json.dumps(res.to_dict()))
    assert d["app"] == "alltoall" and d["args"] == {"iters": 1, "nbytes": "1KiB"} and d["nodes"] == 16
    assert d["runtime"] == res.runtime > 0 and d["events"] == res.events
    assert d["bytes_sent"] == 16 * 16 * 1024  # scattered: one message per pair, copies to self included
    assert d["network_bytes"] == 16 * 15 * 1024  # all but the copies to self
    assert len(d["hot_links"]) == 10 and d["hot_links"][0]["busy_s"] >= d["hot_links"][-1]["busy_s"]


def test_a_node_report_made_by_make_is_the_one_the_constructor_makes():
    import dataclasses
    import pickle

    from apps.node import NodeReport

    f = dict(job=3, node=5, status="failed", error="ValueError: x", start=0.5, end=2.0, ranks=2, bytes_sent=1e3,
             messages=7, failed_rank=1, fail_time=1.5, traceback="tb")
    a, b = NodeReport(**f), NodeReport._make(*f.values())
    assert a == b and hash(a) == hash(b) and repr(a) == repr(b) and dataclasses.asdict(b) == f
    assert pickle.loads(pickle.dumps(b)) == a
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.status = "ok"
