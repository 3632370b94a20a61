"""``simhpc traffic``: an offered-load sweep as a table, JSON and curves; clear errors."""

from __future__ import annotations

import json

import pytest

from apps.traffic.sweep import sweep
from models.network import NetworkConfig
from simhpc.cli import main

FAST = ["--machine", "tiny-fattree3", "--duration", "60us", "--warmup", "15us"]


def cli(capsys, *argv):
    code = main(["traffic", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_last_line_matches_the_python_api(capsys):
    code, out, err = cli(capsys, *FAST, "--pattern", "bitcomp", "--load", "0.2,0.6", "--seed", "2", "--json")
    assert code == 0 and err == ""
    d = json.loads(out.strip().splitlines()[-1])
    s = sweep("tiny-fattree3", "bitcomp", [0.2, 0.6], duration="60us", warmup="15us", seed=2, msg_bytes="4KiB",
              comm=None)
    assert (d["machine"], d["pattern"], d["routing"], d["network"], d["nodes"]) == ("tiny-fattree3", "bitcomp", "dmodk",
                                                                                   "packet", 16)
    assert [p["load"] for p in d["points"]] == [0.2, 0.6]
    for got, want in zip(d["points"], s.points):
        assert (got["offered"], got["accepted"], got["latency_mean"], got["latency_p99"], got["messages"]) == \
            (want.offered, want.accepted, want.latency_mean, want.latency_p99, want.messages)


def test_table_has_one_row_per_load(capsys):
    code, out, _ = cli(capsys, *FAST, "--load", "0.1,0.3", "--network", "ideal")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0].startswith("uniform traffic on tiny-fattree3 (16 nodes, dmodk routing, ideal network)")
    assert lines[1].split()[:5] == ["load", "offered", "accepted", "mean", "latency"]
    rows = lines[3:]
    assert [r.split()[0] for r in rows] == ["0.1", "0.3"]
    assert all(r.split()[4] == "us" for r in rows)           # latencies shown with their unit


def test_credit_buffers_are_named_and_match_the_python_api(capsys):
    code, out, _ = cli(capsys, *FAST, "--load", "0.9", "--buffers", "credit", "--buffer-size", "8KiB", "--json")
    assert code == 0
    d = json.loads(out.strip().splitlines()[-1])
    s = sweep("tiny-fattree3", "uniform", [0.9], duration="60us", warmup="15us", comm=None,
              network=NetworkConfig(buffers="credit", buffer_size="8KiB"))
    assert d["buffers"] == s.buffers == "credit"
    assert d["points"][0]["accepted"] == s.points[0].accepted
    code, out, _ = cli(capsys, *FAST, "--load", "0.9", "--buffers", "credit")
    assert "(16 nodes, dmodk routing, packet network, credit buffers)" in out.splitlines()[0]


def test_plot_draws_the_curves(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    f = tmp_path / "curves.png"
    code, out, _ = cli(capsys, *FAST, "--load", "0.2,0.4", "--plot", str(f))
    assert code == 0 and f.stat().st_size > 10_000 and f"curves written to {f}" in out


def test_list_names_every_pattern(capsys):
    code, out, _ = cli(capsys, "--list")
    assert code == 0 and [ln.split()[0] for ln in out.strip().splitlines()] == [
        "uniform", "permutation", "shift", "tornado", "transpose", "bitcomp", "neighbor", "hotspot", "group-adversarial"]


@pytest.mark.parametrize("argv, message", [
    (["--load", "0.5,1.5"], "--load: every load must be a fraction of the injection bandwidth in (0, 1], got 1.5"),
    (["--load", "half"], "--load: 'half' is not a number"),
    (["--pattern", "zig"], "unknown traffic pattern 'zig'; valid: uniform, permutation, shift"),
    (["--machine", "nope"], "unknown machine 'nope'; valid: cab"),
    (["--machine", "tiny-fattree3", "--routing", "ugal"],
     "routing 'ugal' is not one of the fattree routings of machine tiny-fattree3: dmodk, ecmp, adaptive"),
    (["--pattern", "group-adversarial"], "traffic pattern 'group-adversarial' needs a dragonfly; this machine is a torus"),
    (["--machine", "tiny-dragonfly", "--pattern", "transpose"], "'transpose' needs a square number of nodes (m x m), got 72"),
    (["--warmup", "1ms"], "--warmup (1ms) must be >= 0 and shorter than --duration (100us)"),
    (["--network", "wire"], "network model 'wire' is unknown"),
    (["--buffers", "deep"], "buffers 'deep' is unknown; valid: infinite, credit"),
    (["--buffers", "credit", "--buffer-size", "1KiB"], "buffer_size must be a whole number of bytes >= chunk_size"),
    (["--buffer-size", "64KiB"], "buffer_size is an option of buffers='credit' only"),
    (["--machine", "tiny-dragonfly", "--routing", "valiant", "--buffers", "credit", "--vcs", "2"],
     "vcs = 2 is too few virtual channels for deadlock freedom"),
    (["--routing", "adaptive"], "torus routing 'adaptive' chooses a port at every router from its credits: it needs "
                                "model='packet' with buffers='credit'"),
    (["--routing", "ugal"], "routing 'ugal' is not one of the torus routings of machine tiny-torus: dor, adaptive"),
])
def test_bad_input_is_one_line_and_exit_status_2(capsys, argv, message):
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("simhpc: error: ") and message in err and err.count("\n") == 1
