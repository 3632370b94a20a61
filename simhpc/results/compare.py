"""Exact comparison of results: the same experiment run with 1 and with P ranks must agree.

:func:`job_table_equal` checks that two job tables are bit-identical (every column, every
row; all NaNs count as equal to each other, but 0.0 and -0.0 differ). :func:`results_diff`
compares whole :class:`~simhpc.results.model.Results` and lists every difference in words,
ignoring the run statistics (wall time, ranks, events per rank) by default, since those
legitimately differ between a sequential and a parallel run.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

from .model import JOB_COLUMNS, Results

__all__ = ["job_table_diff", "job_table_equal", "results_diff", "results_equal", "arrays_identical"]

_FIELDS = ("name", "experiment_toml", "seed", "machine", "jobs", "job_nodes", "system", "series",
           "links", "network", "run")


def arrays_identical(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` hold the same values bit for bit (NaNs equal to each other).

    Numbers are compared by value across integer widths; strings by content whatever their
    numpy storage (fixed-width or object).
    """
    x = np.asarray(a)
    y = np.asarray(b)
    if x.shape != y.shape:
        return False
    if x.dtype.kind in "OUS" or y.dtype.kind in "OUS":
        return x.dtype.kind in "OU" and y.dtype.kind in "OU" and x.tolist() == y.tolist()
    if x.dtype.kind == "f" or y.dtype.kind == "f":
        if x.dtype.kind != "f" or y.dtype.kind != "f":
            return False
        x = x.astype(np.float64, copy=False)
        y = y.astype(np.float64, copy=False)
        nx, ny = np.isnan(x), np.isnan(y)
        if not np.array_equal(nx, ny):
            return False
        return bool(np.array_equal(x[~nx].view(np.uint64), y[~ny].view(np.uint64)))
    if (x.dtype.kind == "b") != (y.dtype.kind == "b"):
        return False
    return bool(np.array_equal(x, y))


def _first_difference(a: Any, b: Any) -> str:
    x = np.asarray(a)
    y = np.asarray(b)
    if x.shape != y.shape:
        return f"shape {x.shape} != {y.shape}"
    if x.dtype.kind != y.dtype.kind and not (x.dtype.kind in "OU" and y.dtype.kind in "OU") \
            and not (x.dtype.kind in "iu" and y.dtype.kind in "iu"):
        return f"dtype {x.dtype} != {y.dtype}"
    for i, (u, v) in enumerate(zip(x.ravel().tolist(), y.ravel().tolist())):
        if not _scalar_identical(u, v):
            idx = np.unravel_index(i, x.shape) if x.ndim > 1 else i
            return f"first at [{idx}]: {u!r} != {v!r}"
    return "differ"


def _scalar_identical(u: Any, v: Any) -> bool:
    if isinstance(u, float) and isinstance(v, float):
        if math.isnan(u) or math.isnan(v):
            return math.isnan(u) and math.isnan(v)
        return u == v and math.copysign(1.0, u) == math.copysign(1.0, v)
    return type(u) is type(v) and u == v


def job_table_diff(a: Results, b: Results, columns: Iterable[str] | None = None, *,
                   allocations: bool = True) -> list[str]:
    """The differences between the job tables of ``a`` and ``b``, in words; empty when they
    are bit-identical. ``columns`` limits the check (default: every column of either table);
    ``allocations`` also compares the nodes of every job."""
    out: list[str] = []
    if columns is None:
        names = list(JOB_COLUMNS) + [c for c in a.jobs if c not in JOB_COLUMNS]
        names += [c for c in b.jobs if c not in names]
    else:
        names = list(columns)
    if a.n_jobs != b.n_jobs:
        out.append(f"jobs: {a.n_jobs} rows != {b.n_jobs} rows")
        return out
    for c in names:
        if c not in a.jobs or c not in b.jobs:
            out.append(f"jobs[{c!r}]: only in {'the first' if c in a.jobs else 'the second'}")
        elif not arrays_identical(a.jobs[c], b.jobs[c]):
            out.append(f"jobs[{c!r}]: {_first_difference(a.jobs[c], b.jobs[c])}")
    if allocations:
        if not arrays_identical(a.job_nodes_ptr, b.job_nodes_ptr) or not arrays_identical(a.job_nodes, b.job_nodes):
            out.append("job_nodes: the allocations differ")
    return out


