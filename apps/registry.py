"""The app registry: skeleton applications registered by name with the :func:`app` decorator.

An app is a plain function of the rank's MPI handle plus keyword arguments::

    @app("ring")
    def ring(mpi, *, iters=10, nbytes=1024):
        for _ in range(iters):
            mpi.sendrecv((mpi.rank + 1) % mpi.size, nbytes, source=(mpi.rank - 1) % mpi.size)

A job names its app and arguments (``app_name``, ``app_args``); :func:`bind_args` checks the
arguments against the function's signature before anything runs, so a wrong or missing
argument raises :class:`~apps.errors.AppConfigError` listing the app's parameters.

``@app(name, checks={"iters": fn, ...})`` declares a check of each parameter's value:
``fn(value, key)`` raises ``ValueError`` (or ``TypeError``) with a message that names
``key`` (e.g. ``"iters must be an integer >= 0, got -3"``). :func:`bind_args` runs it on every
value given, without running the app and without the job's size, so a bad value is refused
where it is written (``simhpc app`` arguments, an experiment file's ``[[apps]]`` table)
rather than failing every job that uses it.

``@app(name, per_rank=False)`` registers a *job-level* app: the function is called once per
job, on the node of rank 0, with a :class:`JobContext` instead of an MPI handle, and returns
how many seconds the job runs. No rank processes exist (the timekeeper uses this: O(1)
events per job).

``@app(name, validate=fn)`` adds a check ``fn(size, **args)`` of what depends on the job's
size or on several arguments together (e.g. that a process grid has ``size`` cells); it
runs, after the value checks, whenever the size is known (a job's launch, ``simhpc app``,
an experiment's foreground jobs), and raises ``ValueError`` with a message.

``@app(name, grid=fn)`` declares a Cartesian app: ``fn(size, **args)`` returns the dims of
its process grid (row-major ranks, as ``MPI_Cart_create``), which topology-aware rank
mapping uses to put grid neighbours on nearby nodes (:meth:`AppInfo.process_grid`).
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .errors import AppConfigError

__all__ = ["AppInfo", "JobContext", "app", "app_names", "bind_args", "get_app", "REQUIRED"]


class _Required:
    def __repr__(self) -> str:
        return "<required>"


#: Marks a parameter without default in :attr:`AppInfo.params`.
REQUIRED: Any = _Required()


@dataclass(frozen=True)
class AppInfo:
    """One registered app.

    Attributes:
        name: the registered name.
        fn: the function ``fn(mpi, **args)`` (or ``fn(job_context, **args)`` for job-level apps).
        per_rank: True for apps run as one process per rank; False for job-level apps.
        params: ``(name, default)`` of every keyword parameter (``REQUIRED`` if none).
        var_kw: the function accepts ``**kwargs`` (any argument name is valid).
        summary: the first paragraph of the function's docstring, on one line.
        validate: optional check ``validate(size, **args)`` run before the simulation.
        grid: optional ``grid(size, **args)`` giving the process grid of a Cartesian app.
        checks: parameter name -> check ``check(value, key)`` of a value alone.
    """

    name: str
    fn: Callable[..., Any]
    per_rank: bool
    params: tuple[tuple[str, Any], ...]
    var_kw: bool
    summary: str
    validate: Callable[..., Any] | None = None
    grid: Callable[..., Any] | None = None
    checks: Mapping[str, Callable[[Any, str], Any]] = field(default_factory=dict)

    def process_grid(self, size: int, args: Mapping[str, Any] | None = None) -> tuple[int, ...] | None:
        """The process grid of ``size`` ranks with ``args`` (None: not a Cartesian app)."""
        if self.grid is None:
            return None
        full = {**{p: d for p, d in self.params if d is not REQUIRED}, **dict(args or {})}
        return tuple(int(x) for x in self.grid(size, **full))

    def signature(self) -> str:
        """The parameters as ``name(a, b=1, ...)`` for messages and listings."""
        parts = [p if d is REQUIRED else f"{p}={d!r}" for p, d in self.params]
        if self.var_kw:
            parts.append("**kwargs")
        return f"{self.name}({', '.join(parts)})"


@dataclass(frozen=True)
class JobContext:
    """What a job-level app (``per_rank=False``) sees: the job and its ranks' placement."""

    job: int
    size: int
    nodes: tuple[int, ...]
    now: float


#: Registered apps by name. Module-level by design: a registry of functions, no run state.
_APPS: dict[str, AppInfo] = {}
_BUILTINS_LOADED = False


