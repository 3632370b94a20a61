"""Job and system metrics of a scheduling run, as numpy arrays ready for HDF5.

Per job (:class:`JobTable`, one column per field): submit, start and end time, wait
(start - submit), response (end - submit), run (end - start), slowdown (response / run;
NaN for a job of zero run time) and bounded slowdown ``max(response / max(run, tau), 1)``
with ``tau = 10 s`` (Feitelson et al., JSSPP 1997), nodes, processes, requested and trace
run time, status.

Per system (:class:`SystemMetrics`), over the span from the first submission to the last
end of the jobs that ran:

* **utilization**: busy node-seconds over ``n_nodes * span`` (the busy-node step function
  integrated exactly), and ``busy_samples``/``utilization_samples`` sampled every
  ``interval`` seconds (one simulated minute by default). The samples are computed
  afterwards from the start and end times, so a run needs no periodic events. Their number
  is bounded by :data:`MAX_SAMPLES` + 1, whatever the makespan: past ``MAX_SAMPLES``
  intervals the step widens to the smallest whole multiple of the requested interval that
  fits (``SystemMetrics.interval`` is the step used). The step functions, which are exact,
  have two entries per job at most, so no series grows with the makespan.
* **makespan**: last end minus first submission.
* **loss of capacity** (Zhou, Yang, Lan, Rich, Tang, Morozov, Desai, "Improving batch
  scheduling on Blue Gene/Q by relaxing 5D torus network allocation constraints", IPDPS
  2015, after Zhang et al., IEEE TPDS 14(3), 2003):
  ``LoC = sum_i n_i * delta_i * (t_{i+1} - t_i) / (n_nodes * span)`` over the intervals
  between consecutive events, where ``n_i`` is the number of idle nodes in interval ``i`` and
  ``delta_i`` is 1 when some waiting job needs no more than ``n_i`` nodes (a job that would
  fit the idle nodes by count waits), else 0. It is the fraction of capacity lost to
  scheduling decisions and fragmentation rather than to a lack of work.
* **queue length** over time: the step function ``queue_times``/``queue_lengths`` and its
  samples ``queue_samples``.
* **percentiles** (50th, 90th, 99th; numpy's linear interpolation) of the wait and of the
  bounded slowdown, and the same figures **per class** (:func:`class_breakdown`): by job
  size (power-of-two node-count bins: 1, 2, 3-4, 5-8, ...) and by run-time class
  (:data:`RUN_CLASSES`: under 1 min, 1-10 min, 10 min-1 h, 1-10 h, 10 h and more).

Bounded slowdown takes a threshold ``tau`` (seconds, > 0; :data:`TAU` = 10 s by default),
recorded as ``SystemMetrics.tau``.

Steady state: ``measure`` (a mask over the jobs, see :mod:`scheduler.trim`) restricts the
per-job figures (means, maxima, percentiles, classes) to the measured jobs, which still
shared the machine with all the others; utilization and loss of capacity are then taken over
the measured jobs' arrival window, from the first to the last submission among them
(``measure_start``/``measure_end``), with every job's busy nodes counted. ``makespan``, the
counts of jobs that ran, were rejected or killed, and the time series describe the whole run.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Sequence

import numpy as np

from pdes.validate import check_float

from .job import Job, JobStatus

__all__ = ["JobTable", "SystemMetrics", "job_table", "system_metrics", "capacity_violations", "TAU",
           "PERCENTILES", "RUN_CLASSES", "check_tau", "size_classes", "run_classes", "class_breakdown"]

#: The default bounded-slowdown threshold in seconds.
TAU = 10.0

#: The percentiles reported for the wait and the bounded slowdown.
PERCENTILES = (50, 90, 99)

#: Run-time classes: (label, upper bound in seconds, exclusive); the last is unbounded.
RUN_CLASSES: tuple[tuple[str, float], ...] = (
    ("< 1 min", 60.0), ("1-10 min", 600.0), ("10 min-1 h", 3600.0), ("1-10 h", 36000.0), (">= 10 h", math.inf),
)


def check_tau(tau: Any, flag: str = "tau") -> float:
    """The bounded-slowdown threshold: a finite number of seconds > 0 (raises UserError)."""
    return check_float(f"{flag} (the bounded-slowdown threshold, seconds)", tau, lo=0.0, lo_open=True)

_STATUS_CODES = {s: i for i, s in enumerate(JobStatus.ALL)}


@dataclass
class JobTable:
    """Per-job columns (numpy arrays of equal length); times NaN where a job did not run."""

    job_id: np.ndarray
    user: np.ndarray
    group: np.ndarray
    job_size: np.ndarray
    nodes: np.ndarray
    submit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    request: np.ndarray
    trace_run: np.ndarray
    run: np.ndarray
    wait: np.ndarray
    response: np.ndarray
    slowdown: np.ndarray
    bounded_slowdown: np.ndarray
    status: np.ndarray  # str
    kill_reason: np.ndarray  # str
    foreground: np.ndarray  # bool
    reservation: np.ndarray  # first reservation promised (NaN when none)

    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def ran(self) -> np.ndarray:
        """Mask of the jobs that started and ended."""
        return ~np.isnan(self.end)

    def columns(self) -> dict[str, np.ndarray]:
        """Column name -> array (string columns as fixed-width unicode)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def status_codes(self) -> np.ndarray:
        """Status as small ints (index into ``JobStatus.ALL``), for compact storage."""
        return np.array([_STATUS_CODES[s] for s in self.status], dtype=np.int8)

    def equals(self, other: "JobTable") -> bool:
        """Exact equality of every column (NaN equal to NaN)."""
        for name, a in self.columns().items():
            b = getattr(other, name)
            if a.shape != b.shape:
                return False
            if a.dtype.kind == "f":
                if not np.array_equal(a, b, equal_nan=True):
                    return False
            elif not np.array_equal(a, b):
                return False
        return True

    def to_csv(self, path: str | os.PathLike) -> int:
        """Write the table as CSV (one row per job, a header row); returns the rows written."""
        cols = self.columns()
        names = list(cols)
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(names)
            lists = [_csv_column(cols[n]) for n in names]
            for row in zip(*lists):
                w.writerow(row)
        return len(self)


