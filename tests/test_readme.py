"""The README's commands stay true: CI runs exactly the README's test command."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
