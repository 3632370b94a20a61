"""Experiments as data: TOML <-> dataclasses, and every error path of config parsing."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from models.network import NetworkConfig
from simhpc.experiment import (
    AppChoice,
    ConfigError,
    DistSpec,
    Experiment,
    ForegroundSpec,
    MachineSpec,
    OutputSpec,
    SchedulerSpec,
    WorkloadSpec,
    default_experiment_text,
    dumps,
    load,
    loads,
)

ROOT = Path(__file__).resolve().parents[2]

FULL = """
name = "full"
seed = 7
end_time = "3d"

[machine]
preset = "tiny-fattree3"
cores_per_node = 2

[network]
model = "ideal"
chunk_size = "2KiB"
send_overhead = "1us"
recv_overhead = "700ns"
intra_node_bw = "20GB/s"

[workload]
kind = "synthetic"
jobs = 25
users = 3
inter_arrival = { dist = "weibull", shape = 0.8, scale = "5min" }
size = { dist = "choice", values = [1, 2, 4, 8], weights = [4, 3, 2, 1] }
run_time = { dist = "loguniform", low = "1min", high = "2h" }
request_factor = 1.5

[[apps]]
name = "timekeeper"
weight = 2.0

[[apps]]
name = "stencil2d"
weight = 1.0
args = { iters = 3, face_bytes = "8KiB" }
request_time = "20min"

[[foreground]]
app = "allreduce"
ranks = 4
args = { iters = 2, nbytes = 1024 }
request_time = "10min"
count = 2
at = ["1h", "2h"]

[scheduler]
order = "sjf"
backfill = "conservative"
allocator = "firstfit"
allocator_options = { ordering = "hilbert", gap = 1 }
kill_overrun = false
ranks_per_node = 2
mapping = "round_robin"
ideal_baseline = false
eager_threshold = "16KiB"
algorithms = { allreduce = "recursive_doubling" }

