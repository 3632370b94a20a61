"""The HDF5 results file: :func:`write_results` and :func:`read_results`.

One file holds one experiment's :class:`~simhpc.results.model.Results`. Layout (schema
``simhpc-results``, version :data:`~simhpc.results.model.SCHEMA_VERSION`; the full
description with every column and unit is ``docs/results.md``)::

    /                       attrs: schema, schema_version, simhpc_version, name, seed, created
    /config/experiment.toml UTF-8 string: the experiment as TOML
    /config/machine         attrs: the machine summary (nested dicts as subgroups)
    /jobs/<column>          one dataset per job column (attrs unit, description)
    /jobs/nodes_ptr         int, n_jobs + 1: CSR row pointer of the allocations
    /jobs/nodes_list        int: the nodes of all jobs, concatenated
    /system                 attrs: scalar system metrics
    /system/<series>        the system time series (attrs unit, description)
    /network                attrs: network model figures
    /network/links/<column> per-link arrays (only when the run had a network)
    /run                    attrs: run statistics; lists (e.g. events_per_rank) as datasets

Dict-valued fields (``machine``, ``system``, ``network``, ``run``) are stored generically: a
scalar (str, int, float, bool) is an attribute, None is an empty attribute, a list, tuple or
numpy array is a dataset whose attribute ``python_type`` says which, a nested dict is a
subgroup, and anything else is a dataset of JSON text (``python_type = "json"``).

The file is written atomically: to a temporary file in the same directory, which is renamed
onto the final name only once it is complete, so a crash never leaves a half-written file
under the final name (an earlier file of that name stays intact). Only a regular file is
replaced: a device, FIFO, socket or dangling symbolic link is refused; a symbolic link to a
regular file is written through (the file it points to is replaced, the link stays).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from pdes.validate import is_int
from scheduler.errors import UserError
from ..outputs import OutputPathError, temp_sibling, write_target
from .model import JOB_COLUMNS, LINK_COLUMNS, SCHEMA_NAME, SCHEMA_VERSION, SERIES, Results

__all__ = ["ResultsFileError", "write_results", "read_results", "read_file_info", "NODES_PTR", "NODES_LIST"]

#: Names of the allocation CSR datasets inside ``/jobs``.
NODES_PTR = "nodes_ptr"
NODES_LIST = "nodes_list"

# Numeric datasets at least this long are stored chunked and gzip-compressed (deterministic).
_COMPRESS_MIN = 4096


class ResultsFileError(UserError):
    """A results file is missing, not HDF5, of another schema or version, or damaged.

    The message names the file and says what is wrong, on one line.
    """

    def __init__(self, path: str | os.PathLike[str], reason: str):
        super().__init__(f"{os.fspath(path)}: {reason}")
        self.path = os.fspath(path)
        self.reason = reason


def _h5py() -> Any:
    import h5py

    return h5py


# ----------------------------------------------------------------------------- writing
def write_results(results: Results, path: str | os.PathLike[str], *, created: str | None = None) -> Path:
    """Write ``results`` to the HDF5 file ``path`` (atomically); returns the path.

    ``created`` is the text of the root attribute of that name (default: the current UTC
    time, ISO 8601). It is the only time-dependent content: two writes of the same results
    with the same ``created`` give byte-identical files.

    Raises :class:`ResultsFileError` when ``path`` is a directory, a device, a FIFO, a dangling
    symbolic link (anything but a regular file or a link to one) or its directory does not
    exist, and ``ValueError``/``TypeError`` when ``results`` does not fit the schema (a job
    column of the wrong type, link arrays of different lengths, ...).
    """
    p = Path(path)
    if os.fspath(path) == "":
        raise ResultsFileError(p, "an empty file name; give one such as results.h5")
    if p.is_dir():
        raise ResultsFileError(p, "is a directory; give a file name such as results.h5")
    try:
        # A symbolic link to a regular file is written through; a device, FIFO, dangling link... is refused.
        target = write_target(p)
    except OutputPathError as exc:
        raise ResultsFileError(p, exc.reason) from None
    directory = target.parent
    if not directory.is_dir():
        raise ResultsFileError(p, f"directory {os.fspath(directory) or '.'} does not exist")
    h5py = _h5py()
    tmp = temp_sibling(target)
    try:
        with h5py.File(tmp, "x", track_order=True) as f:
            _write_file(f, results, created)
        _fsync_path(tmp)
        # Checked again now: the path may have become something else during the run.
        if write_target(p) != target:
            raise ResultsFileError(p, "changed during the run (it now points elsewhere); not replaced")
        os.replace(tmp, target)
    except OutputPathError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise ResultsFileError(p, exc.reason) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)
    return p


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; not every platform can open a directory.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_file(f: Any, r: Results, created: str | None) -> None:
    from .. import __version__

    f.attrs["schema"] = SCHEMA_NAME
    f.attrs["schema_version"] = SCHEMA_VERSION
    f.attrs["simhpc_version"] = str(__version__)
    f.attrs["name"] = str(r.name)
    f.attrs["seed"] = int(r.seed)
    # The only time-dependent content of the file; comparisons ignore it.
    if created is None:
        created = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    f.attrs["created"] = str(created)

    config = f.create_group("config", track_order=True)
    config.create_dataset("experiment.toml", data=str(r.experiment_toml), dtype=_str_dtype())
    _write_dict(config.create_group("machine", track_order=True), r.machine, "machine")

    _write_jobs(f.create_group("jobs", track_order=True), r)

    system = f.create_group("system", track_order=True)
    clash = sorted(set(r.system) & set(r.series))
    if clash:
        raise ValueError(f"Results.system and Results.series share the name(s) {', '.join(clash)}")
    _write_dict(system, r.system, "system")
    for name in _ordered(r.series, SERIES):
        unit, desc = SERIES.get(name, ("", ""))
        _write_array(system, name, np.asarray(r.series[name]), unit, desc)

    network = f.create_group("network", track_order=True)
    if "links" in r.network:
        raise ValueError("Results.network may not have a key 'links' (the name of the per-link group)")
    _write_dict(network, r.network, "network")
    if r.links is not None:
        links = network.create_group("links", track_order=True)
        lengths = {k: len(v) for k, v in r.links.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"Results.links arrays differ in length: {lengths}")
        for name in _ordered(r.links, LINK_COLUMNS):
            unit, desc = LINK_COLUMNS.get(name, ("", ""))
            _write_array(links, name, np.asarray(r.links[name]), unit, desc)

    _write_dict(f.create_group("run", track_order=True), r.run, "run")


def _ordered(d: dict[str, Any], declared: dict[str, Any]) -> list[str]:
    """Keys of ``d``: the declared ones in declaration order, then the others in ``d``'s order."""
    return [k for k in declared if k in d] + [k for k in d if k not in declared]


