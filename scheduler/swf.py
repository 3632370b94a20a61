"""Reader (and writer) of the Standard Workload Format (SWF) of the Parallel Workloads Archive.

An SWF file has header lines starting with ``;`` (``; MaxNodes: 338 (batch partition)``,
``; Queue: 1 DSI``, free comments) and one line per job with 18 whitespace-separated numeric
fields (:data:`SWF_FIELDS`); ``-1`` marks a missing value. Files ending in ``.gz`` are read
through gzip.

The filter applied by :func:`read_swf` (every count is reported in :class:`SwfReport`):

0. **partial executions** (status 2, 3 or 4: a job checkpointed or swapped out and run in
   several parts, each part a line with the job's number): per the SWF definition the job
   is one job. When the trace also has its summary line (the same job number with status 0,
   1 or 5) that line is the job and its parts are not simulated on their own; without one
   the parts are merged: the first part's submit time, processors, request, user, group,
   queue and fields 16-18, the sum of the parts' run times, completed when the last part
   says so (status 3). ``partial_records`` counts the part lines folded into jobs. Lines
   that contradict each other raise :class:`~scheduler.errors.SwfError` naming their line
   numbers: one job number on several lines that are not parts (or two summary lines),
   parts of one job with different submit times, requested processors or users, and a part
   after the one that ended the job (status 3 or 4).
1. **cancelled**: status 5 (cancelled) and no run (run time ``-1`` or 0): cancelled before
   it started, dropped and counted. A cancelled job that ran (run time > 0) is replayed
   for the time it ran (counted as **cancelled_after_start**). **no_run_time**: run time
   (field 4) missing with another status: dropped, there is nothing to replay.
2. **no_submit**: submit time (field 2) missing: dropped.
3. **no_processors**: neither requested (field 8) nor allocated (field 5) processors:
   dropped. **procs_from_allocated**: requested processors missing, the allocated count is
   used (kept).
4. **request_from_runtime**: requested time (field 9) missing or zero: the run time is used
   as the estimate (kept).
5. **too_large**: more nodes than the machine has: rejected (kept in
   :attr:`SwfTrace.rejected` with status ``"rejected"``, never simulated). With
   ``reject_too_large=False`` the reader leaves this to the caller (who may scale job sizes
   first, or simulate on a machine larger than the header says).
6. **malformed** lines (not 18 fields, a field that is not a finite number) raise
   :class:`~scheduler.errors.SwfError` with the file, line number and reason, or with
   ``skip_malformed=True`` are skipped and counted.

Informational counts: **overrun** (kept jobs that ran longer than they requested; the
scheduler kills them at their requested time unless told otherwise) and **zero_runtime**.

Each job keeps fields 16-18 (``Job.partition``, ``Job.preceding_job``, ``Job.think_time``;
-1 when the trace has none).

A job needs ``ceil(processors / cores_per_node)`` nodes; the default of one process per node
makes an SWF processor count a node count. The machine size defaults to the header:
``ceil(MaxProcs / cores_per_node)`` when ``MaxProcs`` is given, else ``MaxNodes``; with
neither, the caller gives it (:class:`~scheduler.errors.SwfMachineSizeError` otherwise).
"""

from __future__ import annotations

import gzip
import io
import math
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from .errors import SwfError, SwfMachineSizeError, UserError
from .job import Job, JobStatus

__all__ = ["SWF_FIELDS", "DROP_REASONS", "SwfHeader", "SwfReport", "SwfTrace", "read_swf", "write_swf", "parse_header_line"]

#: The 18 fields of an SWF job line, in order (1-based field k is ``SWF_FIELDS[k - 1]``).
SWF_FIELDS: tuple[str, ...] = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_procs",
    "avg_cpu_time",
    "used_memory",
    "requested_procs",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)
_N = len(SWF_FIELDS)
(_JOB, _SUBMIT, _WAIT, _RUN, _ALLOC, _CPU, _MEM, _REQP, _REQT, _REQM, _STATUS, _USER, _GROUP,
 _EXE, _QUEUE, _PART, _PREC, _THINK) = range(_N)

# A "Key: value" line; a colon that starts "://" is part of a URL (a continuation line such as
# ";     http://..." is a comment, not a key "http").
_HEADER_RE = re.compile(r"^;\s*([A-Za-z][A-Za-z0-9_ ]*?)\s*:(?!//)\s*(.*?)\s*$")
_INT_RE = re.compile(r"^([-+]?\d+)")
_NUMERIC_KEYS = ("MaxJobs", "MaxRecords", "MaxNodes", "MaxProcs", "MaxRuntime", "MaxMemory",
                 "AllowOveruse", "MaxQueues", "MaxPartitions", "UnixStartTime", "TimeZone")