[output]
path = "full.h5"
"""


def test_default_experiment_round_trips_and_matches_the_example_file():
    exp = loads(default_experiment_text())
    assert loads(dumps(exp)) == exp
    assert (ROOT / "examples" / "default.toml").read_text() == default_experiment_text()
    m = exp.machine.build()
    assert (m.n_nodes, m.cores_per_node) == (64, 16)
    # 8 leaves of 8 nodes with 4 uplinks each: the 2:1 taper that makes placement matter.
    assert m.topology.n_pods == 8 and exp.scheduler.alone_baseline and exp.workload.resolution == 1e-6


def test_full_file_round_trips_to_equal_dataclasses():
    exp = loads(FULL)
    again = loads(dumps(exp))
    assert again == exp
    assert exp.end_time == 3 * 86400.0
    assert exp.network.send_overhead == 1e-6 and exp.network.chunk_size == 2048
    assert exp.workload.inter_arrival.params == {"shape": 0.8, "scale": 300.0}
    assert exp.workload.request_factor.dist == "constant"
    assert exp.apps[1].request_time == 1200.0
    assert exp.foreground[0].at == (3600.0, 7200.0)
    assert exp.scheduler.eager_threshold == 16384
    assert dict(exp.scheduler.allocator_options) == {"ordering": "hilbert", "gap": 1}


def test_the_same_experiment_built_in_python():
    exp = Experiment(
        name="full", seed=7, end_time="3d",
        machine=MachineSpec(preset="tiny-fattree3", cores_per_node=2),
        network=NetworkConfig(model="ideal", chunk_size="2KiB", send_overhead="1us", recv_overhead="700ns", intra_node_bw="20GB/s"),
        workload=WorkloadSpec(
            jobs=25, users=3,
            inter_arrival={"dist": "weibull", "shape": 0.8, "scale": "5min"},
            size={"dist": "choice", "values": [1, 2, 4, 8], "weights": [4, 3, 2, 1]},
            run_time={"dist": "loguniform", "low": "1min", "high": "2h"},
            request_factor=1.5,
        ),
        apps=(AppChoice(name="timekeeper", weight=2.0),
              AppChoice(name="stencil2d", args={"iters": 3, "face_bytes": "8KiB"}, request_time="20min")),
        foreground=(ForegroundSpec(app="allreduce", ranks=4, args={"iters": 2, "nbytes": 1024}, request_time="10min",
                                   count=2, at=("1h", "2h")),),
        scheduler=SchedulerSpec(order="sjf", backfill="conservative", allocator="firstfit",
                                allocator_options={"ordering": "hilbert", "gap": 1}, kill_overrun=False, ranks_per_node=2,
                                mapping="round_robin", ideal_baseline=False, eager_threshold="16KiB",
                                algorithms={"allreduce": "recursive_doubling"}),
        output=OutputSpec(path="full.h5"),
    )
    assert exp == loads(FULL)


def test_overrides_with_set():
    exp = loads(FULL, overrides=["scheduler.allocator=random", "workload.jobs=3", "apps.1.weight=5", "seed=9",
                                 "network.model=\"packet\"", "machine.preset=tiny-torus"])
    assert exp.scheduler.allocator == "random" and exp.workload.jobs == 3 and exp.apps[1].weight == 5.0
    assert exp.seed == 9 and exp.network.model == "packet" and exp.machine.preset == "tiny-torus"


def test_load_from_file_names_the_file(tmp_path):
    p = tmp_path / "exp.toml"
    p.write_text(FULL.replace('order = "sjf"', 'order = "fastest"'))
    with pytest.raises(ConfigError, match=r"exp\.toml: scheduler\.order: unknown value 'fastest'; valid: .*fcfs.*sjf"):
        load(p)
    with pytest.raises(ConfigError, match="does not exist"):
        load(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="is a directory"):
        load(tmp_path)


BAD = [
    ('bogus = 1', "top level: unknown key(s) 'bogus'; valid: name, seed"),
    ('[machine]\npreset = "tiny-fattree3"\ncolour = "red"', "machine: unknown key(s) 'colour'; valid: preset"),
    ('', "machine: missing"),
    ('[machine]\npreset = "nonesuch"', "machine.preset: unknown value 'nonesuch'; valid: cab"),
    ('[machine]\npreset = "cab"\ntopology = { family = "torus", dims = [4] }', "either preset"),
    ('[machine]\ntopology = { family = "torus", dims = [4, 0] }\nflops_per_node = "1GF"\nmem_bw_per_node = "1GB/s"', "machine:"),
    ('[machine]\ntopology = { family = "hypercube" }\nflops_per_node = "1GF"\nmem_bw_per_node = "1GB/s"', "machine.topology.family: unknown value 'hypercube'; valid: dragonfly, fattree, torus"),
    ('[machine]\ntopology = { family = "torus", dims = [4] }', "machine.flops_per_node: required"),
    ('[machine]\ntopology = { family = "torus", dims = [4], colour = 1 }\nflops_per_node = "1GF"\nmem_bw_per_node = "1GB/s"',
     "machine.topology: unknown key(s) 'colour' for a torus; valid: family, dims, nodes_per_router"),
    ('[machine]\ntopology = { family = "dragonfly", a = 4, p = 2 }\nflops_per_node = "1GF"\nmem_bw_per_node = "1GB/s"',
     "machine.topology: a dragonfly needs 'h'; valid: family, a, p, h"),
    ('[network]\nmodel = "flow"\nchunk_size = 1024', "chunk_size is an option of the packet model only"),
    ('[network]\nmodel = "flow"\nflow_segment = 0', "flow_segment must be a whole number of bytes >= 1, got 0"),
    ('[network]\nflow_segment = "1MiB"', "flow_segment is an option of the flow model only"),
    ('[network]\nmodel = "flow"\nflow_quantum = "-1us"', "flow_quantum must be > 0 seconds"),
    ('[network]\nflow_quantum = "1us"', "flow_quantum is an option of the flow model only"),
    ('[metrics]\ntau = 0', "metrics: tau .* must be a finite number in"),
    ('[metrics]\nwindow = "5:2"', "metrics: window .* must have 0 <= start < end"),
    ('[metrics]\nskip_first = -1', "metrics: skip_first .* must be an integer >= 0"),
    ('[metrics]\nperiod = 3', "metrics"),
    ('[workload]\nload_factor = 0', "workload.load_factor .* must be a finite number in"),
    ('[network]\nchunk_size = 0', "chunk_size"),
    ('[network]\nsend_overhead = "quick"', "send_overhead: cannot parse 'quick'"),
    ('[network]\nlatency = "1us"', "network: unknown key(s) 'latency'; valid: model, chunk_size"),
    ('[workload]\nkind = "csv"', "workload.kind: unknown value 'csv'; valid: swf, synthetic"),
    ('[workload]\nkind = "swf"', "workload.trace: a swf workload needs trace"),
    ('[workload]\njobs = 0', "workload.jobs: must be an integer >= 1"),
    ('[workload]\ninter_arrival = { dist = "gamma", k = 2 }', "workload.inter_arrival.dist: unknown value 'gamma'; valid: choice, constant"),
    ('[workload]\nrun_time = { dist = "lognormal", median = "1h" }', "dist 'lognormal' needs 'sigma'"),
    ('[workload]\nrun_time = { dist = "exponential", mean = "1 fortnight" }', "workload.run_time.mean: unknown time unit"),
    ('[workload]\nsize = { dist = "uniform", low = 1, high = 4, step = 2 }', "unknown key(s) step for dist 'uniform'; valid: low, high"),
    ('[workload]\nsize = { dist = "power_of_two", low = 1, high = 1000 }', "workload.size: PowerOfTwo: high must be a power of two"),
    ('[workload]\nrun_time = { dist = "uniform", low = "5min", high = "1min" }', r"workload.run_time: Uniform: high must be a finite number in \[300, inf\)"),
    ('[workload]\nkind = "swf"\ntrace = "t.swf"\njobs = 20', 'workload.jobs: only valid with kind = "synthetic" .*give limit.*valid for kind = "swf": kind, trace, limit'),
    ('[workload]\nlimit = 20', 'workload.limit: only valid with kind = "swf"; valid for kind = "synthetic": kind, jobs'),
    ('[workload]\ntrace = "t.swf"', 'workload.trace: only valid with kind = "swf"'),
    ('[[apps]]\nname = "hpl"', r"apps\.0\.name: .*'hpl'"),
    ('[[apps]]\nname = "allreduce"\nargs = { loops = 3 }', r"apps\.0\.args: app 'allreduce' has no parameter 'loops'"),
    ('[[apps]]\nname = "allreduce"\nargs = { iters = -3 }', r"apps\.0\.args\.iters must be an integer >= 0, got -3 \(app 'allreduce'\)"),
    ('[[apps]]\nname = "ring"\n[[apps]]\nname = "stencil3d"\nargs = { grid = "4x4xq" }',
     r"apps\.1\.args\.grid must look like '4x4x2' or be a list of integers, got '4x4xq' \(app 'stencil3d'\)"),
    ('[[apps]]\nname = "allreduce"\nweight = -1', r"apps\.0\.weight: must be a finite number in \[0, inf\), got -1"),
    ('apps = []', "apps: give at least one app"),
    ('[[foreground]]\napp = "stencil3d"\nranks = 0', r"foreground\.0\.ranks: must be an integer >= 1"),
    ('[[foreground]]\napp = "pairs"\nranks = 8\nargs = { mode = "shuffle" }',
     r"foreground\.0\.args\.mode must be one of random, fixed, got 'shuffle' \(app 'pairs'\)"),
    ('[[foreground]]\napp = "stencil2d"\nranks = 8\nargs = { grid = [4, 4] }',
     r"foreground\.0\.args: app 'stencil2d' with 8 ranks: grid 4x4 has 16 cells but the job has 8 ranks"),
    ('[[foreground]]\napp = "hpl"\nranks = 8', r"foreground\.0\.app: unknown app 'hpl'; valid: "),
    ('[[foreground]]\napp = "allreduce"\nranks = 4\nat = "1h"\nafter_job = 3', "give at or after_job, not both"),
    ('[scheduler]\nallocator = "best"', "scheduler.allocator: unknown value 'best'; valid: "),
    ('[scheduler]\nbackfill = "aggressive"', "scheduler.backfill: unknown value 'aggressive'; valid: conservative, easy, easy-sjbf, firstfit, none"),
    ('[scheduler]\nestimate = "oracle"', "scheduler.estimate: unknown value 'oracle'; valid: exact, fmodel, recent, user"),
    ('[scheduler]\nestimate = "fmodel"\nestimate_options = { f = -1 }',
     r"scheduler.estimate_options: estimate model 'fmodel': f \(the badness factor\) must be a finite number in \[0, inf\), got -1"),
    ('[scheduler]\nmapping = "snake"', "scheduler.mapping: unknown value 'snake'; valid: block, round_robin"),
    ('[scheduler]\nkill_overrun = "yes"', "scheduler.kill_overrun: must be true or false"),
    ('[scheduler]\nalgorithms = { allreduce = "magic" }', "scheduler.algorithms:"),
    ('[scheduler]\neager_threshold = -1', r"scheduler\.eager_threshold must be a whole number of bytes >= 0, got -1"),
    ('[scheduler]\neager_threshold = "abc"', r"scheduler\.eager_threshold: cannot parse 'abc'"),
    ('end_time = "soon"', "end_time: cannot parse 'soon'"),
    ('seed = 1.5', "seed: must be an integer"),
    ('name = ', "not valid TOML"),
]


@pytest.mark.parametrize("text,message", BAD, ids=[b[1][:40] for b in BAD])
def test_every_config_error_names_the_key_and_the_valid_choices(text, message):
    base = '[machine]\npreset = "tiny-fattree3"\n' if "[machine]" not in text and text != "" else ""
    if text.startswith(("name", "seed", "end_time", "apps", "bogus")):
        full = text + "\n" + base
    else:
        full = base + text
    with pytest.raises(ConfigError, match="t.toml: .*" + message.replace("(s)", r"\(s\)")):
        loads(full, source="t.toml")


def test_nothing_in_a_config_is_evaluated_as_code():
    # A Python expression is just a string: it is rejected as a value, never run.
    with pytest.raises(ConfigError, match=r"workload\.jobs: must be an integer"):
        loads('[machine]\npreset = "tiny-fattree3"\n[workload]\njobs = "__import__(\'os\').getpid()"')
    with pytest.raises(ConfigError, match="end_time: cannot parse"):
        loads('end_time = "2**10"\n[machine]\npreset = "tiny-fattree3"')


def test_set_errors():
    with pytest.raises(ConfigError, match="--set 'workload': write KEY=VALUE"):
        loads(FULL, overrides=["workload"])
    with pytest.raises(ConfigError, match="--set colour: unknown key 'colour'"):
        loads(FULL, overrides=["colour=red"])
    with pytest.raises(ConfigError, match="has 2 entries"):
        loads(FULL, overrides=["apps.5.weight=1"])
    with pytest.raises(ConfigError, match="has 2 entries; use an index 0..1"):
        loads(FULL, overrides=["apps.x=1"])
    # A file without [[apps]] has no entries to index: the message says to set the whole array.
    with pytest.raises(ConfigError, match=r"apps has no entries to index .*--set 'apps=\["):
        loads('[machine]\npreset = "tiny-fattree3"', overrides=["apps.0.name=pairs"])


def test_distributions_build_the_workload_objects():
    d = DistSpec.parse("x", {"dist": "power_of_two", "low": 2, "high": 16}, time=False)
    assert d.build().high == 16
    t = DistSpec.parse("x", "90s", time=True)
    assert t.dist == "constant" and t.params == {"value": 90.0}
    assert math.isinf(loads('[machine]\npreset = "tiny-fattree3"').end_time)


def test_each_workload_kind_takes_its_own_defaults():
    w = WorkloadSpec()
    assert (w.jobs, w.users, w.size.dist, w.size_scale, w.limit) == (200, 16, "power_of_two", None, None)
    t = WorkloadSpec(kind="swf", trace="t.swf")
    assert (t.jobs, t.size, t.size_scale, t.time_scale, t.skip_malformed) == (None, None, 1.0, 1.0, False)
    assert WorkloadSpec(jobs=200) == w and WorkloadSpec(kind="swf", trace="t.swf", size_scale=1.0) == t
    assert t.to_dict() == {"kind": "swf", "trace": "t.swf", "size_scale": 1.0, "time_scale": 1.0,
                           "skip_malformed": False}


def test_comm_sensitive_reaches_the_jobs_and_round_trips():
    from simhpc.experiment import dumps
    from simhpc.experiment.runner import build_workload

    exp = loads("""