def _str_dtype() -> Any:
    return _h5py().string_dtype("utf-8")


def _write_jobs(g: Any, r: Results) -> None:
    g.attrs["n_jobs"] = int(r.n_jobs)
    for name in _ordered(r.jobs, JOB_COLUMNS):
        col = r.jobs[name]
        if name in JOB_COLUMNS:
            dtype, unit, desc = JOB_COLUMNS[name]
            data = _job_column(name, col, dtype)
        else:
            if name in (NODES_PTR, NODES_LIST):
                raise ValueError(f"Results.jobs may not have a column named {name!r} (reserved for the allocations)")
            unit, desc = "", ""
            data = np.asarray(col)
        _write_array(g, name, data, unit, desc)
    ptr = np.asarray(r.job_nodes_ptr)
    nodes = np.asarray(r.job_nodes)
    for what, a in (("job_nodes_ptr", ptr), ("job_nodes", nodes)):
        if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
            raise TypeError(f"Results.{what} must be a 1-d integer array, got {a.dtype} of shape {a.shape}")
    if ptr[0] != 0 or ptr[-1] != len(nodes) or (np.diff(ptr) < 0).any():
        raise ValueError("Results.job_nodes_ptr must rise from 0 to len(job_nodes)")
    _write_array(g, NODES_PTR, ptr if ptr.size else ptr.astype(np.int64), "",
                 "CSR row pointer: job i ran on nodes_list[nodes_ptr[i]:nodes_ptr[i+1]]")
    _write_array(g, NODES_LIST, nodes if nodes.size else nodes.astype(np.int64), "node",
                 "the nodes of every job, concatenated in job order")


