"""Per-rank network state shared by the NIC and router entities of one simulation.

Port state and statistics live in plain Python lists indexed by link id (faster than numpy
scalars on the per-hop path). Each rank only touches the links whose source vertex it owns,
so the per-rank lists can be summed (or maxed) across ranks at the end of a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..topology import KIND_EJECT, KIND_INJECT, Topology
from .config import NetworkConfig


def _uniform(values: np.ndarray) -> bool:
    """Whether there is at least one link and all have the same value."""
    return len(values) > 0 and bool((values == values[0]).all())


class NetState:
    """Link tables and per-rank counters of a network (one per simulation per rank)."""

    def __init__(
        self,
        topology: Topology,
        config: NetworkConfig,
        *,
        link_dst_eid: np.ndarray,
        mem_bw: float,
        link_src_eid: np.ndarray | None = None,
    ):
        t = topology
        self.topology = t
        self.config = config
        self.chunk = config.chunk_size
        self.o_s = config.send_overhead
        self.o_r = config.recv_overhead
        self.mem_bw = config.intra_node_bw if config.intra_node_bw is not None else mem_bw
        self.mem_lat = config.intra_node_latency
        self.bw: list[float] = t.link_bw.tolist()
        self.lat: list[float] = t.link_lat.tolist()
        # When every link has the same latency: the sum of the latencies of k links, added
        # one by one as sum() adds a route's (so the same float), at index k (grown on demand
        # by lat_sum). None otherwise.
        self.lat_sums: list[float] | None = [0] if _uniform(t.link_lat) else None
        self.dst_eid: list[int] = link_dst_eid.tolist()
        n = t.n_links
        self.free: list[float] = [0.0] * n
        # Bytes per link; read through :attr:`bytes`, which first adds the ideal model's
        # pending per-path bytes.
        self.link_bytes: list[float] = [0.0] * n
        self.busy: list[float] = [0.0] * n
        self.maxq: list[float] = [0.0] * n
        # job id -> [bytes, hop-bytes, messages] of messages sent from this rank's nodes.
        self.jobs: dict[int, list[float]] = {}
        self.messages = 0
        self.chunks = 0
        self.intra_messages = 0
        # Jobs whose routing is restricted to their own links (link-reserving allocators):
        # job -> [allowed link mask, number of local nodes using it, route cache].
        self.job_links: dict[int, list] = {}
        # Cached paths. Ideal model: every path in the order made (see NetworkNode's "ideal
        # model" section: route first, pending bytes fourth), each also in its source node's
        # own dict by destination; path_tables lists the node dicts holding some. Flow model:
        # (route, sum of latencies) keyed src * n_nodes + dst. Both bounded (see NetworkNode).
        self.ideal_paths: list[list] = []
        self.path_tables: list[dict] = []
        # True when the nodes make their ideal paths from the topology's route summaries
        # (see NetworkNode._ideal_path): the flush then makes the routes in numpy.
        self.summarized = False
        self.flow_paths: dict[int, tuple] = {}
        # Flow model (counted by the solver's rank): flows (segments) started, rate
        # recomputations, and the flows they touched (summed and largest).
        self.flows = 0
        self.recomputes = 0
        self.touched = 0
        self.touched_max = 0
        self.local = 0  # starts and ends that changed no other flow's rate (no recomputation)
        # Credit-based flow control (None: infinite buffers).
        self.credits = None
        if config.model == "packet" and config.buffers == "credit":
            from .credits import CreditState

            if link_src_eid is None:
                raise ValueError("a credit-based network needs link_src_eid")
            self.credits = CreditState(
                topology, vcs=config.vcs, buffer_size=config.buffer_size, link_src_eid=link_src_eid
            )

    def lat_sum(self, route: tuple[int, ...]) -> float:
        """The sum of the latencies of ``route``'s links, in route order."""
        if self.lat_sums is None:
            return sum(map(self.lat.__getitem__, route))
        return self.lat_sum_n(len(route))

    def lat_sum_n(self, n: int) -> float:
        """The latency sum of any route of ``n`` links when every link has one latency
        (``lat_sums`` is not None)."""
        sums = self.lat_sums
        while len(sums) <= n:
            sums.append(sums[-1] + self.lat[0])
        return sums[n]

    def _flush_summarized(self) -> None:
        """:meth:`flush_paths` for paths made from route summaries: the routes of the paths
        with bytes pending come from the topology's vectorized ``routes`` (the routes
        ``route_uncached`` gives, whether or not a path holds its own), and the bytes are
        added link by link in the order of the loop over paths and routes (``np.add.at``
        adds in index order: the same sums)."""
        src: list[int] = []
        dst: list[int] = []
        nbs: list[float] = []
        for path in self.ideal_paths:
            nb = path[3]
            if nb:
                path[3] = 0.0
                src.append(path[7])
                dst.append(path[8])
                nbs.append(nb)
        if not nbs:
            return
        lb = self.link_bytes
        arr = np.array(lb, dtype=np.float64)
        step = 1 << 16  # paths at a time: bounded arrays
        for i in range(0, len(nbs), step):
            off, links = self.topology.routes(src[i:i + step], dst[i:i + step])
            np.add.at(arr, links, np.repeat(np.array(nbs[i:i + step], dtype=np.float64), np.diff(off)))
        lb[:] = arr.tolist()

    @property
    def bytes(self) -> list[float]:
        """Bytes sent over each link so far (by this rank's nodes), indexed by link id."""
        self.flush_paths(False)
        return self.link_bytes

    def flush_paths(self, forget: bool) -> None:
        """Add the bytes sent on the ideal model's cached paths to their links; with
        ``forget``, also empty the cache (it is bounded, see NetworkNode._net_send_ideal)."""
        if self.summarized:
            self._flush_summarized()
        else:
            lb = self.link_bytes
            for path in self.ideal_paths:
                nb = path[3]
                if nb:
                    path[3] = 0.0
                    for l in path[0]:
                        lb[l] += nb
        if forget:
            self.ideal_paths.clear()
            for table in self.path_tables:
                table.clear()
            self.path_tables.clear()


