"""The column tables of ``docs/results.md``, generated from the schema tables of :mod:`.model`.

The document holds each table between ``<!-- generated: NAME -->`` and
``<!-- end generated: NAME -->`` lines; a test checks that they match, and
``python -m simhpc.results.schema_doc docs/results.md`` rewrites them after the schema
changes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from .model import JOB_COLUMNS, LINK_COLUMNS, SERIES

__all__ = ["generated_tables", "update_doc"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _unit(u: str) -> str:
    return f"`{u}`" if u else "-"


def generated_tables() -> dict[str, str]:
    """Markdown tables (name -> text) of the job columns, system series and link columns."""
    jobs = ["| dataset `/jobs/...` | dtype | unit | meaning |", "|---|---|---|---|"]
    for name, (dtype, unit, desc) in JOB_COLUMNS.items():
        stored = "UTF-8 string" if dtype == "str" else dtype
        jobs.append(f"| `{name}` | {stored} | {_unit(unit)} | {_cell(desc)} |")
    series = ["| dataset `/system/...` | unit | meaning |", "|---|---|---|"]
    for name, (unit, desc) in SERIES.items():
        series.append(f"| `{name}` | {_unit(unit)} | {_cell(desc)} |")
    links = ["| dataset `/network/links/...` | unit | meaning |", "|---|---|---|"]
    for name, (unit, desc) in LINK_COLUMNS.items():
        links.append(f"| `{name}` | {_unit(unit)} | {_cell(desc)} |")
    return {"jobs": "\n".join(jobs), "series": "\n".join(series), "links": "\n".join(links)}


def _block(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated: {name} -->\n)(.*?)(\n<!-- end generated: {name} -->)", re.S)


def doc_blocks(text: str) -> dict[str, str]:
    """The generated blocks found in a document's text (name -> table text)."""
    out = {}
    for name in generated_tables():
        m = _block(name).search(text)
        if m:
            out[name] = m.group(2)
    return out


def update_doc(path: str | Path) -> bool:
    """Rewrite the generated blocks of the document at ``path``; True when it changed."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    new = text
    for name, table in generated_tables().items():
        pat = _block(name)
        if not pat.search(new):
            raise ValueError(f"{p}: no '<!-- generated: {name} -->' block")
        new = pat.sub(lambda m, t=table: m.group(1) + t + m.group(3), new)
    if new != text:
        p.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    for arg in sys.argv[1:] or ["docs/results.md"]:
        print(f"{arg}: {'updated' if update_doc(arg) else 'up to date'}")
