"""Allocators from the command line and experiment files.

``simhpc replay TRACE --machine PRESET --allocator NAME`` selects any registered allocator
(with ``--allocator-option``), and ``--json`` ends with the mean APH / MIND of the
allocations by job-size bin; an experiment file selects one in ``[scheduler]`` and records
each job's placement metrics (span in the allocator's own ordering).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from models.presets import get_machine
from scheduler.allocators import ALLOCATORS
from scheduler.allocators import node_ordering, placement_metrics
from simhpc.cli import main
from simhpc.experiment import loads
from simhpc.experiment.runner import run_experiment

# A preset of the family an allocator needs (the others run on the torus).
PRESET = {"t123": "tiny-fattree3", "jigsaw": "tiny-fattree3", "treefit": "tiny-dragonfly"}


def write_swf(path, jobs, cores_per_node=4):
    """An SWF file of ``(submit, run, nodes)`` jobs; requests equal run times."""
    lines = [f"; MaxProcs: {64 * cores_per_node}"]
    for i, (submit, run, nodes) in enumerate(jobs, start=1):
        p = nodes * cores_per_node
        lines.append(f"{i} {submit} -1 {run} {p} -1 -1 {p} {run} -1 1 1 1 -1 -1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def busy_trace(path, n_jobs=40, max_nodes=16, seed=1):
    """Overlapping jobs of 1..max_nodes nodes (mostly small)."""
    rng = np.random.default_rng(seed)
    t, jobs = 0, []
    for _ in range(n_jobs):
        t += int(rng.integers(0, 30))
        jobs.append((t, int(rng.integers(50, 400)), int(min(max_nodes, 2 ** rng.uniform(0, 4.2)))))
    return write_swf(path, jobs)


def replay_json(capsys, *argv):
    code = main(["replay", *argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(ALLOCATORS))
def test_replay_selects_every_allocator_and_reports_placement_by_size(capsys, tmp_path, name):
    trace = busy_trace(tmp_path / "busy.swf")
    preset = PRESET.get(name, "tiny-torus")
    s = replay_json(capsys, trace, "--machine", preset, "--allocator", name)
    assert s["allocator"] == name and s["machine"] == preset
    assert s["jobs"] + s["rejected"] == 40 and s["jobs"] > 30
    bins = s["placement"]["bins"]
    assert sum(b["jobs"] for b in bins) == s["jobs"] == s["placement"]["all"]["jobs"]
    for b in bins:
        assert b["mean_aph"] is not None and b["mean_aph"] == b["mean_mind"]
        assert b["mean_diameter"] >= b["mean_aph"] - 1e-12
    one = next(b for b in bins if b["nodes"] == "1")
    assert one["mean_aph"] == 0.0 and one["mean_span"] == 1.0
    # jobs of 9-16 nodes span several leaves / routers: a positive mean distance
    assert next(b for b in bins if b["low"] > 8)["mean_aph"] > 0


def test_t123_from_the_cli_keeps_t1_jobs_within_a_leaf(capsys, tmp_path):
    trace = busy_trace(tmp_path / "busy.swf", n_jobs=60, max_nodes=6, seed=4)
    topo = get_machine("tiny-fattree3").topology  # 2 nodes per leaf: jobs of 1-2 nodes are T1
    assert topo.nodes_per_leaf == 2
    t1 = replay_json(capsys, trace, "--machine", "tiny-fattree3", "--allocator", "t123")["placement"]["bins"]
    two = next(b for b in t1 if b["nodes"] == "2")
    assert two["jobs"] > 5 and two["mean_aph"] == 0.0 and two["mean_diameter"] == 0.0
    # Without the rule, some 2-node jobs straddle two leaves on the same busy trace.
    ff = replay_json(capsys, trace, "--machine", "tiny-fattree3", "--allocator", "random")["placement"]["bins"]
    assert next(b for b in ff if b["nodes"] == "2")["mean_aph"] > 0


def test_allocator_options_reach_the_allocator(capsys, tmp_path):
    # One job at a time: fifo0 takes the first n positions of its ordering every time, so the
    # mean APH of each (single-size) bin is that of the ordering's first n nodes.
    sizes = [1, 2, 4, 8, 16]
    trace = write_swf(tmp_path / "seq.swf", [(1000 * i, 10, sizes[i % 5]) for i in range(15)])
    topo = get_machine("tiny-mesh").topology  # 4 x 4 mesh, 2 nodes per router
    got = {}
    for ordering in ("hilbert", "topological"):
        s = replay_json(capsys, trace, "--machine", "tiny-mesh", "--allocator", "fifo0",
                        "--allocator-option", f"ordering={ordering}")
        order = node_ordering(topo, ordering, n_nodes=topo.n_nodes)
        got[ordering] = {b["high"]: b["mean_aph"] for b in s["placement"]["bins"]}
        assert sorted(got[ordering]) == sizes
        for n in sizes:
            assert got[ordering][n] == pytest.approx(placement_metrics(topo, order[:n]).aph)
    assert got["hilbert"][8] < got["topological"][8]  # a 2 x 2 square beats a row of 4 routers


@pytest.mark.parametrize("argv,message", [
    (["--machine", "tiny-torus", "--allocator", "t123"], "allocator 't123' needs a fattree topology, got a torus"),
    (["--machine", "tiny-fattree3", "--allocator", "bgq-cfca"], "allocator 'bgq-cfca' needs a torus topology, got a fattree"),
    (["--machine", "tiny-torus", "--allocator", "closestfit", "--allocator-option", "gap=1"],
     "allocator 'closestfit' has no option(s) gap; valid options: ordering, box"),
    (["--machine", "tiny-fattree3", "--allocator", "fifo0", "--allocator-option", "ordering=hilbert"],
     "ordering 'hilbert' needs a torus"),
])
def test_allocator_errors_are_one_line(capsys, tmp_path, argv, message):
    trace = busy_trace(tmp_path / "busy.swf", n_jobs=3)
    code = main(["replay", trace, *argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("simhpc: error: ") and err.count("\n") == 1 and message in err


EXPERIMENT = """
name = "alloc-from-file"
seed = 5

[machine]
preset = "tiny-torus"

[workload]
jobs = 12
inter_arrival = {{ dist = "constant", value = "1h" }}
size = {{ dist = "power_of_two", low = 4, high = 64 }}
run_time = {{ dist = "uniform", low = "1min", high = "5min" }}
request_factor = 1.0

[[apps]]
name = "timekeeper"

[scheduler]
allocator = "{allocator}"
allocator_options = {options}
"""


def test_an_experiment_file_selects_the_allocator_and_records_placement_per_job():
    # Jobs one at a time on an empty 4x4x4 torus: fifo0 on the Hilbert ordering takes its
    # first n positions, so each job's span (in that ordering) is its size.
    exp = loads(EXPERIMENT.format(allocator="fifo0", options='{ ordering = "hilbert" }'))
    r = run_experiment(exp, comm=None, progress=False)
    j = r.jobs
    topo = get_machine("tiny-torus").topology
    order = node_ordering(topo, "hilbert", n_nodes=topo.n_nodes)
    assert (j["status"] == "completed").all() and len(np.unique(j["nodes"])) > 1
    assert np.array_equal(j["span"], j["nodes"].astype(float))
    assert np.array_equal(j["aph"], j["mind"])
    for i in range(r.n_jobs):
        n = int(j["nodes"][i])
        assert sorted(r.nodes_of(i).tolist()) == sorted(order[:n].tolist())
        assert j["aph"][i] == pytest.approx(placement_metrics(topo, order[:n]).aph)