def _csv_column(a: np.ndarray) -> list:
    if a.dtype.kind == "f":
        return ["" if math.isnan(x) else (repr(int(x)) if float(x).is_integer() and abs(x) < 2**53 else repr(x)) for x in a.tolist()]
    if a.dtype.kind == "b":
        return [int(x) for x in a.tolist()]
    return a.tolist()


def _opt(x: float | None) -> float:
    return math.nan if x is None else x


def job_table(jobs: Sequence[Job], *, tau: float = TAU) -> JobTable:
    """The per-job metrics of ``jobs`` (in the given order); ``tau`` bounds the slowdown."""
    if tau != TAU:
        tau = check_tau(tau)
    n = len(jobs)
    f64 = np.float64
    submit = np.fromiter((j.submit_time for j in jobs), f64, n)
    start = np.fromiter((_opt(j.start_time) for j in jobs), f64, n)
    end = np.fromiter((_opt(j.end_time) for j in jobs), f64, n)
    run = end - start
    wait = start - submit
    response = end - submit
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = np.where(run > 0, response / np.where(run > 0, run, 1.0), np.nan)
    bsld = np.maximum(response / np.maximum(run, tau), 1.0)
    bsld[np.isnan(run)] = np.nan
    return JobTable(
        job_id=np.fromiter((j.job_id for j in jobs), np.int64, n),
        user=np.fromiter((j.user for j in jobs), np.int64, n),
        group=np.fromiter((j.group for j in jobs), np.int64, n),
        job_size=np.fromiter((j.job_size for j in jobs), np.int64, n),
        nodes=np.fromiter((j.nodes for j in jobs), np.int64, n),
        submit=submit,
        start=start,
        end=end,
        request=np.fromiter((j.request_time for j in jobs), f64, n),
        trace_run=np.fromiter((j.run_time for j in jobs), f64, n),
        run=run,
        wait=wait,
        response=response,
        slowdown=slowdown,
        bounded_slowdown=bsld,
        status=np.array([j.status for j in jobs], dtype=str),
        kill_reason=np.array([j.kill_reason for j in jobs], dtype=str),
        foreground=np.fromiter((j.foreground for j in jobs), bool, n),
        reservation=np.fromiter((_opt(j.reservation_time) for j in jobs), f64, n),
    )


