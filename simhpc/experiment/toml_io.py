"""Experiment files: TOML to :class:`~simhpc.experiment.spec.Experiment` and back.

Nothing in a file is evaluated as code: values are TOML data, quantities with units are
strings parsed by :mod:`models.units`. Unknown keys and bad values raise
:class:`~simhpc.experiment.spec.ConfigError` naming the file, the key and the valid
choices. ``--set key=value`` overrides (dotted keys, e.g. ``scheduler.allocator=random`` or
``apps.1.weight=2``) are applied to the data before it is checked.
"""

from __future__ import annotations

import math
import os
import tomllib
from importlib import resources
from typing import Any, Mapping, Sequence

from models.network import NetworkConfig, NetworkConfigError

from .spec import (
    AppChoice,
    ConfigError,
    Experiment,
    ForegroundSpec,
    MachineSpec,
    MetricsSpec,
    OutputSpec,
    SchedulerSpec,
    WorkloadSpec,
)

__all__ = ["load", "loads", "dumps", "default_experiment_text", "from_dict", "apply_overrides"]

TOP_KEYS = ("name", "seed", "end_time", "machine", "network", "workload", "apps", "foreground", "scheduler", "metrics",
            "output")
TABLE_CLASSES = {
    "machine": MachineSpec,
    "workload": WorkloadSpec,
    "scheduler": SchedulerSpec,
    "metrics": MetricsSpec,
    "output": OutputSpec,
}
NETWORK_KEYS = ("model", "chunk_size", "flow_segment", "flow_quantum", "send_overhead", "recv_overhead", "intra_node_bw",
                "intra_node_latency", "buffers", "buffer_size", "vcs")


def default_experiment_text() -> str:
    """The bundled default experiment (what ``simhpc run`` runs without a file)."""
    return resources.files("simhpc.experiment").joinpath("default.toml").read_text(encoding="utf-8")


def load(path: str | os.PathLike, overrides: Sequence[str] = ()) -> Experiment:
    """Read an experiment file (relative paths inside it are relative to the file)."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise ConfigError(f"experiment file {path!r} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"experiment file {path!r} is a directory") from None
    except UnicodeDecodeError:
        raise ConfigError(f"experiment file {path!r} is not UTF-8 text (is it a TOML file?)") from None
    return loads(text, source=path, overrides=overrides, base_dir=os.path.dirname(os.path.abspath(path)))


def loads(text: str, *, source: str = "<string>", overrides: Sequence[str] = (), base_dir: str = ".") -> Experiment:
    """Parse experiment TOML text."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    try:
        data = apply_overrides(data, overrides)
        return from_dict(data, base_dir=base_dir)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _check_keys(path: str, d: Any, valid: Sequence[str]) -> dict[str, Any]:
    if not isinstance(d, Mapping):
        raise ConfigError(f"{path}: must be a table, got {d!r}")
    unknown = [k for k in d if k not in valid]
    if unknown:
        raise ConfigError(f"{path or 'top level'}: unknown key(s) {', '.join(map(repr, unknown))}; valid: {', '.join(valid)}")
    return dict(d)


def _fields(cls: type, skip: tuple[str, ...] = ("base_dir",)) -> tuple[str, ...]:
    import dataclasses

    # ``skip``: fields that say where the data came from; a file does not set them.
    return tuple(f.name for f in dataclasses.fields(cls) if f.init and f.name not in skip)


