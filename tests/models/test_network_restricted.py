"""Jobs of a link-reserving allocator (jigsaw) route only over their reserved links."""

from __future__ import annotations

import numpy as np
import pytest

from models.network import Network, NetworkConfig, network_lookahead
from models.presets import get_machine
from models.topology import KIND_DOWN, KIND_UP, FatTree
from pdes import Simulator
from scheduler.allocators import make_allocator
from scheduler.job import Job
from tests_support import Probe


def _jigsaw_jobs(topo, sizes):
    alloc = make_allocator("jigsaw", n_nodes=topo.n_nodes, topology=topo, seed=1)
    state = alloc.new_state()
    jobs = []
    for i, n in enumerate(sizes, start=1):
        j = Job(job_id=i, job_size=n, nodes=n, submit_time=0.0, request_time=10.0, run_time=10.0)
        nodes = alloc.select(j, state)
        assert nodes is not None
        alloc.commit(j, nodes, state)
        jobs.append((j, np.asarray(nodes), state.allowed_links(i)))
    return jobs


@pytest.mark.parametrize("model", ["packet", "ideal"])
def test_restricted_jobs_use_only_their_links_and_never_share_one(model):
    topo = FatTree.from_radix(radix=8, levels=3)  # 128 nodes, 4 nodes per leaf
    jobs = _jigsaw_jobs(topo, [6, 10, 5, 12])
    used = []
    for j, nodes, mask in jobs:
        # Every node of the job sends to every other node of the job.
        msgs = {int(s): [(int(d), 20_000, j.job_id) for d in nodes if d != s] for s in nodes}
        sim = Simulator(lookahead=network_lookahead(topo))
        log, sent = [], []
        net = Network(sim, topo, NetworkConfig(model=model), node_cls=Probe, node_args=(log, sent))
        for n in nodes:
            sim.entity("node", int(n)).restrict_routes(j.job_id, np.flatnonzero(mask))
        for s, m in msgs.items():
            e = sim.entity("node", s)
            e.send(e.eid, "go", m, 0.0)
        sim.run()
        assert len(log) == len(nodes) * (len(nodes) - 1)
        carried = net.stats().link_bytes > 0
        assert not (carried & ~mask).any(), f"job {j.job_id} used links outside its reservation"
        switch = (topo.link_kind == KIND_UP) | (topo.link_kind == KIND_DOWN)
        used.append(carried & switch)
    for a in range(len(used)):
        for b in range(a + 1, len(used)):
            assert not (used[a] & used[b]).any(), "two jobs shared a switch link"
    # The routes the jobs used are not all D-mod-k routes: the restriction did something.
    assert any(u.any() for u in used)


def test_restriction_is_refused_on_a_torus():
    topo = get_machine("tiny-torus").topology
    sim = Simulator(lookahead=network_lookahead(topo))
    net = Network(sim, topo)
    with pytest.raises(TypeError, match="cannot restrict routes"):
        net.nodes[0].restrict_routes(1, [0, 1])


def test_an_experiment_with_jigsaw_runs_app_jobs_on_reserved_links():
    from simhpc.experiment import loads
    from simhpc.experiment.runner import run_experiment

    exp = loads("""
[machine]
preset = "tiny-fattree3"
[workload]
jobs = 10
inter_arrival = { dist = "exponential", mean = "5s" }
size = { dist = "power_of_two", low = 2, high = 8 }
run_time = "1min"
[[apps]]
name = "pairs"
args = { iters = 3, nbytes = "64KiB", compute_s = 0.5 }
request_time = "10min"
[scheduler]
allocator = "jigsaw"
ranks_per_node = 1
""")
    r = run_experiment(exp, comm=None, progress=False)
    j = r.jobs
    assert (j["status"] == "completed").all()
    # Alone on the ideal network with the same reserved routes, never slower than in the run.
    assert (j["run"] >= j["ideal_run"] * (1 - 1e-12)).all()
