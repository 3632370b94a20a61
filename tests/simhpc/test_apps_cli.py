"""``simhpc app``: runtime, bytes and hot links as text or JSON; clear errors."""

from __future__ import annotations

import json

import pytest

from apps import app, run_app
from simhpc.cli import main


def cli(capsys, *argv):
    code = main(["app", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_matches_the_python_api(capsys):
    code, out, err = cli(capsys, "ring", "--machine", "tiny-torus", "--ranks", "16", "--ranks-per-node", "1",
                         "--placement", "random", "--seed", "3", "--arg", "nbytes=64KiB", "--arg", "iters=2", "--json")
    assert code == 0 and err == ""
    d = json.loads(out.strip().splitlines()[-1])
    res = run_app("tiny-torus", "ring", 16, ranks_per_node=1, placement="random", seed=3, nbytes="64KiB", iters=2, comm=None)
    assert d["runtime"] == res.runtime and d["bytes_sent"] == res.bytes_sent == 2 * 16 * 65536
    assert d["hot_links"] == res.hot_links and d["hot_links"][0]["kind"] == "local"


def test_text_output_names_runtime_bytes_and_hot_links(capsys):
    code, out, _ = cli(capsys, "alltoall", "--machine", "tiny-fattree", "--ranks", "8", "--ranks-per-node", "1",
                       "--network", "ideal", "--algorithm", "alltoall=pairwise", "--arg", "iters=1", "--top", "3")
    assert code == 0
    assert "predicted runtime" in out and "bytes sent           224 KiB in 56 messages" in out
    assert "hot links (network links by busy time):" in out
    table = out.split("hot links (network links by busy time):")[1].strip().splitlines()
    assert table[0].split()[:4] == ["link", "from", "to", "kind"] and len(table) == 2 + 3 + 1
    assert table[-1].startswith("ideal network: no contention")


def test_predict_ranks_prints_the_parallel_prediction(capsys):
    code, out, _ = cli(capsys, "stencil3d", "--machine", "tiny-dragonfly", "--ranks", "16", "--ranks-per-node", "1",
                       "--placement", "random", "--arg", "iters=1", "--predict-ranks", "1,2,4")
    assert code == 0
    table = out.split("parallel prediction (the same windows and events under mpirun -n P):")[1].strip().splitlines()
    assert table[0].split()[:2] == ["ranks", "windows"] and [r.split()[0] for r in table[2:]] == ["1", "2", "4"]
    assert table[2].split()[-1] == "1.00"  # one rank: no speedup


def test_explicit_placement_and_listing(capsys):
    code, out, _ = cli(capsys, "even-odd", "--machine", "tiny-mesh", "--ranks", "4", "--ranks-per-node", "1",
                       "--placement", "0,31,5,9", "--json")
    assert code == 0 and json.loads(out)["nodes"] == 4
    code, out, _ = cli(capsys, "--list")
    assert code == 0 and "stencil3d(grid=None, face_bytes=8192" in out and "timekeeper(runtime)" in out
    code, out, _ = cli(capsys, "--list", "--json")
    assert {a["name"] for a in json.loads(out)["apps"]} >= {"ring", "unstr-mesh"}


@pytest.mark.parametrize("argv,msg", [
    (["ring", "--ranks", "4", "--arg", "size=5"], "app 'ring' has no parameter 'size'; parameters: ring(iters=10, nbytes=65536, compute_s=0.0)"),
    (["ring", "--ranks", "4", "--arg", "nbytes"], "app argument 'nbytes': write KEY=VALUE"),
    (["timekeeper", "--ranks", "4"], "app 'timekeeper' needs argument 'runtime'; parameters: timekeeper(runtime)"),
    (["rang", "--ranks", "4"], "unknown app 'rang'; valid: allreduce"),
    (["ring"], "--ranks is required"),
    (["ring", "--ranks", "4", "--machine", "nope"], "unknown machine 'nope'"),
    (["ring", "--ranks", "4", "--placement", "1,x"], "--placement must be contiguous, random or a comma-separated list"),
    (["ring", "--ranks", "4", "--algorithm", "allreduce=fast"], "allreduce has no algorithm 'fast'"),
    (["ring", "--ranks", "4", "--network", "wormhole"], "network model 'wormhole' is unknown; valid: packet, flow, ideal"),
    (["ring", "--ranks", "4", "--network", "flow", "--chunk-size", "1KiB"], "chunk_size is an option of the packet model only"),
    (["ring", "--ranks", "4", "--eager", "-1"], "--eager must be a whole number of bytes >= 0, got '-1'"),
    (["ring", "--ranks", "4", "--eager", "abc"], "--eager: cannot parse 'abc'"),
    (["ring", "--ranks", "4", "--predict-ranks", "2,0"], "--predict-ranks takes rank counts >= 1"),
    (["ring", "--ranks", "4", "--predict-ranks", "four"], "--predict-ranks takes rank counts >= 1"),
])
def test_user_mistakes_are_one_line_errors_with_status_2(capsys, argv, msg):
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("simhpc: error: ") and msg in err and "Traceback" not in err


@app("t-cli-deadlock")
def _cli_deadlock(mpi):
    mpi.recv(0)


def test_app_failures_are_reported_with_status_1(capsys):
    code, out, err = cli(capsys, "t-cli-deadlock", "--machine", "tiny-torus", "--ranks", "2")
    assert code == 1 and out == ""
    assert "simhpc: error: deadlock in job 0 (app 't-cli-deadlock'): 2 of 2 ranks blocked forever" in err
    assert "rank 1 on node 0: recv(source=0, tag=ANY_TAG, comm=world)" in err
    # The report names the app's own line each rank blocked at, past the MPI layer's frames.
    line = _cli_deadlock.__code__.co_firstlineno + 2  # the line after @app and def
    assert f"recv(source=0, tag=ANY_TAG, comm=world) at _cli_deadlock (test_apps_cli.py:{line})" in err


def test_app_arguments_as_trailing_key_values_equal_arg_options(capsys):
    base = ["--machine", "tiny-torus", "--ranks", "8", "--ranks-per-node", "1", "--json"]
    _, a, _ = cli(capsys, "ring", *base, "--arg", "nbytes=16KiB", "--arg", "iters=3")
    code, b, err = cli(capsys, "ring", *base, "nbytes=16KiB", "iters=3")
    _, c, _ = cli(capsys, "ring", "nbytes=16KiB", *base, "iters=3")
    assert code == 0 and err == ""
    ja, jb, jc = (json.loads(x.strip().splitlines()[-1]) for x in (a, b, c))
    assert ja["args"] == jb["args"] == jc["args"] == {"nbytes": "16KiB", "iters": 3}
    assert ja["runtime"] == jb["runtime"] == jc["runtime"] > 0
    # Anything else left over is still an unrecognized argument.
    with pytest.raises(SystemExit) as exc:
        main(["app", "ring", *base, "--bogus"])
    assert exc.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_flow_segment_option_runs_the_flow_model_with_segments(capsys):
    from models.network import NetworkConfig

    code, out, err = cli(capsys, "pairs", "--machine", "tiny-fattree", "--ranks", "8", "--ranks-per-node", "1",
                         "--placement", "random", "--network", "flow", "--flow-segment", "16KiB",
                         "--arg", "nbytes=64KiB", "--arg", "iters=2", "--json")
    assert code == 0 and err == ""
    d = json.loads(out.strip().splitlines()[-1])
    net = NetworkConfig(model="flow", flow_segment="16KiB")
    res = run_app("tiny-fattree", "pairs", 8, ranks_per_node=1, placement="random", network=net, nbytes="64KiB",
                  iters=2, comm=None)
    assert d["runtime"] == res.runtime and d["events"] == res.events
    whole = run_app("tiny-fattree", "pairs", 8, ranks_per_node=1, placement="random", network="flow", nbytes="64KiB",
                    iters=2, comm=None)
    assert res.events > whole.events  # four segments per message: more solver work than one flow each


@pytest.mark.parametrize("argv,msg", [
    (["--network", "flow", "--flow-segment", "0"], "--flow-segment must be a whole number of bytes >= 1, got '0'"),
    (["--network", "flow", "--flow-segment=-4KiB"], "--flow-segment must be a whole number of bytes >= 1, got '-4KiB'"),
    (["--network", "flow", "--flow-segment", "1.5"], "--flow-segment must be a whole number of bytes >= 1, got '1.5'"),
    (["--network", "flow", "--flow-segment", "abc"], "--flow-segment: cannot parse 'abc'"),
    (["--flow-segment", "4KiB"], "--flow-segment is an option of the flow model only, got it with --network packet"),
    (["--network", "ideal", "--flow-segment", "4KiB"], "--flow-segment is an option of the flow model only, got it with --network ideal"),
])
def test_flow_segment_mistakes_are_one_line_errors(capsys, argv, msg):
    code, out, err = cli(capsys, "ring", "--ranks", "4", *argv)
    assert code == 2 and out == ""
    assert err.startswith("simhpc: error: ") and msg in err and "Traceback" not in err
