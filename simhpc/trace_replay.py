"""Trace replay with results files: ``simhpc replay TRACE --out r.h5 --swf-out s.swf``.

The replay engine (:func:`scheduler.replay_engine.replay`) runs an SWF trace through a scheduler;
this module turns what it produced into the :class:`~simhpc.results.Results` that
``simhpc run`` writes, through the same job-table code (:func:`job_columns`), so that
``simhpc show`` and ``simhpc plot`` read a replay like any run::

    import simhpc
    rep = simhpc.replay("trace.swf", nodes=128, backfill="easy", out="r.h5", swf_out="r.swf")
    res = simhpc.load_results("r.h5")

A replay has no network: its jobs are timekeeper jobs, so their network columns read as
those of timekeeper jobs in a run (``app_run``/``ideal_run`` NaN, no bytes or messages), the
results carry no per-link arrays and an empty ``network`` group.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from pdes.errors import UserError
from scheduler.job import Job
from scheduler.replay_engine import ReplayResult
from scheduler.replay_engine import replay as replay_engine

from .experiment.results_builder import job_columns, rejected_by_reason
from .outputs import output_problem
from .results import Results

__all__ = ["replay", "replay_results", "replay_jobs", "write_replay_swf"]


def replay_jobs(res: ReplayResult) -> list[Job]:
    """Every job of a replay: the simulated ones in submission order (those its scheduler
    rejected included), then those the trace filter rejected as larger than the machine."""
    seen = {id(j) for j in res.jobs}
    return list(res.jobs) + [j for j in res.rejected if id(j) not in seen]


def _toml(res: ReplayResult) -> str:
    """The replay's parameters as a TOML ``[replay]`` table (a record, not an experiment)."""
    m = res.machine
    items: list[tuple[str, Any]] = [
        ("trace", res.trace), ("nodes", m.n_nodes), ("cores_per_node", m.cores_per_node),
        ("machine", m.name), ("allocator", res.allocator), ("order", res.order),
        ("backfill", res.backfill), ("kill_overrun", res.kill_overrun),
        ("tau", res.tau), ("load_factor", res.load_factor), ("estimate", res.estimate),
    ]
    if res.estimate_options:
        items.append(("estimate_options", res.estimate_options))
    if res.backfill_options:
        items.append(("backfill_options", res.backfill_options))
    if res.trim.active:
        t = res.trim
        items += [("skip_first", t.skip_first), ("skip_last", t.skip_last)]
        if t.window is not None:
            a, b = t.window
            items.append(("window", f"{a!r}:{'' if b == float('inf') else repr(b)}"))
    lines = ["[replay]"]
    for k, v in items:
        lines.append(f"{k} = {_toml_value(v)}")
    return "\n".join(lines) + "\n"


def _toml_value(v: Any) -> str:
    """A TOML value: booleans, numbers and strings, and tables of them written inline."""
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    return "true" if v is True else "false" if v is False else json.dumps(v)


def replay_results(res: ReplayResult, *, seed: int = 0, name: str | None = None) -> Results:
    """The :class:`~simhpc.results.Results` of a replay (the schema of ``simhpc run``).

    ``name`` defaults to the trace file's name without its ``.swf``/``.swf.gz`` ending.
    """
    jobs = replay_jobs(res)
    jc = job_columns(jobs, topology=res.machine.topology)
    cols = jc.cols
    # No network: a job that ran sent nothing, as a timekeeper job in a run.
    ran = ~np.isnan(cols["start"])
    cols["bytes_sent"][ran] = 0.0
    cols["hop_bytes"][ran] = 0.0
    cols["messages"][ran] = 0
    dropped = res.swf_report.by_reason() if res.swf_report is not None else {}
    # Jobs the filter rejected as too large have job rows (status rejected): counted there.
    dropped.pop("larger_than_machine", None)
    system = res.metrics.scalars()
    system["rejected_by_reason"] = rejected_by_reason(cols, res.machine.n_nodes, dropped)
    series = {k: np.asarray(v) for k, v in res.metrics.arrays().items()}
    m = res.machine
    topo = m.topology
    machine: dict[str, Any] = {"name": m.name, "nodes": int(m.n_nodes), "cores_per_node": int(m.cores_per_node),
                               "family": getattr(topo, "name", "") if topo is not None else ""}
    if topo is not None:
        machine["routers"] = int(topo.n_routers)
        machine["links"] = int(topo.n_links)
    run = {
        "events": int(res.stats.events), "wall_s": float(res.wall_s), "sim_wall_s": float(res.sim_wall_s),
        "ranks": 1, "end_time": float(res.stats.end_time), "passes": int(res.passes),
        "workload_jobs": len(jobs),
    }
    if name is None:
        base = os.path.basename(res.trace)
        for end in (".gz", ".swf"):
            base = base[: -len(end)] if base.endswith(end) else base
        name = base or "replay"
    return Results(name=name, experiment_toml=_toml(res), seed=int(seed), machine=machine, jobs=cols,
                   job_nodes_ptr=jc.ptr, job_nodes=jc.nodes, system=system, series=series, links=None,
                   network={}, run=run)


def write_replay_swf(res: ReplayResult, path: str | os.PathLike[str]) -> int:
    """Write the simulated schedule of a replay as SWF (simulated wait and run time; status
    1 completed, 0 killed or failed, 5 rejected); returns the number of job lines."""
    from scheduler.swf import write_swf

    jobs = sorted(replay_jobs(res), key=lambda j: j.submit_time)  # stable: ties keep their order
    m = res.machine
    return write_swf(path, jobs, max_nodes=m.n_nodes, max_procs=m.n_nodes * m.cores_per_node,
                     comments=[f"simulated schedule of {res.trace} by simhpc: order={res.order} "
                               f"backfill={res.backfill} allocator={res.allocator}"])


def replay(trace: Any, *, out: str | os.PathLike[str] | None = None, swf_out: str | os.PathLike[str] | None = None,
           name: str | None = None, **options: Any) -> ReplayResult:
    """Replay ``trace`` through a scheduler (:func:`scheduler.replay_engine.replay`, whose keyword
    arguments ``options`` are) and write its results file (``out``, the schema of
    ``simhpc run``) and its simulated schedule as SWF (``swf_out``) when asked."""
    from .results import write_results

    for what, p, example in (("the results file", out, "results.h5"), ("the SWF file", swf_out, "schedule.swf")):
        problem = output_problem(what, p, example=example) if p is not None else None
        if problem:
            raise UserError(problem)
    res = replay_engine(trace, **options)
    if out is not None:
        write_results(replay_results(res, seed=int(options.get("seed", 0)), name=name), out)
    if swf_out is not None:
        write_replay_swf(res, swf_out)
    return res
