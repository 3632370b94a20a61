"""The examples of docs/extending.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


@pytest.fixture
def clean_registries():
    """The examples register a policy, an allocator and an app: undo that afterwards."""
    from apps import registry
    from scheduler.allocators import ALLOCATORS
    from scheduler.ordering import ORDERINGS

    saved = [(d, dict(d)) for d in (ORDERINGS, ALLOCATORS, registry._APPS)]
    yield
    for d, copy in saved:
        d.clear()
        d.update(copy)


def test_extending_examples_run(clean_registries):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 4
    ns: dict = {}
    for b in blocks:
        exec(compile(b, str(DOC), "exec"), ns)  # noqa: S102 - the project's own documentation
    r = ns["results"]
    assert r.summary()["jobs_run"] == 6
    assert set(r.jobs["app"]) == {"token-ring"}
    # lastfree takes the highest-numbered free nodes: the first job ends on the last nodes.
    first = r.nodes_of(0)
    assert first.max() == 15
    from scheduler.allocators import ALLOCATORS
    from scheduler.ordering import ORDERINGS

    assert "small-first" in ORDERINGS and "lastfree" in ALLOCATORS
