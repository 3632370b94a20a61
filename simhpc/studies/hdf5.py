"""The interference-study results file: :func:`write_study` and :func:`read_study`.

Schema ``simhpc-study``, version 1 (``docs/studies.md`` lists every column)::

    /                        attrs: schema, schema_version, simhpc_version, name, mode, created
    /config/study.toml       UTF-8 string: the study as TOML (``simhpc study`` can run it again)
    /machine                 attrs: name, nodes, family, routers, links, cores_per_node, routing
    /foreground              attrs: app, ranks, args (JSON), ranks_per_node, allocator
    /runs/<column>           one row per (k, seed) run (attrs unit, description)
    /runs/fg_nodes_ptr       int64, runs + 1: CSR row pointer of the foreground's nodes
    /runs/fg_nodes_list      int64: the foreground's nodes of every run, concatenated
    /hot_links/<column>      the busiest links on the foreground's routes, per run
    /summary/<column>        per number of background jobs: k, runs, ok and the spread of
                             slowdown and runtimes (derived from /runs; written for readers
                             of the file, recomputed on reading)
    /info                    attrs: wall_s, ranks, parallel, simhpc, network

Strings are stored as UTF-8 variable-length strings. The file is written atomically: to a
temporary file in the same folder, renamed onto the final name once complete.
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path
from typing import Any

import numpy as np

from scheduler.errors import UserError
from ..outputs import OutputPathError, temp_sibling, write_target
from .results import HOT_COLUMNS, RUN_COLUMNS, SCHEMA_NAME, SCHEMA_VERSION, StudyResults

__all__ = ["StudyFileError", "read_study", "write_study", "SUMMARY_COLUMNS"]

#: /summary columns: name -> (unit, description).
SUMMARY_COLUMNS: dict[str, tuple[str, str]] = {
    "k": ("jobs", "background jobs (static: asked for; trace: met by the foreground)"),
    "runs": ("", "runs with this k"),
    "ok": ("", "runs that finished (status ok)"),
    "slowdown_median": ("", "median of runtime / alone over the ok runs"),
    "slowdown_mean": ("", "mean of runtime / alone"),
    "slowdown_q25": ("", "25th percentile of runtime / alone"),
    "slowdown_q75": ("", "75th percentile of runtime / alone"),
    "slowdown_min": ("", "smallest runtime / alone"),
    "slowdown_max": ("", "largest runtime / alone"),
    "runtime_median": ("s", "median foreground runtime with background"),
    "alone_median": ("s", "median runtime alone"),
    "ideal_median": ("s", "median runtime on the ideal network"),
}


class StudyFileError(UserError):
    """A study file is missing, not HDF5, of another schema or version, or damaged."""


def _h5py() -> Any:
    import h5py

    return h5py


def _str_dtype() -> Any:
    return _h5py().string_dtype("utf-8")


def _write_columns(g: Any, cols: dict[str, np.ndarray], spec: dict[str, tuple[str, ...]]) -> None:
    for name, meta in spec.items():
        unit, desc = meta[-2], meta[-1]
        v = cols[name]
        if v.dtype == object or v.dtype.kind in "US":
            ds = g.create_dataset(name, data=np.array([str(x) for x in v], dtype=object), dtype=_str_dtype())
        else:
            ds = g.create_dataset(name, data=v)
        ds.attrs["unit"] = unit
        ds.attrs["description"] = desc


def _summary_columns(res: StudyResults) -> dict[str, np.ndarray]:
    rows = res.by_k()

    def col(f: Any) -> np.ndarray:
        return np.array([np.nan if f(r) is None else f(r) for r in rows], dtype=float)

    return {
        "k": np.array([r["k"] for r in rows], dtype=np.int64),
        "runs": np.array([r["runs"] for r in rows], dtype=np.int64),
        "ok": np.array([r["ok"] for r in rows], dtype=np.int64),
        "slowdown_median": col(lambda r: r["slowdown"]["median"]),
        "slowdown_mean": col(lambda r: r["slowdown"]["mean"]),
        "slowdown_q25": col(lambda r: r["slowdown"]["q25"]),
        "slowdown_q75": col(lambda r: r["slowdown"]["q75"]),
        "slowdown_min": col(lambda r: r["slowdown"]["min"]),
        "slowdown_max": col(lambda r: r["slowdown"]["max"]),
        "runtime_median": col(lambda r: r["runtime"]["median"]),
        "alone_median": col(lambda r: r["alone"]["median"]),
        "ideal_median": col(lambda r: r["ideal"]["median"]),
    }


def write_study(res: StudyResults, path: str | os.PathLike[str], *, created: str | None = None) -> Path:
    """Write ``res`` to the HDF5 file ``path`` atomically; returns the path. Only a regular
    file is replaced (a symbolic link to one is written through), as for results files.

    ``created`` (default: now, UTC, ISO 8601) is the only time-dependent content.
    """
    h5py = _h5py()
    if os.fspath(path) == "":
        raise StudyFileError("an empty file name; give one such as study.h5")
    path = Path(path)
    if path.is_dir():
        raise StudyFileError(f"{path}: is a directory; give a file name such as study.h5")
    try:
        # A symbolic link to a regular file is written through; a device, FIFO, dangling link... is refused.
        target = write_target(path)
    except OutputPathError as exc:
        raise StudyFileError(str(exc)) from None
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise StudyFileError(f"{path}: the folder {str(folder)!r} does not exist")
    tmp = temp_sibling(target)
    try:
        with h5py.File(tmp, "x", track_order=True) as f:
            f.attrs["schema"] = SCHEMA_NAME
            f.attrs["schema_version"] = SCHEMA_VERSION
            f.attrs["simhpc_version"] = str(res.info.get("simhpc", ""))
            f.attrs["name"] = res.name
            f.attrs["mode"] = res.mode
            f.attrs["created"] = created if created is not None else _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
            cfg = f.create_group("config")
            cfg.create_dataset("study.toml", data=res.study_toml, dtype=_str_dtype())
            for gname, d in (("machine", res.machine), ("foreground", res.foreground), ("info", res.info)):
                g = f.create_group(gname)
                for k, v in d.items():
                    g.attrs[k] = "" if v is None else v
            runs = f.create_group("runs")
            _write_columns(runs, res.runs, RUN_COLUMNS)
            ds = runs.create_dataset("fg_nodes_ptr", data=np.asarray(res.fg_nodes_ptr, dtype=np.int64))
            ds.attrs["unit"] = ""
            ds.attrs["description"] = "CSR row pointer: run i's foreground nodes are fg_nodes_list[ptr[i]:ptr[i+1]]"
            ds = runs.create_dataset("fg_nodes_list", data=np.asarray(res.fg_node_ids, dtype=np.int64))
            ds.attrs["unit"] = "node"
            ds.attrs["description"] = "the foreground's nodes of every run, concatenated"
            _write_columns(f.create_group("hot_links"), res.hot, HOT_COLUMNS)
            _write_columns(f.create_group("summary"), _summary_columns(res), SUMMARY_COLUMNS)
        # Checked again now: the path may have become something else during the study.
        if write_target(path) != target:
            raise StudyFileError(f"{path}: changed during the run (it now points elsewhere); not replaced")
        os.replace(tmp, target)
    except OutputPathError as exc:
        tmp.unlink(missing_ok=True)
        raise StudyFileError(str(exc)) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _read_columns(g: Any, spec: dict[str, tuple[str, str, str]], path: Any) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, (dt, _, _) in spec.items():
        if name not in g:
            raise StudyFileError(f"{path}: dataset {g.name}/{name} is missing (damaged file?)")
        v = g[name][()]
        if dt == "str":
            out[name] = np.array([x.decode("utf-8") if isinstance(x, bytes) else str(x) for x in v], dtype=object)
        else:
            out[name] = np.asarray(v, dtype=dt)
    return out


def _attrs(g: Any) -> dict[str, Any]:
    out = {}
    for k, v in g.attrs.items():
        if isinstance(v, bytes):
            v = v.decode("utf-8")
        elif isinstance(v, np.generic):
            v = v.item()
        out[k] = v
    return out


def read_study(path: str | os.PathLike[str]) -> StudyResults:
    """Read a file written by :func:`write_study`."""
    h5py = _h5py()
    p = os.fspath(path)
    if not os.path.exists(p):
        raise StudyFileError(f"{p}: no such file")
    try:
        f = h5py.File(p, "r")
    except OSError:
        raise StudyFileError(f"{p}: not an HDF5 file") from None
    with f:
        schema = f.attrs.get("schema")
        if isinstance(schema, bytes):
            schema = schema.decode()
        if schema != SCHEMA_NAME:
            raise StudyFileError(f"{p}: schema {schema!r}, expected {SCHEMA_NAME!r} (is it an interference-study file?)")
        ver = int(f.attrs.get("schema_version", -1))
        if ver != SCHEMA_VERSION:
            raise StudyFileError(f"{p}: schema version {ver}; this simhpc reads version {SCHEMA_VERSION}")
        try:
            toml = f["config/study.toml"][()]
            runs = _read_columns(f["runs"], RUN_COLUMNS, p)
            ptr = np.asarray(f["runs/fg_nodes_ptr"][()], dtype=np.int64)
            ids = np.asarray(f["runs/fg_nodes_list"][()], dtype=np.int64)
            hot = _read_columns(f["hot_links"], HOT_COLUMNS, p)
            machine, fg, info = _attrs(f["machine"]), _attrs(f["foreground"]), _attrs(f["info"])
        except KeyError as exc:
            raise StudyFileError(f"{p}: {exc} (damaged file?)") from None
        name = f.attrs["name"]
        mode = f.attrs["mode"]
    return StudyResults(
        name=name.decode() if isinstance(name, bytes) else str(name), mode=mode.decode() if isinstance(mode, bytes) else str(mode),
        study_toml=toml.decode("utf-8") if isinstance(toml, bytes) else str(toml), machine=machine,
        foreground=fg, runs=runs, fg_nodes_ptr=ptr, fg_node_ids=ids, hot=hot, info=info,
    )

