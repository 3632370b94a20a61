"""docs/results.md lists every column of the schema with its unit, and its examples run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from results_helpers import fabricate
from simhpc.plots import COMPARISON_FIGURES, PER_FILE_FIGURES
from simhpc.results import JOB_COLUMNS, LINK_COLUMNS, SCHEMA_VERSION, SERIES, write_results
from simhpc.results.schema_doc import doc_blocks, generated_tables, update_doc

DOC = Path(__file__).resolve().parents[2] / "docs" / "results.md"


def test_generated_tables_are_up_to_date():
    blocks = doc_blocks(DOC.read_text(encoding="utf-8"))
    assert blocks == generated_tables(), "run: python -m simhpc.results.schema_doc docs/results.md"


def test_every_column_is_listed_with_its_unit():
    text = DOC.read_text(encoding="utf-8")
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([a-z_]+)` \|.*$", text, flags=re.M)}
    for table in (JOB_COLUMNS, SERIES, LINK_COLUMNS):
        for name, spec in table.items():
            unit = spec[-2]
            assert name in rows, f"{name} missing from {DOC.name}"
            cells = [c.strip() for c in rows[name].strip("|").split("|")]
            assert (f"`{unit}`" if unit else "-") in cells, f"{name}: unit {unit!r} not in {rows[name]}"
    assert f"version {SCHEMA_VERSION}" in text


def test_every_figure_is_documented():
    text = DOC.read_text(encoding="utf-8")
    for stem in COMPARISON_FIGURES:
        assert f"`{stem}.png`" in text
    for prefix in PER_FILE_FIGURES:
        assert f"`{prefix}_<stem>.png`" in text


def test_update_doc_rewrites_a_stale_block(tmp_path):
    stale = DOC.read_text(encoding="utf-8").replace("| `job_id` | int64 |", "| `job_id` | int32 |")
    p = tmp_path / "results.md"
    p.write_text(stale, encoding="utf-8")
    assert update_doc(p) is True and p.read_text(encoding="utf-8") == DOC.read_text(encoding="utf-8")
    assert update_doc(p) is False


def test_the_examples_run(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    write_results(fabricate(), "results.h5")
    code = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(code) == 4
    ns: dict = {"__name__": "results_docs"}
    for i, block in enumerate(code):
        exec(compile(block, f"{DOC.name}[block {i}]", "exec"), ns)
    out = capsys.readouterr().out
    assert "fcfs-tiny 40 tiny-fattree3" in out and "s start - submit" in out
    assert (tmp_path / "gantt.png").exists() and (tmp_path / "figs" / "wait_cdf.svg").exists()


def test_every_job_status_is_documented_with_when_it_occurs():
    from scheduler.job import JobStatus

    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("#### Job statuses"):]
    section = section[:section.index("\n#")]
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| (.+) \|$", section, flags=re.M))
    assert set(rows) == set(JobStatus.ALL), sorted(set(JobStatus.ALL) ^ set(rows))
    assert all(len(when) > 10 for when in rows.values())
    # The column's own description names every status too.
    desc = JOB_COLUMNS["status"][2]
    assert all(s in desc for s in JobStatus.ALL), desc


def test_a_run_cut_at_its_end_time_has_running_queued_and_pending_jobs():
    import numpy as np

    from simhpc.experiment import loads
    from simhpc.experiment.runner import run_experiment

    exp = loads('end_time = "30min"\n[machine]\npreset = "tiny-fattree3"\n'
                '[workload]\njobs = 40\ninter_arrival = { dist = "exponential", mean = "60s" }\n'
                'size = { dist = "power_of_two", low = 2, high = 16 }\n'
                'run_time = { dist = "uniform", low = "5min", high = "20min" }\n[[apps]]\nname = "timekeeper"\n')
    j = run_experiment(exp, comm=None, progress=False).jobs
    assert set(j["status"]) == {"completed", "running", "queued", "pending"}
    st = j["status"]
    assert np.isnan(j["end"][st == "running"]).all() and np.isfinite(j["start"][st == "running"]).all()
    assert np.isnan(j["start"][st == "queued"]).all()
    assert (j["submit"][st == "pending"] > 30 * 60).all()
