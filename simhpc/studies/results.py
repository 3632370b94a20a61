"""The results of an interference study: one row per (k, seed) run, hot links, summaries.

:class:`StudyResults` is what :func:`~simhpc.studies.interference.run_study` returns,
what :mod:`simhpc.studies.hdf5` writes and reads, and what :mod:`simhpc.studies.plot`
draws. Every field is plain data: numpy columns, strings, numbers and dicts of those. The
column tables below are the HDF5 schema's documentation as well (``docs/studies.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["HOT_COLUMNS", "RUN_COLUMNS", "SCHEMA_NAME", "SCHEMA_VERSION", "StudyResults", "empty_columns"]

SCHEMA_NAME = "simhpc-study"
SCHEMA_VERSION = 1

# name -> (dtype, unit, description). NaN where a figure does not exist (a run that could not
# be placed, a foreground that failed).
RUN_COLUMNS: dict[str, tuple[str, str, str]] = {
    "k": ("int64", "jobs", "background jobs asked for (static mode); -1 in trace mode"),
    "seed": ("int64", "", "the run's seed"),
    "status": ("str", "", "ok, unplaced, failed, unfinished, rejected or killed"),
    "reason": ("str", "", "why a run is not ok ('' otherwise)"),
    "bg_jobs": ("int64", "jobs", "background app jobs that ran during the foreground's run"),
    "bg_nodes": ("int64", "nodes", "nodes of those background jobs"),
    "bg_launches": ("int64", "", "background job launches during the run (static: restarts of jobs that ended included)"),
    "fg_nodes": ("int64", "nodes", "nodes of the foreground job"),
    "start": ("float64", "s", "foreground start (simulated time of the run)"),
    "end": ("float64", "s", "foreground end"),
    "runtime": ("float64", "s", "foreground runtime among the background jobs"),
    "alone": ("float64", "s", "foreground runtime alone on the same nodes, same network model"),
    "ideal": ("float64", "s", "foreground runtime alone on the same nodes on the ideal (contention-free) network"),
    "slowdown": ("float64", "", "runtime / alone: the interference the background caused"),
    "ideal_slowdown": ("float64", "", "runtime / ideal: interference plus the job's own congestion"),
    "bytes": ("float64", "B", "bytes the foreground sent over the network"),
    "hop_bytes": ("float64", "B*hops", "sum over the foreground's messages of bytes x inter-switch hops"),
    "messages": ("int64", "", "network messages the foreground sent"),
    "aph": ("float64", "hops", "average pairwise inter-switch hops of the foreground's nodes"),
    "max_util": ("float64", "", "highest utilization of a network link on the foreground's routes during its run (NaN on the ideal network)"),
    "max_util_alone": ("float64", "", "the same alone (the foreground's own load)"),
    "other_bytes": ("float64", "B", "bytes of other jobs on the foreground's network links during its run"),
    "events": ("int64", "", "events of the run with background"),
    "wall_s": ("float64", "s", "wall-clock time of the run and its two baselines (varies between runs)"),
    "background": ("str", "", "the background jobs as JSON: [[job id, app, ranks, nodes], ...]"),
}

#: The busiest network links on the foreground's routes, ``hot_links`` rows per run.
HOT_COLUMNS: dict[str, tuple[str, str, str]] = {
    "run": ("int64", "", "row of the run in the runs table"),
    "rank": ("int64", "", "1 = the busiest link of that run"),
    "link": ("int64", "", "link id of the machine's topology"),
    "src": ("int64", "vertex", "source vertex (nodes 0..n-1, then routers)"),
    "dst": ("int64", "vertex", "destination vertex"),
    "kind": ("str", "", "local, up, down or global (network links only)"),
    "utilization": ("float64", "", "busy time over the foreground's run, with background (NaN on the ideal network)"),
    "utilization_alone": ("float64", "", "busy time over the foreground's runtime alone"),
    "fg_bytes": ("float64", "B", "the foreground's bytes on the link (from its run alone)"),
    "other_bytes": ("float64", "B", "other jobs' bytes on the link during the foreground's run"),
}


def empty_columns(spec: dict[str, tuple[str, str, str]], n: int) -> dict[str, np.ndarray]:
    """Columns of ``n`` rows: NaN floats, zero integers, empty strings."""
    out: dict[str, np.ndarray] = {}
    for name, (dt, _, _) in spec.items():
        if dt == "str":
            out[name] = np.array([""] * n, dtype=object)
        elif dt == "float64":
            out[name] = np.full(n, np.nan)
        else:
            out[name] = np.zeros(n, dtype=dt)
    return out


def _stats(x: np.ndarray) -> dict[str, float | None]:
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return {"median": None, "mean": None, "std": None, "min": None, "max": None, "q25": None, "q75": None}
    return {"median": float(np.median(x)), "mean": float(x.mean()), "std": float(x.std()),
            "min": float(x.min()), "max": float(x.max()),
            "q25": float(np.quantile(x, 0.25)), "q75": float(np.quantile(x, 0.75))}


@dataclass
class StudyResults:
    """An interference study's figures (identical on every rank and for any number of ranks,
    except the wall-clock columns)."""

    name: str
    mode: str
    study_toml: str
    machine: dict[str, Any]
    foreground: dict[str, Any]
    runs: dict[str, np.ndarray]
    fg_nodes_ptr: np.ndarray
    fg_node_ids: np.ndarray
    hot: dict[str, np.ndarray]
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def n_runs(self) -> int:
        return len(self.runs["seed"])

    def fg_nodes_of(self, i: int) -> np.ndarray:
        """The foreground's nodes in run ``i``."""
        return self.fg_node_ids[self.fg_nodes_ptr[i]:self.fg_nodes_ptr[i + 1]]

    def hot_links_of(self, i: int) -> list[dict[str, Any]]:
        """The hot-link rows of run ``i`` as dicts."""
        rows = np.flatnonzero(self.hot["run"] == i)
        return [{k: (v[r].item() if isinstance(v[r], np.generic) else v[r]) for k, v in self.hot.items()} for r in rows]

    def group_key(self) -> np.ndarray:
        """The x value of each run: ``k`` in static mode, the background jobs met in trace mode."""
        return self.runs["k"] if self.mode == "static" else self.runs["bg_jobs"]

    def by_k(self) -> list[dict[str, Any]]:
        """Per number of background jobs: run counts and the spread of slowdown and runtimes
        over the runs that finished (``ok``)."""
        key = self.group_key()
        ok = self.runs["status"] == "ok"
        out = []
        for k in sorted(set(int(x) for x in key)):
            m = key == k
            mo = m & ok
            out.append({
                "k": k, "runs": int(m.sum()), "ok": int(mo.sum()),
                "slowdown": _stats(self.runs["slowdown"][mo]),
                "ideal_slowdown": _stats(self.runs["ideal_slowdown"][mo]),
                "runtime": _stats(self.runs["runtime"][mo]),
                "alone": _stats(self.runs["alone"][mo]),
                "ideal": _stats(self.runs["ideal"][mo]),
                "aph": _stats(self.runs["aph"][mo]),
                "max_util": _stats(self.runs["max_util"][mo]),
            })
        return out

    def summary(self) -> dict[str, Any]:
        """The JSON figures of ``simhpc study --json``."""
        st = self.runs["status"]
        counts = {s: int((st == s).sum()) for s in sorted(set(st.tolist()))}
        sl = self.runs["slowdown"][st == "ok"]
        return {
            "study": self.name, "mode": self.mode, "machine": self.machine.get("name"),
            "nodes": self.machine.get("nodes"), "foreground": self.foreground, "runs": self.n_runs,
            "status": counts,
            "max_slowdown": float(np.nanmax(sl)) if len(sl) and np.isfinite(sl).any() else None,
            "by_k": [{"k": r["k"], "runs": r["runs"], "ok": r["ok"],
                      "median_slowdown": r["slowdown"]["median"], "mean_slowdown": r["slowdown"]["mean"],
                      "min_slowdown": r["slowdown"]["min"], "max_slowdown": r["slowdown"]["max"],
                      "median_runtime": r["runtime"]["median"], "median_alone": r["alone"]["median"],
                      "median_ideal": r["ideal"]["median"]} for r in self.by_k()],
            "wall_s": self.info.get("wall_s"),
        }

    def table_rows(self) -> list[list[Any]]:
        """Rows of the per-k table printed by ``simhpc study``."""
        rows = []
        for r in self.by_k():
            s, rt = r["slowdown"], r["runtime"]
            rows.append([r["k"], f"{r['ok']}/{r['runs']}", _f(s["median"], 4), _f(s["min"], 4), _f(s["max"], 4),
                         _us(rt["median"]), _us(r["alone"]["median"]), _us(r["ideal"]["median"]),
                         _f(r["max_util"]["median"], 3), _f(r["aph"]["median"], 3)])
        return rows

    TABLE_HEADERS = ("k", "ok/runs", "slowdown med", "min", "max", "runtime med", "alone med", "ideal med",
                     "max link util", "APH")


def _f(v: float | None, digits: int) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:.{digits}g}"


def _us(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return "-"
    from models.units import format_time

    return format_time(v)