def _job_column(name: str, col: Any, dtype: str) -> np.ndarray:
    a = np.asarray(col)
    if a.ndim != 1:
        raise TypeError(f"job column {name!r} must be 1-d, got shape {a.shape}")
    if dtype == "str":
        a = a.astype(object) if a.dtype.kind in "OU" else a
        if a.dtype.kind != "O" or not all(isinstance(x, str) for x in a.tolist()):
            raise TypeError(f"job column {name!r} must hold strings")
        return a
    if len(a) == 0:
        return a.astype(dtype)
    if not np.can_cast(a.dtype, dtype, casting="safe"):
        raise TypeError(f"job column {name!r} must be {dtype}, got {a.dtype}")
    return a.astype(dtype, copy=False)


def _write_array(g: Any, name: str, a: np.ndarray, unit: str | None = None, desc: str | None = None,
                 python_type: str | None = None) -> Any:
    kw: dict[str, Any] = {"track_times": False}
    if a.dtype.kind in "OU":
        a = a.astype(object)
        kw["dtype"] = _str_dtype()
    elif a.dtype.kind in "biuf" and a.size >= _COMPRESS_MIN:
        kw.update(chunks=True, compression="gzip", compression_opts=4, shuffle=True)
    elif a.dtype.kind not in "biuf":
        raise TypeError(f"{g.name}/{name}: cannot store an array of dtype {a.dtype}")
    ds = g.create_dataset(name, data=a, **kw)
    if unit is not None:
        ds.attrs["unit"] = unit
    if desc is not None:
        ds.attrs["description"] = desc
    if python_type is not None:
        ds.attrs["python_type"] = python_type
    return ds


def _check_key(key: Any, where: str) -> str:
    if not isinstance(key, str) or not key or "/" in key or key == ".":
        raise ValueError(f"{where}: key {key!r} cannot be an HDF5 name (a non-empty string without '/')")
    return key


def _write_dict(g: Any, d: dict[str, Any], where: str) -> None:
    h5py = _h5py()
    for key, v in d.items():
        name = _check_key(key, where)
        here = f"{where}[{name!r}]"
        if v is None:
            g.attrs[name] = h5py.Empty("f8")
        elif isinstance(v, (bool, np.bool_)):
            g.attrs[name] = bool(v)
        elif isinstance(v, (int, np.integer)):
            g.attrs[name] = np.int64(v)
        elif isinstance(v, (float, np.floating)):
            g.attrs[name] = np.float64(v)
        elif isinstance(v, str):
            g.attrs[name] = v
        elif isinstance(v, dict):
            _write_dict(g.create_group(name, track_order=True), v, here)
        elif isinstance(v, (list, tuple, np.ndarray)):
            ptype = "ndarray" if isinstance(v, np.ndarray) else type(v).__name__
            a = _plain_array(v)
            if a is None:
                _write_json(g, name, v, here)
            else:
                _write_array(g, name, a, python_type=ptype)
        else:
            _write_json(g, name, v, here)


