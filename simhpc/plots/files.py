"""Every figure for a set of results files, written to a directory (``simhpc plot``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..results.model import Results
from ._common import NoDataError, as_results, ensure_dir, labels_for
from .comparison import aph_by_size, interference_slowdown, network_slowdown, queue_length, slowdown_by_size, \
    utilization, wait_cdf
from .gantt import gantt
from .heatmap import link_heatmap

__all__ = ["COMPARISON_FIGURES", "PER_FILE_FIGURES", "FORMATS", "PlotOutput", "plot_files"]

FORMATS = ("png", "pdf", "svg")

#: Figures drawn once with every file on them: file stem -> function.
COMPARISON_FIGURES: dict[str, Callable[..., Any]] = {
    "wait_cdf": wait_cdf,
    "utilization": utilization,
    "queue_length": queue_length,
    "aph_by_size": aph_by_size,
    "bsld_by_size": slowdown_by_size,
    "slowdown": network_slowdown,
    "interference": interference_slowdown,
}
#: Figures drawn for each file: file stem prefix -> function (the file's stem follows).
PER_FILE_FIGURES: dict[str, Callable[..., Any]] = {
    "gantt": gantt,
    "link_heatmap": link_heatmap,
}


@dataclass
class PlotOutput:
    """What :func:`plot_files` did: the figure files written and the figures skipped (why)."""

    written: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _stems(paths: Sequence[Any]) -> list[str]:
    """File stems naming the per-file figures (numbered when two files share a stem)."""
    stems = [Path(os.fspath(p)).stem if isinstance(p, (str, os.PathLike)) else "" for p in paths]
    out = []
    for i, s in enumerate(stems):
        s = s or f"results{i + 1}"
        out.append(f"{s}-{i + 1}" if stems.count(s) > 1 else s)
    return out


def plot_files(items: Sequence[Results | str | os.PathLike[str]], out_dir: str | os.PathLike[str] = ".", *,
               fmt: str = "png", labels: Sequence[str] | None = None, dpi: int = 120,
               stems: Sequence[str | os.PathLike[str]] | None = None) -> PlotOutput:
    """Draw every figure for ``items`` (results or paths to results files) into ``out_dir``.

    Comparison figures (``wait_cdf``, ``utilization``, ``queue_length``, ``aph_by_size``,
    ``bsld_by_size``, ``slowdown``, ``interference``) get
    every file on one plot, labelled by experiment name (or ``labels``; by file stem when
    files of one experiment are compared, e.g. two policies); ``gantt_<stem>``
    and ``link_heatmap_<stem>`` are drawn per file, ``<stem>`` being the file's name without
    its extension (from ``stems`` when given, e.g. the paths the results were read from).
    A figure that has nothing to draw (e.g. no ideal-network runtimes, no network, or no
    network traffic for the heat map) is skipped with a note in :attr:`PlotOutput.skipped`
    that says why.
    """
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")
    items = list(items)
    results = [as_results(x) for x in items]
    if not results:
        raise ValueError("no results given")
    if stems is not None and len(stems) != len(items):
        raise ValueError(f"stems: {len(stems)} given for {len(items)} results")
    names_of_files = _stems(list(stems) if stems is not None else items)
    named = stems is not None or all(isinstance(x, (str, os.PathLike)) for x in items)
    if labels is None and named and len({r.name for r in results}) < len(results):
        # Runs of one experiment (say, two policies): the experiment names cannot tell them apart.
        labels = names_of_files
    names = labels_for(results, labels)
    out = ensure_dir(out_dir)
    report = PlotOutput()

    def save(fig: Any, stem: str) -> None:
        path = out / f"{stem}.{fmt}"
        # No dates in the metadata, so the same results give the same figure file.
        meta = {"CreationDate": None} if fmt == "pdf" else ({"Date": None} if fmt == "svg" else None)
        fig.savefig(path, dpi=dpi, metadata=meta)
        report.written.append(path)

    for stem, fn in COMPARISON_FIGURES.items():
        try:
            fig = fn(results, labels=names)
        except NoDataError as exc:
            report.skipped.append(f"{stem}.{fmt}: {exc}")
            continue
        save(fig, stem)
    for r, fstem in zip(results, names_of_files):
        for prefix, fn in PER_FILE_FIGURES.items():
            stem = f"{prefix}_{fstem}"
            try:
                fig = fn(r)
            except NoDataError as exc:
                report.skipped.append(f"{stem}.{fmt}: {exc}")
                continue
            save(fig, stem)
    return report
