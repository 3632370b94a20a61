"""The README's commands and examples stay true: CI runs exactly the README's test command, and
the Python examples of the README and of the scheduling quick start run as written."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    command = ci[-1]
    assert command.startswith("python -m pytest")
    readme = (ROOT / "README.md").read_text()
    assert f"pip install '.[test]' && {command}" in readme


def test_readme_documentation_table_lists_existing_pages():
    readme = (ROOT / "README.md").read_text()
    pages = [line.split("`")[1] for line in readme.splitlines() if line.startswith("| `docs/")]
    assert pages and all((ROOT / p).exists() for p in pages), [p for p in pages if not (ROOT / p).exists()]


def _python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


def _run(code: str, checks: str, cwd: Path) -> None:
    """Run a documented example as a user would: in a fresh interpreter, then ``checks``."""
    r = subprocess.run([sys.executable, "-c", code + "\n" + checks], cwd=cwd, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-3000:]


def test_readme_python_example_runs(tmp_path):
    (code,) = _python_blocks(ROOT / "README.md")
    _run(code.replace('"examples/', f'"{ROOT}/examples/'),
         "assert same.n_jobs == res.n_jobs == 13\n"
         "assert rep.summary()['jobs'] == 2000 and app.runtime > 0", tmp_path)


def test_scheduling_quick_start_runs(tmp_path):
    code = _python_blocks(ROOT / "docs" / "scheduling.md")[0]
    assert "simhpc.replay(" in code and "from scheduler import replay" not in code
    _run(code, "assert r.summary()['jobs'] == 10000 and len(tr.jobs) == 1000", tmp_path)


def test_no_doc_or_example_reads_files_outside_the_repository():
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "examples").rglob("*.toml"))]
    bad = [str(p.relative_to(ROOT)) for p in files if "shared/traces" in p.read_text() or "SIMHPC_TRACES" in p.read_text()]
    assert not bad



def test_readme_quickstart_compares_runs_of_one_experiment():
    """Files plotted together in the quick start are runs of the same experiment (one setting
    changed), so the figure compares like with like."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Quickstart", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    made: dict[str, str] = {}
    plotted = []
    for line in block.splitlines():
        words = line.split("#", 1)[0].split()
        if words[:2] == ["simhpc", "run"]:
            out = words[words.index("--out") + 1] if "--out" in words else "results.h5"
            exp = words[2] if len(words) > 2 and not words[2].startswith("-") else "<default>"
            made[out] = exp
        elif words[:2] == ["simhpc", "plot"]:
            files = [w for w in words[2:words.index("--out") if "--out" in words else None] if w.endswith(".h5")]
            plotted.append(files)
    comparisons = [f for f in plotted if len(f) > 1]
    assert comparisons, "the quick start shows no comparison of runs"
    for files in comparisons:
        assert all(f in made for f in files), files
        assert len({made[f] for f in files}) == 1, {f: made[f] for f in files}