seed = 2
[machine]
preset = "mira-midplane"
[workload]
jobs = 20
size = 64
[[apps]]
name = "timekeeper"
comm_sensitive = false
[[apps]]
name = "alltoall"
comm_sensitive = true
args = { iters = 1 }
[[foreground]]
app = "ring"
ranks = 32
comm_sensitive = true
[scheduler]
allocator = "bgq-cfca"
""")
    assert loads(dumps(exp)) == exp
    jobs = build_workload(exp, 16, 512)[0]
    flags = {j.app_name: j.sched_args.get("comm_sensitive") for j in jobs}
    assert flags == {"timekeeper": False, "alltoall": True, "ring": True}
    with pytest.raises(ConfigError, match=r"apps\.0\.comm_sensitive: must be true or false"):
        loads('[machine]\npreset = "tiny-torus"\n[[apps]]\nname = "alltoall"\ncomm_sensitive = "yes"\n')


@pytest.mark.parametrize("text,message", [
    ('size = { dist = "uniform", low = 0, high = 8 }', "workload.size: Uniform can draw 0, out of range: job sizes"),
    ('size = { dist = "exponential", mean = 8 }', "workload.size: Exponential can draw values near 0"),
    ('run_time = 0', "workload.run_time: Constant can draw 0, out of range: run times are seconds > 0"),
    ('run_time = { dist = "uniform", low = 0, high = "1h" }', "workload.run_time: Uniform can draw 0"),
    ('request_factor = 0', "workload.request_factor: Constant can draw 0, out of range"),
    ('request_factor = { dist = "choice", values = [-1, 2] }', "workload.request_factor: Choice can draw -1"),
])
def test_a_synthetic_distribution_that_can_draw_out_of_range_is_refused_when_read(text, message):
    with pytest.raises(ConfigError, match="t.toml: " + message):
        loads('[machine]\npreset = "tiny-torus"\n[workload]\n' + text + "\n", source="t.toml")


def test_a_request_factor_below_one_is_accepted():
    exp = loads('[machine]\npreset = "tiny-torus"\n[workload]\njobs = 20\nrequest_factor = 0.5\n')
    assert exp.workload.request_factor.build().value == 0.5


def test_the_workload_report_counts_the_jobs_a_rule_changed(tmp_path):
    from simhpc.experiment.runner import build_workload

    exp = loads('[machine]\npreset = "tiny-torus"\n[workload]\njobs = 300\n'
                'run_time = { dist = "choice", values = [0.2, 60] }\n')
    jobs, _, report = build_workload(exp, 1, 16)
    raised = report["adjusted"]["run_time_raised"]
    assert 0 < raised < 300 and raised == sum(j.run_time == 1.0 for j in jobs)
    # A trace job that size_scale rounds to 0 processes runs on 1, and is counted.
    (tmp_path / "t.swf").write_text("; MaxProcs: 64\n"
                                    "1 0 -1 100 1 -1 -1 1 200 -1 1 1 1 -1 -1 -1 -1 -1\n"
                                    "2 5 -1 100 8 -1 -1 8 200 -1 1 1 1 -1 -1 -1 -1 -1\n")
    exp = loads('[machine]\npreset = "tiny-torus"\n[workload]\nkind = "swf"\ntrace = "t.swf"\nsize_scale = 0.25\n',
                base_dir=str(tmp_path))
    jobs, _, report = build_workload(exp, 1, 16)
    assert [j.job_size for j in jobs] == [1, 2] and report["adjusted"] == {"size_raised": 1}


def test_app_arguments_built_in_python_are_checked_and_named_by_app():
    # Without a file, an entry is named by its app; the value check is the same.
    with pytest.raises(ConfigError, match=r"^apps\[allreduce\]\.args\.nbytes: cannot parse 'lots'"):
        AppChoice(name="allreduce", args={"nbytes": "lots"})
    with pytest.raises(ConfigError, match=r"^foreground\.args\.iters must be an integer >= 0, got -1"):
        ForegroundSpec(app="ring", ranks=4, args={"iters": -1})
    assert AppChoice(name="allreduce", args={"iters": 3}) == loads(
        '[machine]\npreset = "tiny-torus"\n[[apps]]\nname = "allreduce"\nargs = { iters = 3 }\n').apps[0]
