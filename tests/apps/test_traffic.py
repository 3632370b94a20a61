"""The traffic app and offered-load sweeps (apps.skeletons.traffic, apps.traffic.sweep)."""

from __future__ import annotations

import math

import pytest

from apps import AppConfigError, AppError, app, run_app
from apps.traffic.sweep import check_loads, sweep, traffic_point

SHORT = dict(duration="80us", warmup="20us")


def test_ideal_network_accepts_every_offered_load():
    s = sweep("tiny-fattree3", "uniform", [0.2, 0.6, 1.0], network="ideal", duration="400us", warmup="20us")
    assert s.network == "ideal" and s.nodes == 16 and s.routing == "dmodk"
    for p in s.points:
        assert abs(p.offered - p.load) < 0.1 * p.load            # Poisson: close to what was asked
        # Nothing is lost or held back: only the messages in flight across the window's
        # edges (a latency's worth of traffic at each end) tell the two apart.
        assert abs(p.accepted - p.offered) < 0.02 * p.offered
    # No contention: the latency does not depend on the load.
    lat = [p.latency_mean for p in s.points]
    assert max(lat) - min(lat) < 0.02 * min(lat)


def test_packet_network_at_low_load_accepts_the_offered_load_at_zero_load_latency():
    ideal = sweep("tiny-torus", "uniform", [0.05], network="ideal", **SHORT).points[0]
    low = sweep("tiny-torus", "uniform", [0.05], **SHORT).points[0]
    # Same seed, same draws; the injectors start when the set-up is through, a little later
    # on the packet network, so the window holds about the same messages.
    assert abs(low.messages - ideal.messages) <= 3
    assert abs(low.accepted - low.offered) < 0.05 * low.offered
    assert ideal.latency_mean <= low.latency_mean < 1.1 * ideal.latency_mean
    assert low.latency_p99 >= low.latency_mean


def test_saturation_minimal_vs_valiant_under_group_adversarial_traffic():
    # tiny-dragonfly: 8 nodes per group share one global link to the next group, so minimal
    # routing accepts at most 1/8 of the injection bandwidth; Valiant spreads the load.
    mini = sweep("tiny-dragonfly", "group-adversarial", [0.4], routing="minimal", **SHORT).points[0]
    val = sweep("tiny-dragonfly", "group-adversarial", [0.4], routing="valiant", **SHORT).points[0]
    assert mini.accepted < 0.14 and mini.latency_mean > 5 * val.latency_mean
    assert val.accepted > 0.3


def test_same_seed_same_points_other_seed_other_draws():
    a = sweep("tiny-fattree3", "permutation", [0.3], seed=4, **SHORT).points[0]
    b = sweep("tiny-fattree3", "permutation", [0.3], seed=4, **SHORT).points[0]
    c = sweep("tiny-fattree3", "permutation", [0.3], seed=5, **SHORT).points[0]
    strip = lambda p: {k: v for k, v in p.to_dict().items() if k != "wall_s"}   # noqa: E731
    assert strip(a) == strip(b) and a.messages != c.messages


def test_transpose_leaves_the_diagonal_idle():
    p = sweep("tiny-fattree3", "transpose", [0.5], network="ideal", **SHORT).points[0]
    assert abs(p.offered - 0.5 * 12 / 16) < 0.06                 # 4 of 16 nodes send nothing


def test_bad_input_is_refused_before_running():
    with pytest.raises(AppConfigError, match="load must be a fraction of the injection bandwidth in \\(0, 1\\], got 1.5"):
        run_app("tiny-fattree3", "traffic", 32, ranks_per_node=2, load=1.5)
    with pytest.raises(AppConfigError, match="needs an even number of ranks >= 4"):
        run_app("tiny-fattree3", "traffic", 7, ranks_per_node=2)
    with pytest.raises(AppConfigError, match="warmup \\('1ms'\\) must be shorter than duration"):
        run_app("tiny-fattree3", "traffic", 32, ranks_per_node=2, warmup="1ms")
    with pytest.raises(AppConfigError, match="pattern must be one of uniform, permutation"):
        run_app("tiny-fattree3", "traffic", 32, ranks_per_node=2, pattern="nope")
    with pytest.raises(AppConfigError, match="'bitcomp' needs a power-of-two number of nodes, got 12"):
        run_app("tiny-fattree3", "traffic", 24, ranks_per_node=2, pattern="bitcomp")
    with pytest.raises(AppConfigError, match="'group-adversarial' needs a dragonfly; this machine is a fattree"):
        sweep("tiny-fattree3", "group-adversarial", [0.1])
    with pytest.raises(AppConfigError, match="routing 'ugal' is not one of the fattree routings of machine "
                                             "tiny-fattree3: dmodk"):
        sweep("tiny-fattree3", "uniform", [0.1], routing="ugal")
    for bad in ([], [0.0], [0.5, 1.2], ["x"], True):
        with pytest.raises(AppConfigError, match="loads"):
            check_loads(bad)
    assert check_loads(0.5) == (0.5,)


def test_ranks_must_pair_up_on_nodes():
    with pytest.raises(AppError, match="ranks 2i and 2i\\+1 on node i"):
        run_app("tiny-fattree3", "traffic", 32, ranks_per_node=2, mapping="round_robin", **SHORT)


def test_every_injector_starts_after_the_whole_set_up_even_past_saturation():
    # Past saturation (group-adversarial traffic, minimal routing, offered 1.0) injectors that
    # started as soon as they were through the set-up queued the late ranks' set-up messages
    # behind their traffic (6 us here; "warmup shorter than the set-up collectives" on the
    # 1,056-node dragonfly for any warmup). With one common start any warmup works.
    from models.network import NetworkConfig

    net = NetworkConfig(model="packet", buffers="credit")
    res = run_app("tiny-dragonfly", "traffic", 144, ranks_per_node=2, network=net, load=1.0,
                  pattern="group-adversarial", warmup="200ns", duration="30us")
    p = traffic_point(res)
    # One global link's worth of the group's injection (the bound is 0.125), minus start-up.
    assert 0.08 < p.accepted < 0.135 and p.offered > 0.9


def test_traffic_point_reads_the_ranks_results():
    res = run_app("tiny-fattree3", "traffic", 32, ranks_per_node=2, network="ideal", load=0.2, **SHORT)
    p = traffic_point(res)
    inj = res.rank_results[0::2]
    assert p.messages == sum(r["messages"] for r in inj) > 0
    assert all(r["inject_bw"] == 4e9 for r in inj)
    assert p.runtime == res.runtime and not math.isnan(p.latency_p99)

    @app("test-not-traffic")
    def not_traffic(mpi):
        pass

    with pytest.raises(AppConfigError, match="needs a run of the 'traffic' app"):
        traffic_point(run_app("tiny-fattree3", "test-not-traffic", 2))


def test_the_examples_of_docs_traffic_md_run():
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "traffic.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 3
    for code in blocks:
        exec(compile(code, "traffic.md", "exec"), {})