@dataclass
class SystemMetrics:
    """Machine-wide metrics of a run (see the module docstring)."""

    n_nodes: int
    jobs: int  # jobs that ran
    rejected: int
    killed: int
    t_first_submit: float
    t_last_end: float
    makespan: float
    utilization: float
    loss_of_capacity: float
    mean_wait: float
    max_wait: float
    mean_response: float
    mean_slowdown: float
    mean_bounded_slowdown: float
    max_bounded_slowdown: float
    interval: float
    sample_times: np.ndarray = field(repr=False)
    busy_samples: np.ndarray = field(repr=False)
    utilization_samples: np.ndarray = field(repr=False)
    queue_samples: np.ndarray = field(repr=False)
    busy_times: np.ndarray = field(repr=False)
    busy_nodes: np.ndarray = field(repr=False)
    queue_times: np.ndarray = field(repr=False)
    queue_lengths: np.ndarray = field(repr=False)
    tau: float = TAU
    measured_jobs: int = 0  # jobs that ran and are measured (all of them without a trim)
    measure_start: float = math.nan
    measure_end: float = math.nan
    wait_p50: float = math.nan
    wait_p90: float = math.nan
    wait_p99: float = math.nan
    bounded_slowdown_p50: float = math.nan
    bounded_slowdown_p90: float = math.nan
    bounded_slowdown_p99: float = math.nan
    #: ``{"by_size": columns, "by_run": columns}`` (see :func:`class_breakdown`).
    classes: dict[str, dict[str, list]] = field(default_factory=dict, repr=False)

    def scalars(self) -> dict[str, Any]:
        """The scalar figures (no arrays), e.g. for a JSON summary."""
        return {k: v for k, v in asdict(self).items() if not isinstance(v, np.ndarray)}

    def arrays(self) -> dict[str, np.ndarray]:
        """The time series."""
        return {k: v for k, v in asdict(self).items() if isinstance(v, np.ndarray)}


#: The most sampling intervals of a run; a longer makespan widens the sampling step.
MAX_SAMPLES = 10_000


def sampling_step(span: float, interval: float) -> float:
    """The sampling step of a run of ``span`` seconds: ``interval``, or its smallest whole
    multiple that gives at most :data:`MAX_SAMPLES` intervals."""
    if not span > interval * MAX_SAMPLES:
        return interval
    return interval * math.ceil(span / (interval * MAX_SAMPLES))