def _plain_array(v: Any) -> np.ndarray | None:
    """``v`` as a numeric or string array, or None when it is not one (ragged, mixed, dicts)."""
    if isinstance(v, np.ndarray):
        return v if v.dtype.kind in "biufU" or (v.dtype.kind == "O" and _all_str(v)) else None
    if len(v) == 0:
        return np.zeros(0, dtype=np.float64)
    try:
        a = np.asarray(v)
    except ValueError:
        return None
    if a.dtype.kind in "biuf":
        # asarray promotes mixed int/float; a list is stored only when it comes back the same.
        return a if _nested_equal(a.tolist(), v) else None
    if a.dtype.kind == "U" and _all_str(np.asarray(v, dtype=object).ravel()):
        return a
    return None


def _all_str(a: np.ndarray) -> bool:
    return all(isinstance(x, str) for x in a.ravel().tolist())


def _nested_equal(x: Any, y: Any) -> bool:
    if isinstance(y, (list, tuple)):
        return isinstance(x, list) and len(x) == len(y) and all(_nested_equal(a, b) for a, b in zip(x, y))
    if type(x) is not type(y):
        return False
    return x == y or (isinstance(x, float) and x != x and y != y)


def _write_json(g: Any, name: str, v: Any, where: str) -> None:
    try:
        text = json.dumps(v, default=_json_default)
    except TypeError as exc:
        raise TypeError(f"{where}: cannot store a value of type {type(v).__name__} ({exc})") from None
    ds = g.create_dataset(name, data=text, dtype=_str_dtype(), track_times=False)
    ds.attrs["python_type"] = "json"


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


# ----------------------------------------------------------------------------- reading
@contextlib.contextmanager
def _open(path: str | os.PathLike[str]) -> Iterator[Any]:
    """Open a results file for reading after checking it is one this simhpc can read."""
    p = Path(path)
    if not p.exists():
        raise ResultsFileError(p, "no such file")
    if p.is_dir():
        raise ResultsFileError(p, "is a directory, not a results file")
    if not os.access(p, os.R_OK):
        raise ResultsFileError(p, "cannot read it (permission denied)")
    h5py = _h5py()
    try:
        is_h5 = h5py.is_hdf5(p)
    except OSError as exc:
        raise ResultsFileError(p, f"cannot read it ({exc.strerror or exc})") from None
    if not is_h5:
        raise ResultsFileError(p, "not an HDF5 file (simhpc results files are HDF5, written by simhpc run)")
    try:
        f = h5py.File(p, "r")
    except OSError as exc:
        raise ResultsFileError(p, f"cannot open it as HDF5 ({exc})") from None
    with f:
        schema = _scalar(f.attrs.get("schema"))
        if schema != SCHEMA_NAME:
            found = "no schema attribute" if schema is None else f"schema {schema!r}"
            raise ResultsFileError(p, f"an HDF5 file but not a simhpc results file ({found}; expected {SCHEMA_NAME!r})")
        version = _scalar(f.attrs.get("schema_version"))
        if not is_int(version) or version < 1:
            raise ResultsFileError(p, f"bad schema_version {version!r} (a whole number >= 1 expected)")
        if version > SCHEMA_VERSION:
            made = _scalar(f.attrs.get("simhpc_version"))
            raise ResultsFileError(p, f"results schema version {version} (written by simhpc {made}) is newer than "
                                      f"this simhpc reads (up to {SCHEMA_VERSION}); upgrade simhpc")
        try:
            yield f
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, UserError):
                raise
            raise ResultsFileError(p, f"damaged or incomplete results file ({exc})") from None