@dataclass
class NetworkStats:
    """Traffic statistics of a run, identical for any number of ranks.

    Per-link arrays are indexed by link id; ``utilization`` is busy time over the run's
    simulated duration. Per-job figures count messages by their sender.

    On the ideal model (``contention`` False) no link is ever occupied: ``link_busy`` is the
    time the link's bytes take at its bandwidth (its offered load, which may exceed the run's
    duration), and utilization is not defined (NaN, ``None`` in :meth:`hot_links`).
    """

    link_bytes: np.ndarray
    link_busy: np.ndarray
    link_max_queue: np.ndarray
    duration: float
    job_bytes: dict[int, float] = field(default_factory=dict)
    job_hop_bytes: dict[int, float] = field(default_factory=dict)
    job_messages: dict[int, int] = field(default_factory=dict)
    messages: int = 0
    chunks: int = 0
    intra_node_messages: int = 0
    #: False for the ideal model: links carry bytes but are never occupied.
    contention: bool = True
    #: Flow model: flows (message segments) started, max-min recomputations, flows whose
    #: rates those recomputations computed (summed, and the most in one).
    flows: int = 0
    flow_recomputes: int = 0
    flow_touched: int = 0
    flow_touched_max: int = 0
    #: Flow model: starts and ends that provably changed no other flow's rate, so that no
    #: recomputation was needed.
    flow_local: int = 0
    #: Credit-based flow control: times a chunk found no credit for its next buffer and
    #: waited (in a router, or in its NIC).
    credit_stalls: int = 0

    @property
    def link_utilization(self) -> np.ndarray:
        """Busy time over the duration, in [0, 1] (NaN for every link of the ideal model)."""
        if not self.contention:
            return np.full(len(self.link_busy), np.nan)
        return self.link_busy / self.duration if self.duration > 0 else np.zeros_like(self.link_busy)

    @property
    def max_queue_delay(self) -> float:
        return float(self.link_max_queue.max()) if len(self.link_max_queue) else 0.0

    def hot_links(self, topology: Topology, k: int = 10, *, network_only: bool = True) -> list[dict[str, Any]]:
        """The ``k`` busiest links (by busy time), optionally leaving out NIC links.

        Each is a dict of link id, endpoints, bytes, busy time, utilization (``None`` on the
        ideal model) and largest queueing delay.
        """
        busy = self.link_busy.copy()
        if network_only:
            kind = topology.link_kind
            busy[(kind == KIND_INJECT) | (kind == KIND_EJECT)] = -1.0
        order = np.argsort(-busy, kind="stable")[:k]
        out = []
        for l in order:
            if busy[l] <= 0:
                break
            out.append({
                "link": int(l),
                "src": int(topology.link_src[l]),
                "dst": int(topology.link_dst[l]),
                "bytes": float(self.link_bytes[l]),
                "busy_s": float(self.link_busy[l]),
                "utilization": (None if not self.contention
                                else float(self.link_busy[l] / self.duration) if self.duration > 0 else 0.0),
                "max_queue_s": float(self.link_max_queue[l]),
            })
        return out


def gather_stats(states: list[NetState], duration: float) -> NetworkStats:
    """Combine the per-rank states (already gathered) into one :class:`NetworkStats`."""
    b = np.sum([np.asarray(s.bytes) for s in states], axis=0)
    busy = np.sum([np.asarray(s.busy) for s in states], axis=0)
    mq = np.max([np.asarray(s.maxq) for s in states], axis=0)
    jb: dict[int, float] = {}
    jh: dict[int, float] = {}
    jm: dict[int, int] = {}
    for s in states:
        for j, (by, hb, m) in s.jobs.items():
            jb[j] = jb.get(j, 0.0) + by
            jh[j] = jh.get(j, 0.0) + hb
            jm[j] = jm.get(j, 0) + int(m)
    return NetworkStats(
        link_bytes=b, link_busy=busy, link_max_queue=mq, duration=duration,
        job_bytes=dict(sorted(jb.items())), job_hop_bytes=dict(sorted(jh.items())), job_messages=dict(sorted(jm.items())),
        messages=sum(s.messages for s in states), chunks=sum(s.chunks for s in states),
        intra_node_messages=sum(s.intra_messages for s in states),
        flows=sum(s.flows for s in states), flow_recomputes=sum(s.recomputes for s in states),
        flow_touched=sum(s.touched for s in states), flow_touched_max=max(s.touched_max for s in states),
        flow_local=sum(s.local for s in states),
        credit_stalls=sum(s.stalls for s in states),
    )