def _step(times: np.ndarray, deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct times and the value of the cumulative sum after all deltas at each."""
    if len(times) == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    order = np.argsort(times, kind="stable")
    t = times[order]
    v = np.cumsum(deltas[order])
    last = np.ones(len(t), dtype=bool)
    last[:-1] = t[1:] != t[:-1]
    return t[last], v[last]


def _sample(times: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    idx = np.searchsorted(times, at, side="right") - 1
    out = np.where(idx >= 0, values[np.maximum(idx, 0)], 0)
    return out


def _loss_of_capacity(submit: np.ndarray, start: np.ndarray, end: np.ndarray, nodes: np.ndarray,
                      n_nodes: int, t0: float, t1: float) -> float:
    span = t1 - t0
    if span <= 0 or len(submit) == 0:
        return 0.0
    n = len(submit)
    # Events: (time, kind, job); at one instant all are applied before the interval is read.
    times = np.concatenate([submit, start, end])
    kinds = np.concatenate([np.zeros(n, np.int8), np.ones(n, np.int8), np.full(n, 2, np.int8)])
    order = np.lexsort((kinds, times))
    t = times[order]
    nodes = np.asarray(nodes, dtype=np.int64)
    busy = np.cumsum(np.concatenate([np.zeros(n, np.int64), nodes, -nodes])[order])
    # The instants: the last event of each is where the interval to the next one is read.
    last = np.empty(len(t), dtype=bool)
    last[:-1] = t[1:] != t[:-1]
    last[-1] = True
    group = np.cumsum(last) - last  # the instant of each event, 0-based
    ends = np.flatnonzero(last)
    g = len(ends)
    idle = n_nodes - busy[ends]
    # A job waits from the instant of its submission to (not including) that of its start.
    at = np.empty(3 * n, dtype=np.int64)
    at[order] = group
    least = _interval_min(at[:n], at[n : 2 * n], nodes, g)
    when = t[ends]
    lo = np.maximum(when[:-1], t0)
    hi = np.minimum(when[1:], t1)
    counts = (idle[:-1] > 0) & (least[:-1] <= idle[:-1]) & (hi > lo)
    if not counts.any():
        return 0.0
    # add.accumulate sums in order, as the event walk did (np.sum would sum pairwise).
    lost = float(np.add.accumulate(idle[:-1][counts] * (hi[counts] - lo[counts]))[-1])
    return lost / (n_nodes * span)


def _interval_min(a: np.ndarray, b: np.ndarray, values: np.ndarray, g: int) -> np.ndarray:
    """For each of ``g`` points, the least of ``values[j]`` over the ``j`` with ``a[j] <=
    point < b[j]`` (a large sentinel where none): each interval is covered by two blocks of
    a power-of-two length, recorded in a sparse table that is then pushed down level by
    level."""
    big = np.iinfo(np.int64).max
    keep = b > a
    a, b, values = a[keep], b[keep], values[keep]
    if len(a) == 0:
        return np.full(g, big, dtype=np.int64)
    level = np.frexp((b - a).astype(np.float64))[1] - 1  # floor(log2(length)), exact
    top = int(level.max())
    table = np.full((top + 1, g), big, dtype=np.int64)
    np.minimum.at(table, (level, a), values)
    np.minimum.at(table, (level, b - (np.int64(1) << level)), values)
    for k in range(top, 0, -1):
        h = 1 << (k - 1)
        row = table[k, : g - h]
        np.minimum(table[k - 1, : g - h], row, out=table[k - 1, : g - h])
        np.minimum(table[k - 1, h:], row, out=table[k - 1, h:])
    return table[0]


def size_classes(nodes: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Power-of-two job-size classes: the class index of each node count and the class
    labels ("1", "2", "3-4", "5-8", ...), up to the largest count given."""
    nodes = np.asarray(nodes, dtype=np.int64)
    idx = np.zeros(len(nodes), dtype=np.int64)
    big = nodes > 1
    # class k >= 1 holds 2^(k-1) < n <= 2^k
    idx[big] = np.ceil(np.log2(nodes[big])).astype(np.int64)
    top = int(idx.max()) if len(idx) else 0
    labels = []
    for k in range(top + 1):
        lo, hi = (1, 1) if k == 0 else (2 ** (k - 1) + 1, 2**k)
        labels.append(str(hi) if lo == hi else f"{lo}-{hi}")
    return idx, labels


def run_classes(run: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The :data:`RUN_CLASSES` index of each run time (seconds) and the class labels."""
    bounds = np.array([b for _, b in RUN_CLASSES[:-1]])
    return np.searchsorted(bounds, np.asarray(run, dtype=float), side="right"), [lab for lab, _ in RUN_CLASSES]


def _percentiles(x: np.ndarray) -> list[float]:
    if len(x) == 0:
        return [math.nan] * len(PERCENTILES)
    return [float(v) for v in np.percentile(x, PERCENTILES)]


def class_breakdown(table: JobTable, mask: np.ndarray | None = None) -> dict[str, dict[str, list]]:
    """Wait and bounded slowdown per job-size class and per run-time class.

    Over the jobs that ran (and are in ``mask`` when given). Returns ``{"by_size": cols,
    "by_run": cols}``, each ``cols`` a dict of equal-length lists, one entry per class that
    has jobs: ``class`` (label), ``jobs``, ``mean_wait``, ``wait_p50/p90/p99``,
    ``mean_bounded_slowdown``, ``bounded_slowdown_p50/p90/p99``.
    """
    ran = table.ran if mask is None else table.ran & mask
    wait = table.wait[ran]
    bsld = table.bounded_slowdown[ran]
    out: dict[str, dict[str, list]] = {}
    for key, (idx, labels) in (("by_size", size_classes(table.nodes[ran])), ("by_run", run_classes(table.run[ran]))):
        cols: dict[str, list] = {"class": [], "jobs": [], "mean_wait": []}
        cols.update({f"wait_p{p}": [] for p in PERCENTILES})
        cols["mean_bounded_slowdown"] = []
        cols.update({f"bounded_slowdown_p{p}": [] for p in PERCENTILES})
        for k, label in enumerate(labels):
            sel = idx == k
            n = int(sel.sum())
            if n == 0:
                continue
            w = wait[sel]
            b = bsld[sel]
            cols["class"].append(label)
            cols["jobs"].append(n)
            cols["mean_wait"].append(float(w.mean()))
            for p, v in zip(PERCENTILES, _percentiles(w)):
                cols[f"wait_p{p}"].append(v)
            cols["mean_bounded_slowdown"].append(float(b.mean()))
            for p, v in zip(PERCENTILES, _percentiles(b)):
                cols[f"bounded_slowdown_p{p}"].append(v)
        out[key] = cols
    return out


def system_metrics(jobs: Sequence[Job] | JobTable, n_nodes: int, *, interval: float = 60.0,
                   rejected: int | None = None, tau: float = TAU,
                   measure: np.ndarray | None = None) -> SystemMetrics:
    """Machine-wide metrics of the jobs that ran (see the module docstring).

    ``tau`` is the bounded-slowdown threshold used when ``jobs`` is a list of jobs (a
    :class:`JobTable` already holds its bounded slowdowns; pass the ``tau`` it was built
    with so that it is recorded). ``measure``: a boolean mask over the jobs (table rows)
    restricting the per-job figures to a steady-state part of the run (see
    :mod:`scheduler.trim`); None measures every job.
    """
    tau = check_tau(tau) if tau != TAU else TAU
    table = jobs if isinstance(jobs, JobTable) else job_table(jobs, tau=tau)
    if not interval > 0:
        raise ValueError(f"interval must be > 0 seconds, got {interval!r}")
    if measure is not None:
        measure = np.asarray(measure, dtype=bool)
        if measure.shape != (len(table),):
            raise ValueError(f"measure must be a mask of {len(table)} jobs, got shape {measure.shape}")
    ran = table.ran
    submit = table.submit[ran]
    start = table.start[ran]
    end = table.end[ran]
    nodes = table.nodes[ran]
    n = int(ran.sum())
    n_rej = int((table.status == JobStatus.REJECTED).sum()) if rejected is None else rejected
    killed = int((table.status == JobStatus.KILLED).sum())
    if n == 0:
        z = np.zeros(0)
        zi = np.zeros(0, dtype=np.int64)
        nan = math.nan
        return SystemMetrics(n_nodes, 0, n_rej, killed, nan, nan, 0.0, 0.0, 0.0, nan, nan, nan, nan, nan, nan,
                             interval, z, zi, z, zi, z, zi, z, zi, tau=tau)
    t0 = float(submit.min())
    t1 = float(end.max())
    span = t1 - t0
    busy_t, busy_v = _step(np.concatenate([start, end]), np.concatenate([nodes, -nodes]))
    q_t, q_v = _step(np.concatenate([submit, start]), np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64)]))
    if measure is None:
        m_ran = ran
        a, b = t0, t1
        busy_node_s = float((nodes * (end - start)).sum())
    else:
        m_ran = ran & measure
        m_submit = table.submit[measure]
        a = float(m_submit.min()) if len(m_submit) else t0
        b = float(m_submit.max()) if len(m_submit) else t1
        busy_node_s = float((nodes * np.clip(np.minimum(end, b) - np.maximum(start, a), 0.0, None)).sum())
    period = b - a
    util = busy_node_s / (n_nodes * period) if period > 0 else 0.0
    # Sized by the makespan only up to MAX_SAMPLES: a trace job of run time 1e10 s must not
    # allocate gigabytes of samples.
    step = sampling_step(span, interval)
    count = min(int(math.floor(span / step)), MAX_SAMPLES) if math.isfinite(span) else 0
    samples = t0 + step * np.arange(count + 1)
    busy_s = _sample(busy_t, busy_v, samples).astype(np.int64)
    queue_s = _sample(q_t, q_v, samples).astype(np.int64)
    loc = _loss_of_capacity(submit, start, end, nodes, n_nodes, a, b)
    wait = table.wait[m_ran]
    sld = table.slowdown[m_ran]
    bsld = table.bounded_slowdown[m_ran]
    nm = int(m_ran.sum())
    nan = math.nan
    wp = _percentiles(wait)
    bp = _percentiles(bsld)
    return SystemMetrics(
        n_nodes=n_nodes,
        jobs=n,
        rejected=n_rej,
        killed=killed,
        t_first_submit=t0,
        t_last_end=t1,
        makespan=span,
        utilization=util,
        loss_of_capacity=loc,
        mean_wait=float(wait.mean()) if nm else nan,
        max_wait=float(wait.max()) if nm else nan,
        mean_response=float(table.response[m_ran].mean()) if nm else nan,
        mean_slowdown=float(np.nanmean(sld)) if np.isfinite(sld).any() else nan,
        mean_bounded_slowdown=float(bsld.mean()) if nm else nan,
        max_bounded_slowdown=float(bsld.max()) if nm else nan,
        interval=float(step),
        sample_times=samples,
        busy_samples=busy_s,
        utilization_samples=busy_s / n_nodes,
        queue_samples=queue_s,
        busy_times=busy_t,
        busy_nodes=busy_v.astype(np.int64),
        queue_times=q_t,
        queue_lengths=q_v.astype(np.int64),
        tau=tau,
        measured_jobs=nm,
        measure_start=a,
        measure_end=b,
        wait_p50=wp[0], wait_p90=wp[1], wait_p99=wp[2],
        bounded_slowdown_p50=bp[0], bounded_slowdown_p90=bp[1], bounded_slowdown_p99=bp[2],
        classes=class_breakdown(table, None if measure is None else measure),
    )


def capacity_violations(jobs: Sequence[Job], n_nodes: int) -> list[str]:
    """Every way ``jobs`` break the machine's capacity (empty when none).

    Checks that no instant has more busy nodes than ``n_nodes`` (ends at an instant free
    nodes before starts at it), that each job ran on exactly ``nodes`` distinct nodes in
    ``[0, n_nodes)``, and that no node ran two jobs at once.
    """
    problems: list[str] = []
    ran = [j for j in jobs if j.start_time is not None and j.end_time is not None]
    events = sorted([(j.start_time, 1, j.nodes) for j in ran] + [(j.end_time, 0, -j.nodes) for j in ran])
    busy = 0
    for t, _, d in events:
        busy += d
        if busy > n_nodes:
            problems.append(f"{busy} nodes busy at t={t!r} on a {n_nodes}-node machine")
            break
    per_node: dict[int, list[tuple[float, float, int]]] = {}
    for j in ran:
        nodes = j.assigned_nodes
        if nodes is None or len(nodes) != j.nodes or len(set(np.asarray(nodes).tolist())) != j.nodes:
            problems.append(f"job {j.job_id} needs {j.nodes} distinct nodes but was assigned {nodes!r}")
            continue
        if len(nodes) and (int(np.min(nodes)) < 0 or int(np.max(nodes)) >= n_nodes):
            problems.append(f"job {j.job_id} was assigned nodes outside 0..{n_nodes - 1}")
        for n in np.asarray(nodes).tolist():
            per_node.setdefault(n, []).append((j.start_time, j.end_time, j.job_id))
    for n, spans in per_node.items():
        spans.sort()
        for (s0, e0, a), (s1, e1, b) in zip(spans, spans[1:]):
            if s1 < e0:
                problems.append(f"node {n} ran jobs {a} and {b} at once ({s0}..{e0} and {s1}..{e1})")
                break
    return problems
