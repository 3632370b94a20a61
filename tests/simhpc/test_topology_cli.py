"""`simhpc machine`: listing the presets, describing one as text and JSON, and errors."""

from __future__ import annotations

import json

from models.presets import PRESETS, get_machine
from simhpc.cli import main


def test_list_names_every_preset(capsys):
    assert main(["machine", "--list"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["name", "family", "nodes"]
    for name in PRESETS:
        assert any(line.split()[0] == name for line in lines[2:])
    assert main(["machine"]) == 0  # no name: the list
    assert capsys.readouterr().out == out


def test_list_json(capsys):
    assert main(["machine", "--list", "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    data = json.loads(out[-1])
    assert [m["name"] for m in data["machines"]] == list(PRESETS)
    assert {m["name"]: m["nodes"] for m in data["machines"]}["cab"] == 1296


def test_describe_text(capsys):
    assert main(["machine", "cielo"]) == 0
    out = capsys.readouterr().out
    assert "nodes                                9216" in out
    assert "routers                              4608" in out
    assert "diameter (router hops)               26" in out
    assert "bisection links (one direction)      384" in out
    assert "routing                              dor" in out
    assert "4.68 GB/s - 9.36 GB/s" in out and "105 ns" in out
    for kind in ("inject", "eject", "local"):
        assert any(line.startswith(kind) for line in out.splitlines())


def test_describe_json_matches_the_machine(capsys):
    assert main(["machine", "theta", "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    d = json.loads(out[-1])
    m = get_machine("theta")
    assert d["name"] == "theta" and d["nodes"] == 4608 and d["cores_per_node"] == 64
    net = d["network"]
    assert (net["family"], net["routers"], net["links"], net["diameter"]) == ("dragonfly", 1152, m.topology.n_links, 4)
    assert net["bisection_links"] == m.topology.bisection_links
    assert net["routing"] == "minimal" and net["routings"] == ["minimal", "valiant", "ugal", "ugal-g"]
    assert net["link_kinds"]["global"]["bw_min"] == 4.7e9 and net["link_kinds"]["local"]["lat_max"] == 1e-7


def test_unknown_machine_is_a_user_error_listing_the_names(capsys):
    assert main(["machine", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("simhpc: error: unknown machine 'nope'; valid: ")
    assert all(name in err for name in PRESETS)
    assert "Traceback" not in err


def test_list_and_name_together_is_an_error(capsys):
    assert main(["machine", "cab", "--list"]) == 2
    assert "either --list or a machine NAME" in capsys.readouterr().err
