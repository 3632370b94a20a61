#!/usr/bin/env python3
"""Benchmark: build the large topologies and route random pairs on them.

Cases: the full Mira-like 5D torus (49,152 nodes), the 10,648-node radix-44 fat-tree and the
Theta-like Aries dragonfly (minimal and Valiant routing). For each case the script measures

* the build: wall time (median of ``--repeats`` fresh builds) and peak traced memory;
* ``routes()`` (vectorized) on ``--pairs`` random (src, dst, key) triples: median wall time,
  pairs/s and peak traced memory;
* the baseline, the scalar ``route()`` loop over the first ``--scalar-pairs`` of the same
  triples: once on an empty route cache (every call computes a route) and once more on the
  filled cache (every call is a dict lookup); medians of ``--repeats`` runs;

checks that both give the same routes, prints a table and, as its last line, one JSON object
with every figure and the ratios of the vectorized rate to the baseline rates. Goals: each
build under 10 s and 2 GiB, routing at least 200,000 pairs/s.

    python scripts/bench_topology.py                  # 1,000,000 pairs per case
    python scripts/bench_topology.py --pairs 100000   # quicker
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc
from typing import Callable

import numpy as np

import harness as h
from models.presets import get_machine
from models.topology import Topology

MiB = 2.0**20
BUILD_GOAL_S = 10.0
BUILD_GOAL_BYTES = 2 * 2**30
RATE_GOAL = 200_000.0


def cases() -> list[tuple[str, Callable[[], Topology]]]:
    return [
        ("mira torus 5D", lambda: get_machine("mira").topology),
        ("fattree44 dmodk", lambda: get_machine("fattree44").topology),
        ("theta dragonfly minimal", lambda: get_machine("theta").topology),
        ("theta dragonfly valiant", lambda: get_machine("theta").topology.replace(routing="valiant")),
    ]


def traced_peak(fn: Callable[[], object]) -> tuple[object, int]:
    """Result of fn() and the peak of memory traced while it ran (bytes)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        out = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return out, peak


def timed(fn: Callable[[], object]) -> tuple[object, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def bench_case(name: str, build: Callable[[], Topology], args: argparse.Namespace) -> dict:
    build_times = []
    topo = None
    for _ in range(args.repeats):
        topo, dt = timed(build)
        build_times.append(dt)
    _, build_peak = traced_peak(build)
    assert topo is not None
    rng = np.random.default_rng(args.seed)
    n = args.pairs
    src = rng.integers(0, topo.n_nodes, n)
    dst = rng.integers(0, topo.n_nodes, n)
    key = np.arange(n, dtype=np.int64)

    vec_times = []
    res = None
    for _ in range(args.repeats):
        res, dt = timed(lambda: topo.routes(src, dst, key))
        vec_times.append(dt)
    (_, route_peak) = traced_peak(lambda: topo.routes(src, dst, key))
    offsets, links = res

    ns = min(args.scalar_pairs, n)
    s_l, d_l, k_l = src[:ns].tolist(), dst[:ns].tolist(), key[:ns].tolist()
    route = topo.route
    cold, hot = [], []
    for _ in range(args.repeats):
        topo.clear_route_cache()
        t0 = time.perf_counter()
        out = [route(s, d, k) for s, d, k in zip(s_l, d_l, k_l)]
        cold.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for s, d, k in zip(s_l, d_l, k_l):
            route(s, d, k)
        hot.append(time.perf_counter() - t0)
    # The baseline and the vectorized routes must agree.
    for i in range(0, ns, max(1, ns // 2000)):
        if tuple(links[offsets[i] : offsets[i + 1]].tolist()) != out[i]:
            raise AssertionError(f"{name}: routes() and route() differ for pair {i}")

    med_build = h.median(build_times)
    med_vec = h.median(vec_times)
    vec_rate = n / med_vec
    cold_rate = ns / h.median(cold)
    hot_rate = ns / h.median(hot)
    return {
        "case": name,
        "family": topo.name,
        "routing": topo.routing,
        "nodes": topo.n_nodes,
        "routers": topo.n_routers,
        "links": topo.n_links,
        "build_s_median": med_build,
        "build_peak_bytes": build_peak,
        "pairs": n,
        "route_links": int(len(links)),
        "mean_links_per_route": len(links) / n,
        "routes_s_median": med_vec,
        "routes_pairs_per_s": vec_rate,
        "routes_peak_bytes": route_peak,
        "baseline": "scalar route() loop",
        "baseline_pairs": ns,
        "scalar_cold_pairs_per_s": cold_rate,
        "scalar_cached_pairs_per_s": hot_rate,
        "ratio_vectorized_vs_scalar_cold": vec_rate / cold_rate,
        "ratio_vectorized_vs_scalar_cached": vec_rate / hot_rate,
        "goal_build_met": med_build < BUILD_GOAL_S and build_peak < BUILD_GOAL_BYTES,
        "goal_rate_met": vec_rate >= RATE_GOAL,
    }


def main(argv: list[str] | None = None) -> int:
    ap = h.parser(__doc__, seed=1)
    ap.add_argument("--pairs", type=int, default=1_000_000, help="random pairs routed by routes() per case")
    ap.add_argument("--scalar-pairs", type=int, default=100_000, help="pairs routed by the scalar route() baseline")
    ap.add_argument("--repeats", type=int, default=3, help="repeats per measurement (medians are reported)")
    args = ap.parse_args(argv)
    if args.pairs < 1 or args.scalar_pairs < 1 or args.repeats < 1:
        ap.error("--pairs, --scalar-pairs and --repeats must be >= 1")

    results = [bench_case(name, build, args) for name, build in cases()]

    header = ["case", "nodes", "links", "build s", "build MiB", "routes() s", "routes() pairs/s", "route() cold/s",
              "route() cached/s", "vec/cold", "vec/cached", "routes MiB"]
    rows = [
        [r["case"], f"{r['nodes']:,}", f"{r['links']:,}", f"{r['build_s_median']:.3f}", f"{r['build_peak_bytes'] / MiB:.1f}",
         f"{r['routes_s_median']:.3f}", f"{r['routes_pairs_per_s']:,.0f}", f"{r['scalar_cold_pairs_per_s']:,.0f}",
         f"{r['scalar_cached_pairs_per_s']:,.0f}",
         f"{r['ratio_vectorized_vs_scalar_cold']:.1f}x", f"{r['ratio_vectorized_vs_scalar_cached']:.1f}x",
         f"{r['routes_peak_bytes'] / MiB:.0f}"]
        for r in results
    ]
    print(h.table(rows, header, align="l" + "r" * (len(header) - 1)))
    print(f"pairs per case: {args.pairs:,} (routes()), {min(args.scalar_pairs, args.pairs):,} (baseline); "
          f"medians of {args.repeats}; baseline: scalar route() loop")
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    summary = {
        "benchmark": "bench_topology",
        "pairs": args.pairs,
        "scalar_pairs": min(args.scalar_pairs, args.pairs),
        "repeats": args.repeats,
        "seed": args.seed,
        "baseline": "scalar route() loop",
        "peak_rss_bytes": peak_rss,
        "goals": {"build_s": BUILD_GOAL_S, "build_bytes": BUILD_GOAL_BYTES, "pairs_per_s": RATE_GOAL},
        "all_goals_met": all(r["goal_build_met"] and r["goal_rate_met"] for r in results),
        "cases": results,
    }
    h.emit(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
