"""``simhpc show``: the summary of a results file (and its first job rows)."""

from __future__ import annotations

import argparse
import math
from typing import Any

from .common import CliError, print_json, table, positive_int

HELP = "print the summary of a results file (jobs, waits, utilization, network, run statistics) and its first job rows"

#: Job columns listed by --jobs unless --columns says otherwise.
DEFAULT_COLUMNS = ("job_id", "app", "status", "nodes", "submit", "start", "wait", "run", "trace_run",
                   "app_run", "ideal_run", "bounded_slowdown", "aph", "bytes_sent")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="RESULTS.h5", help="a results file written by simhpc run")
    parser.add_argument("--jobs", type=positive_int, metavar="N", help="also list the first N job rows")
    parser.add_argument("--columns", metavar="A,B,...",
                        help=f"job columns --jobs lists (default: {','.join(DEFAULT_COLUMNS)})")
    parser.add_argument("--json", action="store_true", help="end the output with one JSON object of the figures")


def fmt_time(seconds: Any) -> str:
    """A duration in the unit that suits it (s, min, h, d); '-' when unknown."""
    if seconds is None or (isinstance(seconds, float) and not math.isfinite(seconds)):
        return "-"
    s = float(seconds)
    if abs(s) < 1e-3:
        return f"{s * 1e6:.4g} us" if s else "0 s"
    if abs(s) < 120:
        return f"{s:.4g} s"
    if abs(s) < 7200:
        return f"{s / 60:.4g} min"
    if abs(s) < 172800:
        return f"{s / 3600:.4g} h"
    return f"{s / 86400:.4g} d"


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * float(x):.2f} %"


def _num(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.4g}"
    return f"{x:,}" if isinstance(x, int) and not isinstance(x, bool) else str(x)


def reasons_text(counts: dict[str, int]) -> str:
    """Jobs not simulated, counted by reason, in words ('none' when every job ran)."""
    from ..results.model import REJECT_REASONS

    return "; ".join(f"{v} {REJECT_REASONS.get(k, k)}" for k, v in counts.items() if v) or "none"


def summary_rows(s: dict[str, Any]) -> list[list[Any]]:
    """The figures of :meth:`Results.summary` as (label, formatted value) rows."""
    machine = s.get("machine") or "-"
    if s.get("nodes") is not None:
        machine = f"{machine} ({s['nodes']} nodes)"
    rows: list[list[Any]] = [
        ["experiment", f"{s.get('name')} (seed {s.get('seed')})"],
        ["machine", machine],
        ["jobs", s["jobs"]],
        ["run / rejected / killed / failed", f"{s['jobs_run']} / {s['rejected']} / {s['killed']} / {s['failed']}"],
        ["jobs running an app", s.get("app_jobs", "-")],
        *([["not simulated", reasons_text(s["rejected_by_reason"])]] if "rejected_by_reason" in s else []),
        *([["adjusted by a rule", "; ".join(f"{v} {k.replace('_', ' ')}" for k, v in s["adjusted_by_rule"].items())]]
          if s.get("adjusted_by_rule") else []),
        ["makespan", fmt_time(s.get("makespan"))],
        ["utilization", _pct(s.get("utilization"))],
        ["loss of capacity", _pct(s.get("loss_of_capacity"))],
        ["mean wait", fmt_time(s.get("mean_wait"))],
        ["max wait", fmt_time(s.get("max_wait"))],
        ["mean response", fmt_time(s.get("mean_response"))],
        ["mean bounded slowdown", _num(s.get("mean_bounded_slowdown"))],
        *([["wait p50 / p90 / p99", " / ".join(fmt_time(s.get(f"wait_p{p}")) for p in (50, 90, 99))],
           ["bounded slowdown p50/p90/p99", " / ".join(_num(s.get(f"bounded_slowdown_p{p}")) for p in (50, 90, 99))
            + f" (tau {s.get('tau') or 10:g} s)"]]
          if "wait_p50" in s else []),
        *([["measured jobs (trimmed)", _num(s["measured_jobs"])]] if "measured_jobs" in s else []),
        ["mean interference slowdown", _num(s.get("mean_interference_slowdown"))
         + ("" if s.get("mean_interference_slowdown") is None else " (run / run alone on the same nodes)")],
        ["mean network slowdown", _num(s.get("mean_network_slowdown"))
         + ("" if s.get("mean_network_slowdown") is None else " (run / ideal-network run)")],
        ["network model", s.get("network_model") or "none"],
        ["max queue delay", fmt_time(s.get("max_queue_delay"))],
        ["events", _num(s.get("events"))],
        ["wall time", fmt_time(s.get("wall_s"))],
        ["ranks", _num(s.get("ranks"))],
    ]
    if s.get("windows") is not None:
        rows.append(["synchronization windows", _num(s["windows"])])
    return rows


