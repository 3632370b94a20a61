"""Tools for testing apps and for closed-form checks: a machine where all nodes are
equidistant (one switch), and the per-message time of a path without contention.

On :func:`switch_machine` every pair of distinct nodes is joined by the same two links
(injection into the switch, ejection out of it), so one message of m bytes takes
``alpha + m * beta`` on an idle network, with ``alpha = o_s + 2 L + o_r`` and
``beta = 1 / B`` (:func:`alpha_beta`); the collective algorithms' classic formulas then hold
exactly on the ideal network model.
"""

from __future__ import annotations

from models.network import NetworkConfig
from models.presets import Machine
from models.topology import FatTree

__all__ = ["alpha_beta", "switch_machine"]


def switch_machine(nodes: int, *, link_bw: float = 4e9, link_lat: float = 100e-9, cores_per_node: int = 4,
                   flops_per_node: float = 100e9, mem_bw_per_node: float = 20e9) -> Machine:
    """A machine of ``nodes`` nodes on one switch (a one-level fat-tree)."""
    return Machine(
        name=f"switch{nodes}", topology=FatTree(levels=1, down=(nodes,), up=(1,), link_bw=link_bw, link_lat=link_lat),
        cores_per_node=cores_per_node, flops_per_node=flops_per_node, mem_bw_per_node=mem_bw_per_node,
        description=f"{nodes} nodes on one switch", citation="test machine",
    )


def alpha_beta(machine: Machine, config: NetworkConfig | None = None) -> tuple[float, float]:
    """(alpha, beta) of a message between two nodes of a :func:`switch_machine`."""
    config = config or NetworkConfig()
    t = machine.topology
    route = t.route(0, 1)
    lat = sum(float(t.link_lat[l]) for l in route)
    bw = min(float(t.link_bw[l]) for l in route)
    return config.send_overhead + lat + config.recv_overhead, 1.0 / bw
