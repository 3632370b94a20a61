"""The examples of docs/apps.md run and their assertions hold (in order, one namespace)."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "apps.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_apps_guide_has_examples_for_every_section():
    text = DOC.read_text()
    assert len(blocks()) >= 9
    for heading in ("## The `mpi` handle", "### Collectives", "### Communicators", "## Failures", "## The job protocol"):
        assert heading in text


def test_every_example_of_the_apps_guide_runs(capsys):
    ns: dict = {"__name__": "apps_docs"}
    for i, code in enumerate(blocks()):
        exec(compile(code, f"{DOC.name}[block {i}]", "exec"), ns)
    out = capsys.readouterr().out
    assert "deadlock in job 0 (app 'doc-deadlock'): 3 of 3 ranks blocked forever" in out


def test_the_skeleton_table_documents_every_builtin_app_and_its_parameters():
    import ast

    from apps import app_names, get_app
    from apps.registry import REQUIRED

    section = DOC.read_text().split("## Built-in skeletons", 1)[1]
    documented = {}
    for names, params in re.findall(r"^\| (`[^|]+`) \| `([^`]*)` \|", section, flags=re.M):
        parsed = []
        for part in (p.strip() for p in params.split(",")):
            name, eq, default = part.partition("=")
            parsed.append((name, ast.literal_eval(default) if eq else REQUIRED))
        for n in re.findall(r"`([^`]+)`", names):
            documented[n] = parsed
    builtin = [n for n in app_names() if get_app(n).fn.__module__.startswith("apps.skeletons")]
    assert sorted(documented) == sorted(builtin)
    for n in builtin:
        assert documented[n] == list(get_app(n).params), n