def slowdown_line(s: dict[str, Any]) -> str:
    """One sentence on how much longer app jobs ran than alone and than on an ideal network
    ('' when the run has neither baseline)."""
    def x(v: Any) -> str:
        return f"{float(v):.2f}x"

    parts = []
    if s.get("mean_interference_slowdown") is not None:
        parts.append(f"{x(s['mean_interference_slowdown'])} as long as alone on the same nodes "
                     f"(worst {x(s['max_interference_slowdown'])})")
    if s.get("mean_network_slowdown") is not None:
        parts.append(f"{x(s['mean_network_slowdown'])} as long as on an ideal network "
                     f"(worst {x(s['max_network_slowdown'])})")
    if not parts:
        return ""
    n = max(s.get("interference_jobs", 0), s.get("network_jobs", 0))
    line = f"{n} app job(s) ran on average " + " and ".join(parts)
    fg = [(k, s.get(f"foreground_{k}_slowdown")) for k in ("interference", "network")]
    fg = [(k, v) for k, v in fg if v is not None]
    if fg:
        words = {"interference": "alone", "network": "ideal"}
        line += "; foreground jobs " + ", ".join(f"{x(v)} ({words[k]})" for k, v in fg)
    return line + "."


def summary_text(s: dict[str, Any]) -> str:
    """The summary table (what ``simhpc run`` prints at the end and ``simhpc show`` again),
    then the slowdown sentence when the run has baselines."""
    rows = summary_rows(s)
    w = max(len(k) for k, _ in rows)
    text = "\n".join(f"{k:<{w}}  {v}" for k, v in rows)
    text += "".join(f"\nwarning: {m}" for m in s.get("warnings", ()))
    line = slowdown_line(s)
    return f"{text}\n{line}" if line else text


def _cell(v: Any) -> Any:
    if isinstance(v, float):
        return "-" if math.isnan(v) else v
    if isinstance(v, str):
        return v if v else "-"
    return v


def _json_value(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def run(args: argparse.Namespace) -> int:
    from ..results.hdf5 import read_file_info, read_results
    from ..results.model import JOB_COLUMNS

    columns = list(DEFAULT_COLUMNS)
    if args.columns is not None:
        columns = [c.strip() for c in args.columns.split(",") if c.strip()]
        bad = [c for c in columns if c not in JOB_COLUMNS]
        if bad or not columns:
            raise CliError(f"--columns: unknown job column(s) {', '.join(bad) or '(none given)'}; "
                           f"valid: {', '.join(JOB_COLUMNS)}")
    info = read_file_info(args.file)
    res = read_results(args.file)
    s = res.summary()
    created = f", created {info['created']}" if info.get("created") else ""
    print(f"{args.file}: simhpc {info.get('simhpc_version')} results, schema {info.get('schema_version')}{created}")
    print(summary_text(s))
    out: dict[str, Any] = dict(s)
    out["file"] = str(args.file)
    if args.jobs:
        n = min(args.jobs, res.n_jobs)
        raw = [[_plain(res.jobs[c][i]) for c in columns] for i in range(n)]
        print()
        print(f"first {n} of {res.n_jobs} jobs")
        print(table([[_cell(v) for v in r] for r in raw], columns))
        out["job_rows"] = [{c: _json_value(v) for c, v in zip(columns, r)} for r in raw]
    if args.json:
        print_json(out)
    return 0


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v