def from_dict(data: Mapping[str, Any], *, base_dir: str = ".") -> Experiment:
    """Build an :class:`Experiment` from plain data (the TOML tables)."""
    d = _check_keys("", data, TOP_KEYS)
    if "machine" not in d:
        raise ConfigError("machine: missing; give [machine] preset = \"NAME\" (see `simhpc machine --list`)")
    kw: dict[str, Any] = {"base_dir": base_dir}
    for k in ("name", "seed", "end_time"):
        if k in d:
            kw[k] = d[k]
    for k, cls in TABLE_CLASSES.items():
        if k in d:
            kw[k] = cls(**_check_keys(k, d[k], _fields(cls)))
    if "network" in d:
        try:
            kw["network"] = NetworkConfig(**_check_keys("network", d["network"], NETWORK_KEYS))
        except NetworkConfigError as exc:
            raise ConfigError(f"network: {exc}") from None
    for k, cls in (("apps", AppChoice), ("foreground", ForegroundSpec)):
        if k in d:
            items = d[k]
            if not isinstance(items, list):
                raise ConfigError(f"{k}: must be an array of tables ([[{k}]]), got {items!r}")
            # Each entry is named as --set names it (apps.0), so its messages point at it.
            kw[k] = tuple(cls(**_check_keys(f"{k}.{i}", it, _fields(cls, ("path",))), path=f"{k}.{i}")
                          for i, it in enumerate(items))
    try:
        return Experiment(**kw)
    except TypeError as exc:  # pragma: no cover - every key is checked above
        raise ConfigError(str(exc)) from None


def apply_overrides(data: Mapping[str, Any], overrides: Sequence[str],
                    top_keys: Sequence[str] = TOP_KEYS) -> dict[str, Any]:
    """A copy of ``data`` with ``key.sub=value`` overrides applied (values parsed as TOML).

    ``top_keys`` are the valid first parts of a key (the experiment's tables by default;
    other file formats, such as interference studies, pass their own).
    """
    import copy

    out = copy.deepcopy(dict(data))
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set {item!r}: write KEY=VALUE, e.g. --set scheduler.allocator=random")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw.strip()
        parts = key.split(".")
        if parts[0] not in top_keys:
            raise ConfigError(f"--set {key}: unknown key {parts[0]!r}; valid: {', '.join(top_keys)}")
        node: Any = out
        for i, p in enumerate(parts[:-1]):
            nxt = parts[i + 1]
            if isinstance(node, list):
                _check_index(key, ".".join(parts[:i]), node, p)
                node = node[int(p)]
                continue
            if p not in node:
                node[p] = [] if nxt.isdigit() else {}
            node = node[p]
        last = parts[-1]
        if isinstance(node, list):
            _check_index(key, ".".join(parts[:-1]), node, last)
            node[int(last)] = value
        elif isinstance(node, dict):
            node[last] = value
        else:
            raise ConfigError(f"--set {key}: {'.'.join(parts[:-1])} is not a table")
    return out


def _check_index(key: str, where: str, items: list, index: str) -> None:
    """``index`` must select an existing entry of the array ``items`` (at ``where``)."""
    if not items:
        raise ConfigError(f"--set {key}: {where} has no entries to index (the file gives none); set the whole "
                          f"array instead, e.g. --set '{where}=[{{ ... }}]'")
    if not index.isdigit() or int(index) >= len(items):
        raise ConfigError(f"--set {key}: {where} has {len(items)} entries; use an index 0..{len(items) - 1}")


# ------------------------------------------------------------------------------- writing
def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        import json

        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_scalar(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_scalar(x)}" for k, x in v.items()) + " }" if v else "{}"
    raise ConfigError(f"cannot write {v!r} ({type(v).__name__}) to TOML")


def _key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else _scalar(k)


def _table_lines(d: Mapping[str, Any]) -> list[str]:
    return [f"{_key(k)} = {_scalar(v)}" for k, v in d.items()]


def dumps(exp: Experiment) -> str:
    """TOML text that :func:`loads` turns back into an equal :class:`Experiment`."""
    d = exp.to_dict()
    lines = [f"{_key(k)} = {_scalar(d[k])}" for k in ("name", "seed", "end_time") if k in d]
    for k in ("machine", "network", "workload", "scheduler", "metrics", "output"):
        if k in d:
            lines += ["", f"[{k}]", *_table_lines(d[k])]
    for k in ("apps", "foreground"):
        for item in d.get(k, ()):
            lines += ["", f"[[{k}]]", *_table_lines(item)]
    return "\n".join(lines) + "\n"
