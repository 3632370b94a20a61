"""Mistakes found before the work: one line naming the key, exit status 2, no run."""

from __future__ import annotations

import pytest

from simhpc.cli import main

QUICK = ["--set", "workload.jobs=2", "--no-out", "--quiet"]


@pytest.mark.parametrize("argv,text", [
    (["run", *QUICK, "--set", "seed=18446744073709551616"], "seed: must be an integer in 0..9223372036854775807, got 18446744073709551616"),
    (["run", *QUICK, "--set", "seed=9223372036854775808"], "seed: must be an integer in 0..9223372036854775807"),
    (["run", *QUICK, "--set", "seed=-1"], "seed: must be an integer in 0..9223372036854775807, got -1"),
    (["run", *QUICK, "--seed", "-5"], "--seed must be an integer in 0..9223372036854775807, got -5"),
    (["run", *QUICK, "--set", 'name="a\\u0000b"'], "name: must be one line of printable text, got 'a\\x00b'"),
    (["run", *QUICK, "--set", 'name="two\\nlines"'], "name: must be one line of printable text"),
    (["run", *QUICK, "--set", 'machine.name="a\\u0007"'], "machine.name: must be one line of printable text"),
    (["replay", "builtin:lublin_256.swf", "--seed", "-1"], "--seed must be an integer in 0..9223372036854775807, got -1"),
])
def test_bad_seeds_and_names_are_one_line_errors(capsys, argv, text):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing ran
    err = captured.err
    assert err.startswith("simhpc: error: ") and text in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_300_character_file_name_is_refused_before_the_run(tmp_path, capsys):
    out = tmp_path / ("x" * 300 + ".h5")
    assert main(["run", "--quiet", "--set", "workload.jobs=2", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("simhpc: error: --out: the file name 'xxxx") and "303 bytes long" in captured.err


def test_the_largest_seed_runs_and_is_stored(tmp_path, capsys):
    from simhpc.results import read_results

    out = tmp_path / "r.h5"
    assert main(["run", "--quiet", "--set", "workload.jobs=2", "--seed", str(2**63 - 1), "--out", str(out)]) == 0
    assert read_results(out).seed == 2**63 - 1


def test_replay_api_refuses_a_bad_seed():
    import simhpc
    from pdes.errors import UserError

    with pytest.raises(UserError, match=r"^seed must be an integer in 0\.\.9223372036854775807, got 18446744073709551616$"):
        simhpc.replay("builtin:lublin_256.swf", seed=2**64)


@pytest.mark.parametrize("text,msg", [
    ('[study]\nname = "a\\u0000b"\n', "study.name: must be one line of printable text"),
    ("[study]\nseeds = [0, -1]\n", "study.seeds: must be an integer in 0..9223372036854775807, got -1"),
    ("[study]\nseeds = [18446744073709551616]\n", "study.seeds: must be an integer in 0..9223372036854775807"),
])
def test_study_names_and_seeds_are_checked(text, msg):
    import re

    from simhpc.studies import StudyConfigError, loads_study
    from tests_support import load_test_module

    base = load_test_module("simhpc/test_studies.py").CLI_TOML.replace('name = "cli"\n', "").replace("seeds = 2\n", "")
    with pytest.raises(StudyConfigError, match=re.escape(msg)):
        loads_study(base.replace("[study]\n", text, 1))
