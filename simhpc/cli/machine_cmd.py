"""``simhpc machine``: list the machine presets or describe one."""

from __future__ import annotations

import argparse
from typing import Any

from .common import CliError, print_json, table

HELP = "list machine presets or describe one (nodes, routers, links, diameter, bisection, link bandwidths and latencies, routing)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", metavar="NAME", help="preset to describe (see --list)")
    parser.add_argument("--list", action="store_true", help="list the presets")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")


def run(args: argparse.Namespace) -> int:
    from models.presets import PRESETS, get_machine

    if args.list or args.name is None:
        if args.name is not None:
            raise CliError("give either --list or a machine NAME, not both")
        machines = [get_machine(n) for n in PRESETS]
        if args.json:
            print_json({"machines": [_list_entry(m) for m in machines]})
            return 0
        rows = [(m.name, m.topology.name, m.n_nodes, m.cores_per_node, m.description) for m in machines]
        print(table(rows, ["name", "family", "nodes", "cores/node", "description"]))
        return 0
    if args.name not in PRESETS:
        raise CliError(f"unknown machine {args.name!r}; valid: {', '.join(PRESETS)}")
    m = get_machine(args.name)
    d = m.describe()
    if args.json:
        print_json(d)
        return 0
    print(_summary(d))
    return 0


def _list_entry(m: Any) -> dict[str, Any]:
    return {"name": m.name, "family": m.topology.name, "nodes": m.n_nodes, "cores_per_node": m.cores_per_node, "description": m.description}


def _fmt_bw(x: float) -> str:
    return f"{x / 1e9:.4g} GB/s"


def _fmt_lat(x: float) -> str:
    return f"{x * 1e9:.4g} ns"


def _range(lo: float, hi: float, fmt: Any) -> str:
    return fmt(lo) if lo == hi else f"{fmt(lo)} - {fmt(hi)}"


def _summary(d: dict[str, Any]) -> str:
    net = d["network"]
    rows = [
        ("machine", d["name"]),
        ("description", d["description"]),
        ("citation", d["citation"]),
        ("topology", net["family"]),
        ("nodes", net["nodes"]),
        ("cores per node", d["cores_per_node"]),
        ("peak per node", f"{d['flops_per_node'] / 1e9:.4g} GF/s"),
        ("memory bandwidth per node", _fmt_bw(d["mem_bw_per_node"])),
        ("routers", net["routers"]),
        ("links (directed)", net["links"]),
        ("diameter (router hops)", net["diameter"]),
        ("bisection links (one direction)", net["bisection_links"]),
        ("bisection bandwidth (one direction)", f"{net['bisection_bandwidth'] / 1e12:.4g} TB/s"),
        ("routing", f"{net['routing']} (available: {', '.join(net['routings'])})"),
        ("locality units", net["locality_units"]),
    ]
    for k, v in net["parameters"].items():
        if k.endswith("_bw") or k.endswith("_lat") or isinstance(v, float):
            continue
        if isinstance(v, list) and v and isinstance(v[0], float):
            continue
        rows.append((k.replace("_", " "), ", ".join(str(x) for x in v) if isinstance(v, list) else v))
    w = max(len(k) for k, _ in rows)
    out = [f"{k:<{w}}  {v}" for k, v in rows] + [""]
    links = [
        (kind, s["count"], _range(s["bw_min"], s["bw_max"], _fmt_bw), _range(s["lat_min"], s["lat_max"], _fmt_lat))
        for kind, s in net["link_kinds"].items()
    ]
    out.append(table(links, ["link kind", "count", "bandwidth", "latency"]))
    return "\n".join(out)
