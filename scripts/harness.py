"""The shared opening and closing of every script in ``scripts/`` (benchmarks and reproductions).

Importing this module puts the repository root on ``sys.path`` (the packages sit there), so
a script runs from a checkout as ``python scripts/X.py`` without being installed. It holds:

* ``use_tree``: another checkout first on ``sys.path`` (a benchmark's ``--baseline-tree`` child);
* ``parser``: the argument parser, described by the script's docstring; with ``scales=True``
  the reproductions' options ``--full`` / ``--tiny`` (default: the reduced scale), ``--out``
  and ``--seeds``; ``rounds=`` and ``seed=`` add the benchmarks' ``--rounds`` and ``--seed``;
* the scale table: ``SCALES`` names the three scales, ``scaled`` picks a script's
  parameters for the scale its arguments ask for;
* ``median``, ``ratio`` and ``r4`` for the figures; ``mean_se`` / ``fmt_se`` (mean, standard
  error and number of samples) for the reproductions' ratios; ``factored`` (job sizes 2^a 3^b)
  and ``stable_utilization`` (utilization over a replay's stable period); ``table`` for the
  text tables;
* ``emit`` (one JSON object, the last line of output) and ``finish`` (the same, with the
  script's wall time); ``last_json`` and ``run_json`` read that line back from a child run;
* MPI: ``comm``, ``rank``, ``say`` (print on rank 0), ``deal`` (spread independent runs over
  the ranks; with ``--checkpoint DIR`` each run is saved as it ends and a rerun
  resumes), ``find_mpirun`` / ``require_mpirun``;
* ``traces_dir``, ``out_dir`` and ``plt`` (matplotlib without a display).

Reproduction scripts run at one of three scales, ``--scale full|reduced|tiny``: ``full`` (the
published setup; meant for a cluster, ``mpirun -n 64 python scripts/repro_X.py --scale
full``; ``--full`` is the same), the default ``reduced`` (the same experiment, smaller, a few
minutes on a laptop) and ``tiny`` (seconds, for the tests; ``--tiny``). ``--dry-run`` builds
the scale's machines and workloads, prints the setup and stops. Ratios are reported as
``mean_se`` (mean, standard error, number of samples) over seeds or workloads.
Each prints which scale it ran and what was reduced, one or more tables, and as its
last line one JSON object with its figures; its figure goes to ``--out DIR`` (default
``results/``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))



def use_tree(tree: str | os.PathLike, *, scripts: bool = False) -> Path:
    """Put another checkout of simhpc (a ``--baseline-tree``) first on ``sys.path``, and with
    ``scripts=True`` its ``scripts/`` too, so that a benchmark's child process imports that
    tree's code; call it before importing any of the packages."""
    root = Path(tree).resolve()
    if scripts:
        sys.path.insert(0, str(root / "scripts"))
    sys.path.insert(0, str(root))
    return root


#: simhpc's packages and the scripts, under a checkout's root.
PACKAGES = ("pdes", "models", "apps", "scheduler", "simhpc", "scripts")


def compiled(*trees: str | os.PathLike) -> None:
    """Write the bytecode of the packages of each checkout in ``trees`` (default this one),
    untimed, so that a benchmark's child processes read it as any second run of simhpc
    does, even where writing it is off (PYTHONDONTWRITEBYTECODE): compiling them costs each
    process about 0.1 s of CPU, the same for every model, which no user pays twice."""
    import compileall

    for tree in trees or (ROOT,):
        for pkg in PACKAGES:
            d = Path(tree) / pkg
            if d.is_dir():
                compileall.compile_dir(str(d), quiet=2)


#: The reproduction scales, largest first.
SCALES = ("full", "reduced", "tiny")

T = TypeVar("T")