def read_file_info(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The root attributes of a results file (schema, schema_version, simhpc_version, name,
    seed, created), checked like :func:`read_results` does."""
    with _open(path) as f:
        return {k: _scalar(v) for k, v in f.attrs.items()}


def read_results(path: str | os.PathLike[str]) -> Results:
    """Read a results file written by :func:`write_results`.

    Raises :class:`ResultsFileError` (one line naming the file) when the file is missing, is
    not HDF5, is of another schema or of a newer schema version, or is damaged.
    """
    with _open(path) as f:
        for group in ("config", "jobs", "system", "network", "run"):
            if group not in f:
                raise ResultsFileError(path, f"damaged or incomplete results file (no /{group} group)")
        config = f["config"]
        if "experiment.toml" not in config:
            raise ResultsFileError(path, "damaged or incomplete results file (no /config/experiment.toml)")
        toml = config["experiment.toml"].asstr()[()]
        machine = _read_dict(config["machine"]) if "machine" in config else {}
        jobs, ptr, nodes = _read_jobs(f["jobs"], path)
        system_g = f["system"]
        system = _read_dict(system_g)
        series = {k: _read_array(ds) for k, ds in system_g.items()
                  if isinstance(ds, _h5py().Dataset) and "python_type" not in ds.attrs}
        _check_series(path, series)
        network_g = f["network"]
        network = _read_dict(network_g, skip=("links",))
        links = None
        if "links" in network_g:
            links = {k: _read_array(ds) for k, ds in network_g["links"].items()}
            _check_links(path, links)
        run = _read_dict(f["run"])
        seed = _scalar(f.attrs.get("seed"))
        name = _scalar(f.attrs.get("name"))
        try:
            return Results(name=str(name), experiment_toml=str(toml), seed=int(seed), machine=machine, jobs=jobs,
                           job_nodes_ptr=ptr, job_nodes=nodes, system=system, series=series, links=links,
                           network=network, run=run)
        except ValueError as exc:
            raise ResultsFileError(path, f"damaged results file ({exc})") from None


#: Job columns added after version 1 (read as NaN from files written before them):
#: ``app_run`` by schema version 2, ``alone_run`` later within version 2 (an extra column
#: that older readers ignore).
_ADDED_LATER = ("app_run", "alone_run", "estimate", "partition", "preceding_job", "think_time")


def _read_jobs(g: Any, path: Any) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    jobs: dict[str, np.ndarray] = {}
    for name, (dtype, _, _) in JOB_COLUMNS.items():
        if name not in g and name in _ADDED_LATER and NODES_PTR in g:
            # A file written before the column existed: unknown (NaN, or -1 for counts).
            jobs[name] = np.full(len(g[NODES_PTR]) - 1, np.nan if dtype == "float64" else -1, dtype=dtype)
            continue
        if name not in g:
            raise ResultsFileError(path, f"damaged or incomplete results file (no /jobs/{name})")
        a = _read_array(g[name])
        if dtype != "str":
            if a.dtype.kind in "OU" or not np.can_cast(a.dtype, dtype, casting="safe"):
                raise ResultsFileError(path, f"/jobs/{name} is {a.dtype}, expected {dtype}")
            a = a.astype(dtype, copy=False)
        elif a.dtype.kind != "O":
            raise ResultsFileError(path, f"/jobs/{name} is {a.dtype}, expected strings")
        jobs[name] = a
    for name, ds in g.items():
        if name not in JOB_COLUMNS and name not in (NODES_PTR, NODES_LIST):
            jobs[name] = _read_array(ds)
    for name in (NODES_PTR, NODES_LIST):
        if name not in g:
            raise ResultsFileError(path, f"damaged or incomplete results file (no /jobs/{name})")
    ptr, nodes = _read_array(g[NODES_PTR]), _read_array(g[NODES_LIST])
    _check_jobs(path, jobs, ptr, nodes)
    return jobs, ptr, nodes


def _damaged(path: Any, what: str) -> ResultsFileError:
    return ResultsFileError(path, f"damaged results file: {what}")


def _check_jobs(path: Any, jobs: dict[str, np.ndarray], ptr: np.ndarray, nodes: np.ndarray) -> None:
    """The job table and its allocations fit together (what ``nodes_of`` and the plots rely
    on): equal column lengths, and a CSR row pointer that rises from 0 to the node count."""
    n = len(jobs["job_id"])
    for name, a in jobs.items():
        if a.ndim != 1 or len(a) != n:
            raise _damaged(path, f"/jobs/{name} has shape {a.shape}; /jobs/job_id has {n} rows")
    for name, a in ((NODES_PTR, ptr), (NODES_LIST, nodes)):
        if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
            raise _damaged(path, f"/jobs/{name} must be a 1-d integer array, found {a.dtype} of shape {a.shape}")
    if len(ptr) != n + 1:
        raise _damaged(path, f"/jobs/{NODES_PTR} has {len(ptr)} entries; {n} jobs need {n + 1}")
    if ptr[0] != 0 or ptr[-1] != len(nodes):
        raise _damaged(path, f"/jobs/{NODES_PTR} must run from 0 to the length of /jobs/{NODES_LIST} "
                             f"({len(nodes)}), found {int(ptr[0])} .. {int(ptr[-1])}")
    step = np.diff(ptr.astype(np.int64))
    if (step < 0).any():
        i = int(np.argmax(step < 0))
        raise _damaged(path, f"/jobs/{NODES_PTR} must not decrease, found {int(ptr[i])} then {int(ptr[i + 1])} "
                             f"(jobs {i} and {i + 1})")
    if nodes.size and int(nodes.min()) < 0:
        raise _damaged(path, f"/jobs/{NODES_LIST} holds a negative node id ({int(nodes.min())})")


#: The system time series that are read together: (instants, values read at those instants).
_SERIES_GROUPS = (("busy_times", ("busy_nodes",)), ("queue_times", ("queue_lengths",)),
                  ("sample_times", ("utilization_samples", "busy_samples", "queue_samples")))


def _check_series(path: Any, series: dict[str, np.ndarray]) -> None:
    """Each system series is 1-d, and the values of a step function or of samples are as many
    as its instants, which do not decrease (the plots draw them as given)."""
    for name, a in series.items():
        if a.ndim != 1:
            raise _damaged(path, f"/system/{name} must be 1-d, found shape {a.shape}")
    for times, values in _SERIES_GROUPS:
        if times not in series:
            continue
        t = series[times]
        if t.size and (t.dtype.kind not in "iuf" or not np.all(np.diff(t.astype(np.float64)) >= 0)):
            raise _damaged(path, f"/system/{times} must be non-decreasing numbers")
        for v in values:
            if v in series and len(series[v]) != len(t):
                raise _damaged(path, f"/system/{v} has {len(series[v])} entries, /system/{times} {len(t)}")


def _check_links(path: Any, links: dict[str, np.ndarray]) -> None:
    lengths = {k: len(v) if v.ndim == 1 else None for k, v in links.items()}
    if len(set(lengths.values())) > 1 or None in lengths.values():
        raise _damaged(path, "the /network/links arrays differ in length or are not 1-d: "
                             + ", ".join(f"{k} {v if v is not None else 'not 1-d'}" for k, v in lengths.items()))


def _read_array(ds: Any) -> np.ndarray:
    if _h5py().check_string_dtype(ds.dtype) is not None:
        a = ds.asstr()[()]
        return a if isinstance(a, np.ndarray) else np.array(a, dtype=object)
    return np.asarray(ds[()])


def _scalar(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, bytes):
        return v.decode("utf-8")
    return v


def _read_dict(g: Any, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    h5py = _h5py()
    out: dict[str, Any] = {}
    for k, v in g.attrs.items():
        out[k] = None if isinstance(v, h5py.Empty) else _scalar(v)
    for k, obj in g.items():
        if k in skip:
            continue
        if isinstance(obj, h5py.Group):
            out[k] = _read_dict(obj)
            continue
        ptype = _scalar(obj.attrs.get("python_type"))
        if ptype is None:
            continue  # a series (read separately)
        if ptype == "json":
            out[k] = json.loads(obj.asstr()[()])
            continue
        a = _read_array(obj)
        if ptype == "list":
            out[k] = a.tolist()
        elif ptype == "tuple":
            out[k] = tuple(a.tolist())
        else:
            out[k] = a
    return out