@dataclass
class SwfHeader:
    """The header of an SWF file.

    ``values`` maps each ``; Key: value`` line to its value text (the last one when a key
    repeats; the earlier lines go to ``comments`` as ``"Key: value"``; ``Queue`` and
    ``Partition`` lines go to ``queues``/``partitions``, number -> name); numeric keys such
    as ``MaxNodes`` are also parsed into ``numbers`` from their leading integer, so trailing
    comments (``338 (batch partition; 512 total)``) are fine. ``comments`` holds the other
    ``;`` lines (free text, continuation lines such as an indented second URL).
    """

    values: dict[str, str] = field(default_factory=dict)
    numbers: dict[str, int] = field(default_factory=dict)
    queues: dict[int, str] = field(default_factory=dict)
    partitions: dict[int, str] = field(default_factory=dict)
    comments: list[str] = field(default_factory=list)

    @property
    def max_nodes(self) -> int | None:
        return self.numbers.get("MaxNodes")

    @property
    def max_procs(self) -> int | None:
        return self.numbers.get("MaxProcs")

    def machine_nodes(self, cores_per_node: int = 1) -> int | None:
        """The machine size the header implies (see the module docstring), or None."""
        procs = self.max_procs
        if procs is not None and procs > 0:
            return -(-procs // cores_per_node)
        nodes = self.max_nodes
        return nodes if nodes is not None and nodes > 0 else None


def parse_header_line(line: str, header: SwfHeader) -> None:
    """Add one ``;`` line to ``header``."""
    m = _HEADER_RE.match(line)
    if m is None:
        text = line[1:].strip()
        if text:
            header.comments.append(text)
        return
    key, value = m.group(1), m.group(2)
    if key in ("Queue", "Partition"):
        parts = value.split(None, 1)
        if parts and _INT_RE.match(parts[0]):
            target = header.queues if key == "Queue" else header.partitions
            target[int(_INT_RE.match(parts[0]).group(1))] = parts[1].strip() if len(parts) > 1 else parts[0]
            return
    old = header.values.get(key)
    if old is not None:
        header.comments.append(f"{key}: {old}")
    header.values[key] = value
    if key in _NUMERIC_KEYS:
        n = _INT_RE.match(value)
        if n is not None:
            header.numbers[key] = int(n.group(1))


#: Why a job of a trace is not simulated: reason -> what it means (the keys of
#: :meth:`SwfReport.by_reason`, also used by results files).
DROP_REASONS: dict[str, str] = {
    "cancelled": "cancelled in the trace before it started (status 5)",
    "no_run_time": "no run time in the trace (run time -1)",
    "no_submit_time": "no submit time in the trace",
    "no_processors": "no processor count in the trace",
    "malformed": "malformed trace line (skipped)",
    "larger_than_machine": "larger than the machine",
}


@dataclass
class SwfReport:
    """What the SWF filter did (see the module docstring for each count)."""

    lines: int = 0
    kept: int = 0
    cancelled: int = 0
    no_run_time: int = 0
    cancelled_after_start: int = 0
    partial_records: int = 0
    no_submit: int = 0
    no_processors: int = 0
    procs_from_allocated: int = 0
    request_from_runtime: int = 0
    too_large: int = 0
    malformed: int = 0
    overrun: int = 0
    zero_runtime: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def by_reason(self) -> dict[str, int]:
        """The jobs the filter took out, by reason (see :data:`DROP_REASONS`), zeros included."""
        return {"cancelled": self.cancelled, "no_run_time": self.no_run_time, "no_submit_time": self.no_submit,
                "no_processors": self.no_processors, "malformed": self.malformed,
                "larger_than_machine": self.too_large}

    @property
    def dropped(self) -> int:
        """Jobs that were not simulated at all (cancelled, no run time, no submit time, no
        processors, malformed lines)."""
        return self.cancelled + self.no_run_time + self.no_submit + self.no_processors + self.malformed


@dataclass
class SwfTrace:
    """An SWF file read and filtered.

    ``records`` holds the 18 fields of every well-formed job line as read (float64, shape
    ``(lines, 18)``, columns named by :data:`SWF_FIELDS`); ``jobs`` the jobs to simulate in
    file order; ``rejected`` the jobs larger than the machine; ``n_nodes`` and
    ``cores_per_node`` the machine the filter used.
    """

    path: str
    header: SwfHeader
    records: np.ndarray
    jobs: list[Job]
    rejected: list[Job]
    report: SwfReport
    n_nodes: int
    cores_per_node: int


def _open_text(path: Path) -> str:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as f:
                raw = f.read()
        else:
            raw = path.read_bytes()
    except (gzip.BadGzipFile, EOFError, OSError) as exc:
        if isinstance(exc, (FileNotFoundError, IsADirectoryError, PermissionError)):
            raise
        raise SwfError(str(path), 0, f"cannot read it as gzip-compressed SWF ({exc}); is it a .swf.gz trace?") from None
    if b"\0" in raw[:4096]:
        raise SwfError(str(path), 0, "this is a binary file, not an SWF trace (a text file of ';' header lines and 18-field job lines)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _check_path(path: str | os.PathLike) -> Path:
    p = Path(path)
    if not p.exists():
        raise UserError(f"trace {str(p)!r} does not exist; give the path of an .swf or .swf.gz file")
    if p.is_dir():
        raise UserError(f"trace {str(p)!r} is a directory; give the path of an .swf or .swf.gz file")
    return p


def _parse_rows_slow(path: str, data: list[tuple[int, str]], skip: bool) -> tuple[np.ndarray, int, list[int]]:
    """Line-by-line parse with precise errors; returns (records, malformed count, the line
    number of each record)."""
    rows: list[list[float]] = []
    linenos: list[int] = []
    bad = 0
    for lineno, line in data:
        parts = line.split()
        reason = None
        if len(parts) != _N:
            reason = f"expected {_N} whitespace-separated SWF fields, found {len(parts)}"
            if not rows and len(parts) < _N // 2:
                reason += " (is this a Standard Workload Format trace?)"
        else:
            vals = []
            for k, s in enumerate(parts):
                try:
                    v = float(s)
                except ValueError:
                    reason = f"field {k + 1} ({SWF_FIELDS[k]}) is {s!r}, not a number"
                    break
                if not math.isfinite(v):
                    reason = f"field {k + 1} ({SWF_FIELDS[k]}) is {s!r}, not a finite number"
                    break
                vals.append(v)
        if reason is not None:
            if skip:
                bad += 1
                continue
            raise SwfError(path, lineno, reason)
        rows.append(vals)
        linenos.append(lineno)
    arr = np.array(rows, dtype=np.float64).reshape(-1, _N)
    return arr, bad, linenos


def read_swf(
    path: str | os.PathLike,
    *,
    n_nodes: int | None = None,
    cores_per_node: int = 1,
    skip_malformed: bool = False,
    limit: int | None = None,
    reject_too_large: bool = True,
) -> SwfTrace:
    """Read and filter an SWF trace (``.swf`` or ``.swf.gz``).

    Args:
        n_nodes: the machine size in nodes; default from the header (see module docstring).
        cores_per_node: processes per node; a job needs ``ceil(procs / cores_per_node)`` nodes.
        skip_malformed: skip and count malformed job lines instead of raising.
        limit: read only the first ``limit`` job lines (well-formed or not; for quick
            studies): the filter counts, ``records`` and any malformed-line error concern
            those lines only.
        reject_too_large: reject the jobs larger than the machine (default). False keeps
            them all (``n_nodes`` is then the header's size, or 0 when it gives none): for
            callers that size jobs themselves and count what does not fit.

    Raises:
        SwfError: a malformed line (file, line number, reason) or a file that is not SWF.
        SwfMachineSizeError: no machine size in the header or the arguments (callers
            with options of their own name them: :meth:`~SwfMachineSizeError.naming`).
        UserError: a missing file or bad arguments.
    """
    if isinstance(cores_per_node, bool) or not isinstance(cores_per_node, int) or cores_per_node < 1:
        raise UserError(f"cores_per_node must be an int >= 1, got {cores_per_node!r}")
    if n_nodes is not None and (isinstance(n_nodes, bool) or not isinstance(n_nodes, int) or n_nodes < 1):
        raise UserError(f"the machine size must be an int >= 1 nodes, got {n_nodes!r}; give e.g. n_nodes=128")
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise UserError(f"limit must be an int >= 0, got {limit!r}")
    p = _check_path(path)
    spath = str(p)
    text = _open_text(p)
    header = SwfHeader()
    data: list[tuple[int, str]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        if s[0] == ";":
            parse_header_line(s, header)
            continue
        data.append((lineno, s))
    if not data and not header.values and not header.comments:
        raise SwfError(spath, 0, "the file is empty: an SWF trace has ';' header lines and 18-field job lines")
    if limit is not None:
        data = data[:limit]
    malformed = 0
    records = None
    linenos = [ln for ln, _ in data]
    if data:
        try:
            records = np.loadtxt(io.StringIO("\n".join(s for _, s in data)), dtype=np.float64, ndmin=2,
                                 comments=None)
            if records.shape[1] != _N or not np.isfinite(records).all():
                records = None
        except ValueError:
            records = None
        if records is None:
            records, malformed, linenos = _parse_rows_slow(spath, data, skip_malformed)
    else:
        records = np.zeros((0, _N), dtype=np.float64)

    if n_nodes is None:
        n_nodes = header.machine_nodes(cores_per_node)
        if n_nodes is None and not reject_too_large:
            n_nodes = 0
        elif n_nodes is None:
            raise SwfMachineSizeError(spath, "n_nodes=N")

    rep = SwfReport(lines=len(records) + malformed, malformed=malformed)
    records_read = records
    records, rep.partial_records = _fold_partials(spath, records, linenos)
    run = records[:, _RUN]
    submit = records[:, _SUBMIT]
    reqp = records[:, _REQP]
    alloc = records[:, _ALLOC]
    reqt = records[:, _REQT]
    status = records[:, _STATUS]
    cancelled = (status == 5) & (run <= 0)
    no_run = ~cancelled & (run < 0)
    no_submit = ~cancelled & ~no_run & (submit < 0)
    procs = np.where(reqp > 0, reqp, alloc)
    no_procs = ~cancelled & ~no_run & ~no_submit & (procs <= 0)
    keep = ~(cancelled | no_run | no_submit | no_procs)
    rep.cancelled = int(cancelled.sum())
    rep.no_run_time = int(no_run.sum())
    rep.cancelled_after_start = int((keep & (status == 5)).sum())
    rep.no_submit = int(no_submit.sum())
    rep.no_processors = int(no_procs.sum())
    rep.procs_from_allocated = int((keep & (reqp <= 0)).sum())
    rep.request_from_runtime = int((keep & (reqt <= 0)).sum())
    procs_i = np.ceil(procs).astype(np.int64)
    request = np.where(reqt > 0, reqt, run)
    nodes = -(-procs_i // cores_per_node)
    too_large = keep & (nodes > n_nodes) if reject_too_large else np.zeros(len(keep), dtype=bool)
    rep.too_large = int(too_large.sum())
    fits = keep & ~too_large
    rep.kept = int(fits.sum())
    rep.overrun = int((fits & (run > request)).sum())
    rep.zero_runtime = int((fits & (run == 0)).sum())

    queue_names = {q: name for q, name in header.queues.items()}
    jobs: list[Job] = []
    rejected: list[Job] = []
    ids = records[:, _JOB].astype(np.int64).tolist()
    users = records[:, _USER].astype(np.int64).tolist()
    groups = records[:, _GROUP].astype(np.int64).tolist()
    queues = records[:, _QUEUE].astype(np.int64).tolist()
    parts = records[:, _PART].astype(np.int64).tolist()
    precs = records[:, _PREC].astype(np.int64).tolist()
    thinks = records[:, _THINK].tolist()
    submit_l = submit.tolist()
    run_l = run.tolist()
    req_l = request.tolist()
    procs_l = procs_i.tolist()
    nodes_l = nodes.tolist()
    too_large_l = too_large.tolist()
    for i in np.flatnonzero(keep).tolist():
        q = queues[i]
        # The filter above checked every value as a whole, so the per-job checks are skipped.
        job = Job.build(job_id=ids[i], job_size=procs_l[i], nodes=nodes_l[i], submit_time=submit_l[i],
                        request_time=req_l[i], run_time=run_l[i],
                        queue_name="" if q < 0 else queue_names.get(q, str(q)), user=users[i], group=groups[i],
                        partition=parts[i], preceding_job=precs[i], think_time=thinks[i], validate=False)
        if too_large_l[i]:
            job.status = JobStatus.REJECTED
            rejected.append(job)
        else:
            jobs.append(job)
    return SwfTrace(spath, header, records_read, jobs, rejected, rep, int(n_nodes), cores_per_node)


_PARTIAL = (2.0, 3.0, 4.0)


def _fold_partials(path: str, records: np.ndarray, linenos: list[int]) -> tuple[np.ndarray, int]:
    """One row per job: the partial-execution lines of a job folded into it (see the
    module docstring); returns (rows, part lines folded). Raises :class:`SwfError` with the
    line numbers of contradicting lines."""
    ids = records[:, _JOB]
    if len(ids) == 0:
        return records, 0
    partial = np.isin(records[:, _STATUS], _PARTIAL)
    uniq, counts = np.unique(ids, return_counts=True)
    if not partial.any() and (counts == 1).all():
        return records, 0  # the common case: one line per job
    records = records.copy()  # the rows as read stay in SwfTrace.records
    repeated = set(uniq[counts > 1].tolist()) | set(ids[partial].tolist())
    rows: dict[float, list[int]] = {}
    for i in np.flatnonzero(np.isin(ids, list(repeated))).tolist():
        rows.setdefault(float(ids[i]), []).append(i)
    drop: list[int] = []
    folded = 0
    for jid, idx in rows.items():
        job = int(jid)
        summary = [i for i in idx if not partial[i]]
        part_rows = [i for i in idx if partial[i]]
        if len(summary) > 1:
            a, b = (linenos[i] for i in summary[:2])
            raise SwfError(path, b, f"job {job} is also on line {a}, and neither line is a partial-execution "
                                    "record (status 2, 3 or 4): a job number names one job")
        for field, what in ((_SUBMIT, "submit time"), (_REQP, "requested processors"), (_USER, "user")):
            vals = {records[i, field] for i in idx}
            if len(vals) > 1:
                first = idx[0]
                other = next(i for i in idx if records[i, field] != records[first, field])
                raise SwfError(path, linenos[other],
                               f"job {job}: {what} {_fmt(records[other, field])} contradicts "
                               f"{_fmt(records[first, field])} on line {linenos[first]} (lines of one job, "
                               "its partial executions included, must agree)")
        for k, i in enumerate(part_rows[:-1]):
            if records[i, _STATUS] != 2.0:
                raise SwfError(path, linenos[part_rows[k + 1]],
                               f"job {job}: line {linenos[i]} is its last partial execution "
                               f"(status {int(records[i, _STATUS])}) but this line continues it")
        folded += len(part_rows)
        if summary:
            drop.extend(part_rows)
            continue
        # No summary line: the first part stands for the job, with the parts' total run time.
        first = part_rows[0]
        runs = records[part_rows, _RUN]
        records[first, _RUN] = float(runs[runs > 0].sum()) if (runs >= 0).any() else -1.0
        records[first, _STATUS] = 1.0 if records[part_rows[-1], _STATUS] == 3.0 else 0.0
        drop.extend(part_rows[1:])
        folded -= 1
    if not drop:
        return records, folded
    keep = np.ones(len(records), dtype=bool)
    keep[drop] = False
    return records[keep], folded


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def write_swf(
    path: str | os.PathLike,
    jobs: Iterable[Job],
    *,
    max_nodes: int | None = None,
    max_procs: int | None = None,
    comments: Sequence[str] = (),
) -> int:
    """Write ``jobs`` as an SWF file (gzip-compressed when the name ends in ``.gz``).

    Fields the jobs do not carry are written as ``-1``. A simulated job is written as the
    simulation ran it: its wait (field 3) and run time (field 4, end - start: a job killed
    at its requested time has the killed run time) and its status (field 11: 1 completed,
    0 killed or failed, 5 rejected: never ran, wait and run time ``-1``). A job not yet
    simulated keeps its trace run time. Returns the number of job lines written.
    """
    out = io.StringIO()
    out.write("; Version: 2.2\n")
    for c in comments:
        out.write(f"; {c}\n")
    if max_nodes is not None:
        out.write(f"; MaxNodes: {int(max_nodes)}\n")
    if max_procs is not None:
        out.write(f"; MaxProcs: {int(max_procs)}\n")
    n = 0
    for j in jobs:
        wait = -1.0 if j.start_time is None else j.start_time - j.submit_time
        run = j.run_time
        status = -1
        if j.status == JobStatus.COMPLETED:
            status = 1
        elif j.status in (JobStatus.KILLED, JobStatus.FAILED):
            status = 0
        elif j.status == JobStatus.REJECTED:
            status, run = 5, -1.0
        if j.start_time is not None and j.end_time is not None:
            run = j.end_time - j.start_time
        fields = (j.job_id, _num(j.submit_time), _num(wait), _num(run), j.job_size, -1, -1,
                  j.job_size, _num(j.request_time), -1, status, j.user, j.group, -1, -1, j.partition,
                  j.preceding_job, _num(j.think_time))
        out.write(" ".join(str(f) for f in fields) + "\n")
        n += 1
    data = out.getvalue().encode()
    p = Path(path)
    if p.suffix == ".gz":
        with gzip.open(p, "wb") as f:
            f.write(data)
    else:
        p.write_bytes(data)
    return n


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))
