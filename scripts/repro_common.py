"""Shared pieces of the reproduction scripts (``scripts/repro_*.py``).

Every script runs at one of three scales: ``--full`` (the published size; meant for a
cluster, ``mpirun -n 64 python scripts/repro_X.py --full``), the default *reduced* scale
(the same experiment, smaller, a few minutes on a laptop) and ``--tiny`` (seconds, for the
tests). It prints which scale it ran and what was reduced, one or more tables, and as its
last line one JSON object with its figures; its figure goes to ``--out DIR`` (default
``results/``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def parser(doc: str) -> argparse.ArgumentParser:
    """The common options: --full, --tiny, --out, --seeds."""
    ap = argparse.ArgumentParser(description=doc.strip().split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(doc.strip().split("\n\n")[1:]))
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--full", action="store_true", help="the published scale (use a cluster: mpirun -n 64 ...)")
    g.add_argument("--tiny", action="store_true", help="a seconds-long smoke run (for tests)")
    ap.add_argument("--out", default="results", help="folder for the figure (default: results/)")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per configuration (default: by scale)")
    return ap


def scale(args: argparse.Namespace) -> str:
    return "full" if args.full else ("tiny" if args.tiny else "reduced")


def comm() -> Any:
    """MPI's world communicator under mpirun (more than one rank), else None."""
    from pdes.parallel import world_comm

    return world_comm()


def rank(c: Any) -> int:
    return c.rank if c is not None else 0


def say(c: Any, *lines: str) -> None:
    """Print on rank 0 only."""
    if rank(c) == 0:
        for line in lines:
            print(line, flush=True)


def deal(items: Sequence[Any], fn: Callable[[Any], Any], c: Any) -> list[Any]:
    """``[fn(x) for x in items]``, the items dealt out over the MPI ranks (every rank gets
    the whole list back, in order). Each ``fn`` call must be sequential and deterministic."""
    if c is None or c.size == 1:
        return [fn(x) for x in items]
    mine = [(i, fn(x)) for i, x in enumerate(items) if i % c.size == c.rank]
    got = dict(p for part in c.allgather(mine) for p in part)
    return [got[i] for i in range(len(items))]


def traces_dir() -> Path | None:
    """The shared traces (``$SIMHPC_TRACES`` or ``<repo>/../shared/traces``), None if absent."""
    p = Path(os.environ.get("SIMHPC_TRACES") or ROOT.parent / "shared" / "traces")
    return p if p.is_dir() else None


def out_dir(args: argparse.Namespace, c: Any) -> Path:
    p = Path(args.out)
    if rank(c) == 0:
        p.mkdir(parents=True, exist_ok=True)
    return p


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    from simhpc.cli.common import table as _table

    return _table(rows, headers)


def finish(c: Any, figures: dict[str, Any], t0: float) -> None:
    """The last line: one JSON object with the script's figures (rank 0)."""
    figures["wall_s"] = round(time.perf_counter() - t0, 2)
    if rank(c) == 0:
        print(json.dumps(figures, default=_default))


def _default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def r4(x: Any) -> Any:
    """Round a figure for the JSON line (None stays None)."""
    if x is None:
        return None
    try:
        import math

        return None if not math.isfinite(float(x)) else round(float(x), 4)
    except (TypeError, ValueError):
        return x


def plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as p

    return p