def app(
    name: str, *, per_rank: bool = True, validate: Callable[..., Any] | None = None,
    grid: Callable[..., Any] | None = None, checks: Mapping[str, Callable[[Any, str], Any]] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as app ``name`` (see the module docstring)."""
    if not isinstance(name, str) or not name:
        raise AppConfigError(f"app name must be a non-empty string, got {name!r}")

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(fn):
            raise AppConfigError(f"@app({name!r}) must decorate a function, got {fn!r}")
        prev = _APPS.get(name)
        if prev is not None and prev.fn is not fn and _qualname(prev.fn) != _qualname(fn):
            raise AppConfigError(f"app {name!r} is already registered (by {_qualname(prev.fn)})")
        sig = inspect.signature(fn)
        ps = list(sig.parameters.values())
        if not ps or ps[0].kind not in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            raise AppConfigError(f"app {name!r}: the function must take the MPI handle as its first positional parameter")
        params = []
        var_kw = False
        for p in ps[1:]:
            if p.kind is inspect.Parameter.VAR_KEYWORD:
                var_kw = True
            elif p.kind is inspect.Parameter.VAR_POSITIONAL or p.kind is inspect.Parameter.POSITIONAL_ONLY:
                raise AppConfigError(f"app {name!r}: parameter {p.name!r} must be a keyword parameter")
            else:
                params.append((p.name, REQUIRED if p.default is inspect.Parameter.empty else p.default))
        chk = dict(checks or {})
        for k, c in chk.items():
            if not callable(c):
                raise AppConfigError(f"app {name!r}: the check of {k!r} must be a function check(value, key), got {c!r}")
            if k not in {p for p, _ in params} and not var_kw:
                raise AppConfigError(f"app {name!r}: checks names {k!r}, which is not a parameter; "
                                     f"parameters: {', '.join(p for p, _ in params) or 'none'}")
        doc = inspect.getdoc(fn) or ""
        _APPS[name] = AppInfo(
            name=name, fn=fn, per_rank=bool(per_rank), params=tuple(params), var_kw=var_kw,
            summary=" ".join(doc.split("\n\n")[0].split()).replace("``", ""), validate=validate,
            grid=grid, checks=chk,
        )
        return fn

    return register


def _qualname(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _load_builtins() -> None:
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED = True
        importlib.import_module("apps.skeletons")
        importlib.import_module("apps.otf2trace.replay")


def app_names() -> list[str]:
    """The registered app names, sorted."""
    _load_builtins()
    return sorted(_APPS)


def get_app(name: str) -> AppInfo:
    """The app registered as ``name``; an unknown name raises listing the valid names."""
    _load_builtins()
    try:
        return _APPS[name]
    except (KeyError, TypeError):
        raise AppConfigError(f"unknown app {name!r}; valid: {', '.join(sorted(_APPS))}") from None


def bind_args(name: str, args: Mapping[str, Any] | None = None, *, size: int | None = None,
              key: str = "") -> dict[str, Any]:
    """Check ``args`` against app ``name``'s parameters; returns them as a plain dict.

    Unknown or missing arguments raise :class:`AppConfigError` listing the parameters; a
    value its parameter's check (``@app(checks=...)``) refuses raises naming the parameter.
    With ``size`` (the number of ranks), the app's own ``validate`` hook runs too. ``key`` is
    the name the user knows the arguments by (``"apps.2.args"``): the messages then start with
    it and name a bad value as ``"apps.2.args.iters"``.
    """
    where = f"{key}: " if key else ""
    info = get_app(name)
    args = dict(args or {})
    for k in args:
        if not isinstance(k, str):
            raise AppConfigError(f"{where}app {name!r}: argument names must be strings, got {k!r}")
    known = {p for p, _ in info.params}
    unknown = [k for k in args if k not in known]
    if unknown and not info.var_kw:
        raise AppConfigError(
            f"{where}app {name!r} has no parameter{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"parameters: {info.signature()}"
        )
    missing = [p for p, d in info.params if d is REQUIRED and p not in args]
    if missing:
        raise AppConfigError(
            f"{where}app {name!r} needs argument{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}; "
            f"parameters: {info.signature()}"
        )
    for k, v in args.items():
        check = info.checks.get(k)
        if check is None:
            continue
        try:
            check(v, f"{key}.{k}" if key else k)
        except (ValueError, TypeError) as exc:
            raise AppConfigError(f"{exc} (app {name!r})" if key else f"app {name!r}: {exc}") from None
    if size is not None and info.validate is not None:
        try:
            info.validate(size, **{**{p: d for p, d in info.params if d is not REQUIRED}, **args})
        except (ValueError, TypeError) as exc:
            raise AppConfigError(f"{where}app {name!r} with {size} ranks: {exc}; parameters: {info.signature()}") from None
    return args