def job_table_equal(a: Results, b: Results, columns: Iterable[str] | None = None, *,
                    allocations: bool = True) -> bool:
    """True when the job tables (and, by default, the allocations) of ``a`` and ``b`` are
    bit-identical (see :func:`job_table_diff`)."""
    return not job_table_diff(a, b, columns, allocations=allocations)


def _value_diff(where: str, x: Any, y: Any, out: list[str]) -> None:
    if isinstance(x, dict) or isinstance(y, dict):
        if not (isinstance(x, dict) and isinstance(y, dict)):
            out.append(f"{where}: {type(x).__name__} != {type(y).__name__}")
            return
        for k in list(x) + [k for k in y if k not in x]:
            if k not in x or k not in y:
                out.append(f"{where}[{k!r}]: only in {'the first' if k in x else 'the second'}")
            else:
                _value_diff(f"{where}[{k!r}]", x[k], y[k], out)
        return
    seq = (list, tuple, np.ndarray)
    if isinstance(x, seq) or isinstance(y, seq):
        if not (isinstance(x, seq) and isinstance(y, seq)):
            out.append(f"{where}: {x!r} != {y!r}")
            return
        try:
            same = arrays_identical(x, y)
        except (TypeError, ValueError):
            same = x == y if not isinstance(x, np.ndarray) else False
        if not same:
            out.append(f"{where}: {_first_difference(x, y)}" if isinstance(x, np.ndarray) or isinstance(y, np.ndarray)
                       else f"{where}: {x!r} != {y!r}")
        return
    u = x.item() if isinstance(x, np.generic) else x
    v = y.item() if isinstance(y, np.generic) else y
    if isinstance(u, float) and isinstance(v, float):
        same = (math.isnan(u) and math.isnan(v)) or u == v
    else:
        same = u == v and isinstance(u, bool) == isinstance(v, bool)
    if not same:
        out.append(f"{where}: {x!r} != {y!r}")


def results_diff(a: Results, b: Results, *, ignore: Iterable[str] = ("run",)) -> list[str]:
    """Every difference between ``a`` and ``b`` in words (empty when equal).

    ``ignore`` names fields of :class:`Results` to skip (default: ``run``, whose wall time,
    ranks and per-rank figures differ between sequential and parallel runs of one experiment).
    """
    skip = set(ignore)
    unknown = skip - set(_FIELDS)
    if unknown:
        raise ValueError(f"ignore: unknown field(s) {', '.join(sorted(unknown))}; valid: {', '.join(_FIELDS)}")
    out: list[str] = []
    for f in ("name", "experiment_toml", "seed"):
        if f not in skip and getattr(a, f) != getattr(b, f):
            out.append(f"{f}: {getattr(a, f)!r} != {getattr(b, f)!r}")
    if "jobs" not in skip:
        out += job_table_diff(a, b, allocations="job_nodes" not in skip)
    elif "job_nodes" not in skip and not (arrays_identical(a.job_nodes_ptr, b.job_nodes_ptr)
                                          and arrays_identical(a.job_nodes, b.job_nodes)):
        out.append("job_nodes: the allocations differ")
    for f in ("machine", "system", "series", "network", "run"):
        if f not in skip:
            _value_diff(f, getattr(a, f), getattr(b, f), out)
    if "links" not in skip:
        if (a.links is None) != (b.links is None):
            out.append(f"links: {'absent' if a.links is None else 'present'} in the first, "
                       f"{'absent' if b.links is None else 'present'} in the second")
        elif a.links is not None:
            _value_diff("links", a.links, b.links, out)
    return out


def results_equal(a: Results, b: Results, *, ignore: Iterable[str] = ("run",)) -> bool:
    """True when :func:`results_diff` finds no difference."""
    return not results_diff(a, b, ignore=ignore)