# ---------------------------------------------------------------------------- arguments
def parser(doc: str, *, scales: bool = False, rounds: int | None = None, seed: int | None = None,
           rounds_help: str | None = None) -> argparse.ArgumentParser:
    """The script's argument parser, described by the first paragraph of ``doc``.

    ``scales=True`` adds ``--full`` / ``--tiny`` (exclusive), ``--out`` and ``--seeds`` and
    shows the rest of ``doc`` below the options; ``rounds`` and ``seed`` add ``--rounds`` and
    ``--seed`` with those defaults."""
    paragraphs = doc.strip().split("\n\n")
    if scales:
        ap = argparse.ArgumentParser(description=paragraphs[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(paragraphs[1:]))
        g = ap.add_mutually_exclusive_group()
        g.add_argument("--scale", choices=SCALES, default=None,
                       help="full (the published setup; use a cluster: mpirun -n 64 ...), reduced (the default: "
                            "the same shape, minutes on a laptop) or tiny (seconds, for the tests)")
        g.add_argument("--full", action="store_true", help="the same as --scale full")
        g.add_argument("--tiny", action="store_true", help="the same as --scale tiny")
        ap.add_argument("--dry-run", action="store_true",
                        help="build the scale's machines and workloads, print the setup and stop (no simulation)")
        ap.add_argument("--out", default="results", help="folder for the figure (default: results/)")
        ap.add_argument("--seeds", type=int, default=None, help="seeds per configuration (default: by scale)")
        ap.add_argument("--checkpoint", default=None, metavar="DIR",
                        help="save each run's result in DIR as it ends, and skip the runs already saved there "
                             "(a stopped full-scale run resumes with the same figures)")
    else:
        ap = argparse.ArgumentParser(description=paragraphs[0])
    if rounds is not None:
        ap.add_argument("--rounds", type=int, default=rounds, help=rounds_help)
    if seed is not None:
        ap.add_argument("--seed", type=int, default=seed)
    return ap


def scale(args: argparse.Namespace) -> str:
    """The scale the arguments ask for: ``full``, ``tiny`` or (by default) ``reduced``."""
    if getattr(args, "scale", None):
        return args.scale
    return "full" if args.full else ("tiny" if args.tiny else "reduced")


def scaled(args: argparse.Namespace, table: Mapping[str, T]) -> tuple[str, T]:
    """``(scale name, the script's parameters at that scale)`` from its scale table, which
    must name every scale of ``SCALES``."""
    missing = [s for s in SCALES if s not in table]
    if missing:
        raise KeyError(f"the scale table has no {', '.join(missing)}")
    name = scale(args)
    return name, table[name]


# ------------------------------------------------------------------------------ figures
def median(xs: Iterable[float]) -> float:
    """The median (the mean of the middle two for an even count)."""
    return statistics.median(xs)


def mean_se(xs: Iterable[float]) -> dict[str, float | int | None]:
    """``{"mean", "se", "n"}`` of the finite values of ``xs``: the mean, its standard error
    (sample standard deviation / sqrt(n); None for fewer than 2 values) and their count."""
    v = [float(x) for x in xs if x is not None and math.isfinite(float(x))]
    if not v:
        return {"mean": None, "se": None, "n": 0}
    m = statistics.fmean(v)
    se = statistics.stdev(v) / math.sqrt(len(v)) if len(v) > 1 else None
    return {"mean": r4(m), "se": r4(se), "n": len(v)}


def fmt_se(s: Mapping[str, Any], digits: int = 3) -> str:
    """``mean +- se (n)`` of a :func:`mean_se` figure, for the tables."""
    if s["mean"] is None:
        return "-"
    se = "-" if s["se"] is None else f"{s['se']:.{digits}f}"
    return f"{s['mean']:.{digits}f} +- {se} ({s['n']})"


def factored(lo: int, hi: int, primes: Sequence[int] = (2, 3)) -> list[int]:
    """The integers in ``[lo, hi]`` whose prime factors all lie in ``primes`` (by default
    2^a 3^b): job sizes whose process grids are near-cubic in any number of dimensions."""
    out, stack = set(), [1]
    while stack:
        x = stack.pop()
        if x > hi or x in out:
            continue
        out.add(x)
        stack.extend(x * p for p in primes)
    return sorted(x for x in out if x >= lo)


def stable_utilization(jobs: Sequence[Any], n_nodes: int, trim: float = 0.1) -> float:
    """Utilization over a replay's stable period: busy node-seconds of every job inside the
    window from the first to the last submission of the middle ``1 - 2 trim`` of the jobs
    (in submission order), over ``n_nodes`` times the window. The first jobs meet an empty
    machine and the end of a finite run is its longest jobs draining, the same under every
    policy."""
    submit = sorted(j.submit_time for j in jobs)
    skip = int(len(submit) * trim)
    a, b = float(submit[skip]), float(submit[len(submit) - 1 - skip])
    busy = sum(j.nodes * max(0.0, min(j.end_time, b) - max(j.start_time, a))
               for j in jobs if j.start_time is not None and j.end_time is not None)
    return busy / (n_nodes * (b - a)) if b > a else float("nan")


def ratio(a: float, b: float) -> float:
    """``a / b``; NaN where ``b`` is zero."""
    return a / b if b else float("nan")


def r4(x: Any) -> Any:
    """Round a figure to 4 decimals for the JSON line (None and non-finite numbers give None;
    what is not a number stays as it is)."""
    if x is None:
        return None
    try:
        return None if not math.isfinite(float(x)) else round(float(x), 4)
    except (TypeError, ValueError):
        return x


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str], *, align: str | None = None) -> str:
    """A plain aligned text table: two spaces between columns, a rule under the headers.

    ``align`` gives one letter per column, ``l`` or ``r``; without it numbers are
    right-aligned and the rest left-aligned (floats shown with 4 significant digits)."""
    if align is None:
        from simhpc.cli.common import table as _table

        return _table(rows, headers)
    cells = [[str(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)), "  ".join("-" * w for w in widths)]
    for r in cells:
        out.append("  ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(r, widths, align)))
    return "\n".join(out)


# ---------------------------------------------------------------------------- JSON line
def emit(figures: Mapping[str, Any], c: Any = None) -> None:
    """Print the last line: one JSON object with the script's figures (rank 0 only)."""
    if rank(c) == 0:
        print(json.dumps(figures, default=_default))


def finish(c: Any, figures: dict[str, Any], t0: float) -> None:
    """``emit`` the figures with ``wall_s``, the seconds since ``t0`` (``time.perf_counter``)."""
    figures["wall_s"] = round(time.perf_counter() - t0, 2)
    emit(figures, c)


def last_json(text: str) -> dict:
    """The JSON object on the last line of a script's output."""
    return json.loads(text.strip().splitlines()[-1])


def run_json(cmd: Sequence[str], *, script: str, timeout: float | None = 3600, env: Mapping[str, str] | None = None,
             cwd: str | None = None) -> dict:
    """Run ``cmd`` (in ``cwd``, with environment ``env``: default this process's) and return
    the JSON object on the last line of its output; a failure ends this script with the
    command and its error output."""
    out = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    if out.returncode != 0:
        sys.exit(f"{script}: {' '.join(cmd)} failed:\n{out.stderr}")
    return last_json(out.stdout)


def _default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


# ---------------------------------------------------------------------------------- MPI
def comm() -> Any:
    """MPI's world communicator under mpirun (more than one rank), else None."""
    from pdes.parallel import world_comm

    return world_comm()


def rank(c: Any) -> int:
    """This process's rank in ``c`` (0 without MPI)."""
    return c.rank if c is not None else 0


def say(c: Any, *lines: str) -> None:
    """Print on rank 0 only."""
    if rank(c) == 0:
        for line in lines:
            print(line, flush=True)


def say_setup(c: Any, scale: str, what: str, full: str) -> None:
    """Print (rank 0) the setup of a reproduction at ``scale``: ``what``, and for a scale
    other than full what the full one is."""
    say(c, f"full: {what}" if scale == "full" else f"{scale}: {what} (full: {full})")


def deal(items: Sequence[Any], fn: Callable[[Any], Any], c: Any, *,
         checkpoint: Path | None = None) -> list[Any]:
    """``[fn(x) for x in items]``, the items dealt out over the MPI ranks (every rank gets
    the whole list back, in order). Each ``fn`` call must be sequential and deterministic.

    With ``checkpoint`` (a folder), each result is saved there as soon as its run ends, and
    runs already saved there by an earlier call with the same items are not run again: a
    full-scale study stopped by a time limit resumes where it stopped, with the same figures.
    """
    saved = _load_checkpoints(checkpoint) if checkpoint is not None else {}
    todo = [(i, x) for i, x in enumerate(items) if repr(x) not in saved]
    size, me = (1, 0) if c is None else (c.size, c.rank)
    mine = []
    with _Saver(checkpoint, me) as save:
        for k, (i, x) in enumerate(todo):
            if k % size == me:
                t = time.process_time()
                r = fn(x)
                save(x, r, time.process_time() - t)
                mine.append((i, r))
    if c is not None and size > 1:
        from pdes.parallel import quiet_barrier

        quiet_barrier(c)  # ranks done early sleep instead of polling on the others' cores
    got = dict(mine) if c is None or size == 1 else dict(p for part in c.allgather(mine) for p in part)
    return [got[i] if i in got else saved[repr(x)] for i, x in enumerate(items)]


def _load_checkpoints(folder: Path) -> dict[str, Any]:
    """``{repr(item): result}`` from the files that :class:`_Saver` wrote in ``folder``; a
    record cut short by a kill (the last one of a file) is ignored."""
    import pickle

    out: dict[str, Any] = {}
    for f in sorted(Path(folder).glob("runs-*.pickle")):
        with open(f, "rb") as fh:
            while True:
                try:
                    key, result = pickle.load(fh)
                except (EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError):
                    break
                out[key] = result
    return out


class _Saver:
    """Appends ``(repr(item), result)`` records to this process's file in a checkpoint folder
    (one file per process, so ranks never write the same file), flushed after each run."""

    def __init__(self, folder: Path | None, rank_: int) -> None:
        self.folder, self.rank, self.fh = folder, rank_, None

    def __enter__(self) -> Callable[[Any, Any, float], None]:
        if self.folder is not None:
            Path(self.folder).mkdir(parents=True, exist_ok=True)
            self.fh = open(Path(self.folder) / f"runs-{os.getpid()}-r{self.rank}.pickle", "ab")
        return self.save

    def save(self, item: Any, result: Any, cpu_s: float) -> None:
        if self.fh is None:
            return
        import pickle

        pickle.dump((repr(item), result), self.fh)
        self.fh.flush()
        os.fsync(self.fh.fileno())
        print(f"[rank {self.rank}] saved {item!r} ({cpu_s:.1f} s CPU)", file=sys.stderr, flush=True)

    def __exit__(self, *exc: Any) -> None:
        if self.fh is not None:
            self.fh.close()


def checkpoint(args: argparse.Namespace, name: str) -> Path | None:
    """The ``--checkpoint`` folder's sub-folder for one part of a script (``name``), or None."""
    d = getattr(args, "checkpoint", None)
    if d is None:
        return None
    if Path(d).exists() and not Path(d).is_dir():
        sys.exit(f"--checkpoint {d}: is not a folder (give a folder, new or one a run saved into)")
    return Path(d) / name


def compare_replays(configs: Sequence[str], trees: Sequence[tuple[str, str | None]], rounds: int,
                    run_one: Callable[[str, str | None], dict], label: str) -> tuple[list, list[str], list[dict], bool]:
    """Replays of ``configs`` in each of ``trees`` (``("new", None)`` first, then optionally
    ``("baseline", path)``), ``rounds`` times, alternating which tree goes first so drift
    in the machine's load hits both alike. ``run_one(config, tree)`` returns a dict with
    ``cpu_s``, ``wall_s`` and ``hash`` (of the schedule). Returns the table's rows and
    heads (first column ``label``), one figure dict per config (medians, whether the
    schedule is the same in every round and in both trees, the CPU speedup over the
    baseline) and whether every schedule matched the baseline's."""
    runs: dict = {}
    for c in configs:
        for r in range(rounds):
            for name, tree in (trees if r % 2 == 0 else list(trees)[::-1]):
                out = run_one(c, tree)
                runs.setdefault((c, name), []).append(out)
                print(f"  {c} {name:8s} round {r}: cpu {out['cpu_s']:.2f} s wall {out['wall_s']:.2f} s "
                      f"{out['hash'][:12]}", file=sys.stderr)
    base = len(trees) > 1
    rows, figures, same_all = [], [], True
    for c in configs:
        new = runs[(c, "new")]
        hashes = {o["hash"] for o in new}
        fig = {"config": c, "cpu_s": r4(median(o["cpu_s"] for o in new)),
               "wall_s": r4(median(o["wall_s"] for o in new)), "hash": new[0]["hash"],
               "deterministic": len(hashes) == 1}
        row = [c, f"{fig['cpu_s']:.2f}", f"{fig['wall_s']:.2f}"]
        if base:
            old = runs[(c, "baseline")]
            same = hashes == {o["hash"] for o in old}
            same_all &= same
            fig.update(baseline_cpu_s=r4(median(o["cpu_s"] for o in old)),
                       baseline_wall_s=r4(median(o["wall_s"] for o in old)), same_schedule=same)
            fig["speedup_cpu"] = r4(ratio(fig["baseline_cpu_s"], fig["cpu_s"]))
            row = [c, f"{fig['baseline_cpu_s']:.2f}", f"{fig['cpu_s']:.2f}", f"{fig['speedup_cpu']:.2f}",
                   f"{fig['baseline_wall_s']:.2f}", f"{fig['wall_s']:.2f}", "yes" if same else "NO"]
        rows.append(row)
        figures.append(fig)
    heads = ([label, "base CPU (s)", "new CPU (s)", "speedup", "base wall (s)", "new wall (s)", "same schedule"]
             if base else [label, "CPU (s)", "wall (s)"])
    return rows, heads, figures, same_all


def find_mpirun() -> str | None:
    """The mpirun next to this Python (a virtual environment's), else the one on PATH, else None."""
    return shutil.which("mpirun", path=os.path.dirname(sys.executable)) or shutil.which("mpirun")


def require_mpirun(script: str) -> str:
    """``find_mpirun()``, or end the script saying how to install it."""
    exe = find_mpirun()
    if exe is None:
        sys.exit(f"{script}: mpirun not found; pip install '.[mpi]'")
    return exe


# -------------------------------------------------------------------------- files, plots
def traces_dir() -> Path:
    """The folder of the workload traces shipped with simhpc (:mod:`simhpc.traces`)."""
    from simhpc.traces import trace_path

    return trace_path("lublin_256.swf").parent


def out_dir(args: argparse.Namespace, c: Any) -> Path:
    """The ``--out`` folder, created by rank 0."""
    p = Path(args.out)
    if rank(c) == 0:
        p.mkdir(parents=True, exist_ok=True)
    return p


def plt() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as p

    return p
