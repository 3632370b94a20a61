"""The traces shipped with simhpc: archive bytes, attribution headers, and the builtin: resolver."""

from __future__ import annotations

import gzip
import tomllib
from pathlib import Path

import pytest

from pdes.errors import UserError
from simhpc.cli import main
from simhpc.experiment import ConfigError, loads
from simhpc.traces import BUILTIN, UnknownTraceError, available, resolve_trace, trace_path
from tests_support import archive_trace

ROOT = Path(__file__).resolve().parents[2]
MACHINE = '[machine]\npreset = "tiny-torus"\n'
NAMES = ("CTC-SP2-1996-3.1-cln.swf.gz", "lublin_256.swf")
# Attribution lines of each file's archive header, which must travel with the file.
HEADER_LINES = {
    "CTC-SP2-1996-3.1-cln.swf.gz": [
        "; Computer: IBM SP2",
        "; Installation: Cornell Theory Center (CTC)",
        "; Acknowledge: Dan Dwyer and Steve Hotovy",
        ";              http://www.cs.huji.ac.il/labs/parallel/workload/",
        "; Conversion: Dror Feitelson (feit@cs.huji.ac.il) 06 Dec 2011",
    ],
    "lublin_256.swf": [
        "; Acknowledge: Uri Lublin, Hebrew University",
        "; Information: http://www.cs.huji.ac.il/labs/parallel/workload",
    ],
}


def _header(path: Path) -> list[str]:
    opener = gzip.open if path.name.endswith(".gz") else open
    lines = []
    with opener(path, "rt") as f:
        for line in f:
            if not line.startswith(";"):
                break
            lines.append(line.rstrip("\n"))
    return lines


def test_the_two_archive_traces_ship():
    assert available() == NAMES
    for name in NAMES:
        assert trace_path(name).is_file() and trace_path(name).name == name


@pytest.mark.parametrize("name", NAMES)
def test_shipped_bytes_equal_the_archive_copy(name):
    assert trace_path(name).read_bytes() == archive_trace(name).read_bytes()


def test_only_the_tests_helper_looks_outside_the_repository():
    """One rule: the package, scripts and tests name traces by builtin:NAME or a path; the
    archive copies are found by tests_support.archive_trace alone, and no code reads an
    environment variable for traces."""
    import re

    reads_env = re.compile(r"(environ|getenv)\W[^\n]*SIMHPC_")
    outside = re.compile(r'/ *"shared"|\.\./shared|join\([^)\n]*"shared"')
    helper = ROOT / "tests" / "tests_support.py"
    bad = []
    for top in ("pdes", "models", "apps", "scheduler", "simhpc", "scripts", "tests"):
        for p in sorted((ROOT / top).rglob("*.py")):
            if p in (helper, Path(__file__).resolve()):  # the helper, and these patterns
                continue
            text = p.read_text(encoding="utf-8")
            if reads_env.search(text) or outside.search(text):
                bad.append(str(p.relative_to(ROOT)))
    assert not bad
    assert outside.search(helper.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", NAMES)
def test_headers_carry_the_attribution(name):
    header = _header(trace_path(name))
    assert header[0].startswith("; Version: 2")
    for line in HEADER_LINES[name]:
        assert line in header, line


def test_the_notice_names_the_source_and_the_citation():
    text = (trace_path(NAMES[0]).parent / "README.md").read_text()
    for needle in ("Parallel Workloads Archive", "Dror", "Feitelson, D. Tsafrir, D. Krakov",
                   "Experience with using the Parallel Workloads Archive", "74(10)", "2014", *NAMES):
        assert needle in text, needle


def test_the_wheel_carries_the_traces():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert {"*.swf", "*.swf.gz", "README.md"} <= set(data["simhpc.traces"])


def test_resolver_builtin_and_paths(tmp_path):
    assert resolve_trace(BUILTIN + "lublin_256.swf") == trace_path("lublin_256.swf")
    assert resolve_trace("t.swf", tmp_path) == tmp_path / "t.swf"
    assert resolve_trace(str(tmp_path / "t.swf"), "/elsewhere") == tmp_path / "t.swf"
    assert resolve_trace("lublin_256.swf", tmp_path) == tmp_path / "lublin_256.swf"  # a path, not a name


def test_unknown_builtin_name_lists_the_shipped_ones():
    with pytest.raises(UnknownTraceError) as exc:
        resolve_trace("builtin:ctc.swf")
    assert isinstance(exc.value, UserError)
    msg = str(exc.value)
    assert "'ctc.swf'" in msg and all(n in msg for n in NAMES)


def test_experiment_refuses_an_unknown_builtin_at_load_time():
    with pytest.raises(ConfigError, match=r"workload.trace: unknown built-in trace 'nope.swf'; simhpc ships: CTC"):
        loads(MACHINE + '[workload]\nkind = "swf"\ntrace = "builtin:nope.swf"\n')


def test_experiment_reads_a_builtin_trace():
    from simhpc.experiment.runner import build_workload

    exp = loads(MACHINE + '[workload]\nkind = "swf"\ntrace = "builtin:lublin_256.swf"\nlimit = 5\n', base_dir="/nonexistent")
    assert exp.workload.to_dict()["trace"] == "builtin:lublin_256.swf"  # recorded as given
    jobs, _, report = build_workload(exp, 1, 256)
    assert len(jobs) == 5 and report["filter"]["kept"] == 5


def test_replay_cli_takes_a_builtin_name(capsys):
    assert main(["replay", "builtin:lublin_256.swf", "--limit", "50", "--json"]) == 0
    assert '"jobs": 50' in capsys.readouterr().out
    assert main(["replay", "builtin:nope.swf"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "lublin_256.swf" in err
