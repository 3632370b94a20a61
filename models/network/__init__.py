"""Network transport: the packet model (congestion emerges), the flow model (max-min fair
sharing of link bandwidth) and the ideal model (no contention).

See :mod:`models.network.network` for building a network in a simulator,
:mod:`models.network.node` for the delivery API used by the MPI layer,
:mod:`models.network.router` for the per-hop rules of the packet model and
:mod:`models.network.flow` (with :mod:`models.network.maxmin`) for the flow model.
"""

from .config import NETWORK_MODELS, NetworkConfig, NetworkConfigError
from .network import NODE_TYPE, ROUTER_TYPE, Network, network_lookahead
from .node import NetworkNode
from .router import Router
from .state import NetworkStats

__all__ = [
    "NETWORK_MODELS",
    "NODE_TYPE",
    "ROUTER_TYPE",
    "Network",
    "NetworkConfig",
    "NetworkConfigError",
    "NetworkNode",
    "NetworkStats",
    "Router",
    "network_lookahead",
]
