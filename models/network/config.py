"""Network model configuration: which transport, chunk or segment size and software overheads."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TopologyError
from ..units import UnitError, parse_bandwidth, parse_bytes, parse_time

#: Transport models by name.
NETWORK_MODELS = ("packet", "flow", "ideal")
PLANNED_MODELS: tuple[str, ...] = ()

#: The packet model's default chunk size (bytes). The flow model has no chunks: it refuses
#: any other value rather than silently ignoring it.
DEFAULT_CHUNK = 4096

#: Buffer models of the packet model: unbounded output queues, or finite input buffers with
#: credit-based flow control.
BUFFER_MODELS = ("infinite", "credit")

#: Default input buffer per port and virtual channel with ``buffers="credit"`` (bytes): the
#: global-channel buffer of the CODES dragonfly model's Cray XC (Aries) configuration
#: (local 8 KiB, global 16 KiB). It covers the bandwidth-delay product plus one chunk on
#: every preset, so a lone flow runs at full speed.
DEFAULT_BUFFER = 16384

#: The most virtual channels a port may have.
MAX_VCS = 16


class NetworkConfigError(TopologyError):
    """An invalid network configuration value."""


@dataclass(frozen=True, kw_only=True)
class NetworkConfig:
    """How messages cross the network.

    Attributes:
        model: ``"packet"`` (output-queued virtual cut-through on chunks; congestion emerges),
            ``"flow"`` (each message a flow on its route, link bandwidth shared max-min
            fairly) or ``"ideal"`` (no contention: o_s + sum(L) + S/min(B) + o_r).
        chunk_size: bytes per chunk of the packet model (the speed/accuracy knob). Accepts
            '4KiB'-style strings. The flow model accepts only the default.
        flow_segment: flow model only: messages larger than this many bytes cross the network
            as segments of at most this size, one after another (an adaptive routing picks
            each segment's path anew). ``None`` (default): one flow per message. Refused with
            the packet model; the ideal model ignores it (as it ignores chunk_size).
        flow_quantum: flow model only: seconds (or '1us'-style strings) of the rate quantum.
            ``None`` (default): exact, rates change at every start and end. With a quantum,
            flows start, and the others' rates change, only at multiples of it (a flow ends at
            its own time; the capacity it frees waits for the next multiple), so a start is
            late by less than a quantum and no link is ever over capacity: fewer, larger
            recomputations, for a speed/accuracy trade-off like chunk_size's.
        send_overhead: o_s, seconds of sender software overhead before injection.
        recv_overhead: o_r, seconds of receiver software overhead after the last byte.
        intra_node_bw: bandwidth of a copy between ranks of one node (bytes/s); ``None``
            takes the machine's memory bandwidth per node.
        intra_node_latency: latency of an intra-node copy (seconds).
        buffers: packet model only (the ideal model ignores it, the flow model refuses it): ``"infinite"`` (default: unbounded output queues, no
            back-pressure) or ``"credit"`` (finite input buffers per port and virtual
            channel, credit-based flow control, deadlock-free virtual channels).
        buffer_size: with ``buffers="credit"``: bytes of input buffer per port and virtual
            channel (default :data:`DEFAULT_BUFFER`); at least one chunk.
        vcs: with ``buffers="credit"``: virtual channels per port; ``None`` (default) takes
            the number the topology's routing needs for deadlock freedom, fewer is an error.
    """

    model: str = "packet"
    chunk_size: float | str = DEFAULT_CHUNK
    flow_segment: float | str | None = None
    flow_quantum: float | str | None = None
    send_overhead: float | str = 0.5e-6
    recv_overhead: float | str = 0.5e-6
    intra_node_bw: float | str | None = None
    intra_node_latency: float | str = 0.0
    buffers: str = "infinite"
    buffer_size: float | str | None = None
    vcs: int | None = None

    def __post_init__(self) -> None:
        if self.model in PLANNED_MODELS:
            raise NetworkConfigError(
                f"network model {self.model!r} is planned but not implemented yet; valid: {', '.join(NETWORK_MODELS)}"
            )
        if self.model not in NETWORK_MODELS:
            raise NetworkConfigError(f"network model {self.model!r} is unknown; valid: {', '.join(NETWORK_MODELS)}")
        try:
            c = parse_bytes(self.chunk_size, what="chunk_size")
            o_s = parse_time(self.send_overhead, what="send_overhead")
            o_r = parse_time(self.recv_overhead, what="recv_overhead")
            lat = parse_time(self.intra_node_latency, what="intra_node_latency")
            bw = None if self.intra_node_bw is None else parse_bandwidth(self.intra_node_bw, what="intra_node_bw")
            seg = None if self.flow_segment is None else parse_bytes(self.flow_segment, what="flow_segment")
            fq = None if self.flow_quantum is None else parse_time(self.flow_quantum, what="flow_quantum")
        except UnitError as exc:
            raise NetworkConfigError(str(exc)) from None
        if not (c >= 1 and float(c).is_integer()):
            raise NetworkConfigError(f"chunk_size must be a whole number of bytes >= 1, got {self.chunk_size!r}")
        if seg is not None:
            # The ideal model ignores both granularity knobs (a flow run's ideal baseline is
            # its own config with model="ideal"); the packet model would take it for a chunk.
            if self.model == "packet":
                raise NetworkConfigError(
                    "flow_segment is an option of the flow model only, got it with model 'packet' "
                    "(the packet model's knob is chunk_size)"
                )
            if not (seg >= 1 and float(seg).is_integer()):
                raise NetworkConfigError(f"flow_segment must be a whole number of bytes >= 1, got {self.flow_segment!r}")
            seg = int(seg)
        if fq is not None:
            if self.model == "packet":
                raise NetworkConfigError(
                    "flow_quantum is an option of the flow model only, got it with model 'packet'"
                )
            if not fq > 0:
                raise NetworkConfigError(f"flow_quantum must be > 0 seconds (or unset for exact rates), got {self.flow_quantum!r}")
        if self.model == "flow" and c != DEFAULT_CHUNK:
            raise NetworkConfigError(
                f"chunk_size is an option of the packet model only; the flow model has no chunks "
                f"(got chunk_size={self.chunk_size!r}; use flow_segment to split large messages)"
            )
        for name, v in (("send_overhead", o_s), ("recv_overhead", o_r), ("intra_node_latency", lat)):
            if not v >= 0:
                raise NetworkConfigError(f"{name} must be >= 0 seconds, got {v!r}")
        if bw is not None and not bw > 0:
            raise NetworkConfigError(f"intra_node_bw must be > 0, got {self.intra_node_bw!r}")
        self._check_buffers(int(c))
        object.__setattr__(self, "chunk_size", int(c))
        object.__setattr__(self, "flow_segment", seg)
        object.__setattr__(self, "flow_quantum", None if fq is None else float(fq))
        object.__setattr__(self, "send_overhead", float(o_s))
        object.__setattr__(self, "recv_overhead", float(o_r))
        object.__setattr__(self, "intra_node_latency", float(lat))
        object.__setattr__(self, "intra_node_bw", bw)

    def _check_buffers(self, chunk: int) -> None:
        if self.buffers not in BUFFER_MODELS:
            raise NetworkConfigError(f"buffers {self.buffers!r} is unknown; valid: {', '.join(BUFFER_MODELS)}")
        if self.buffers == "infinite":
            for name in ("buffer_size", "vcs"):
                if getattr(self, name) is not None:
                    raise NetworkConfigError(
                        f"{name} is an option of buffers='credit' only, got {name}={getattr(self, name)!r} "
                        f"with buffers='infinite'"
                    )
            return
        # The ideal model ignores it, as it ignores chunk_size: a packet run's ideal baseline
        # is its own config with model="ideal".
        if self.model == "flow":
            raise NetworkConfigError(
                "buffers='credit' is an option of the packet model only (the ideal model ignores it), "
                "got it with model 'flow'"
            )
        try:
            b = DEFAULT_BUFFER if self.buffer_size is None else parse_bytes(self.buffer_size, what="buffer_size")
        except UnitError as exc:
            raise NetworkConfigError(str(exc)) from None
        if not (b >= chunk and float(b).is_integer()):
            raise NetworkConfigError(
                f"buffer_size must be a whole number of bytes >= chunk_size ({chunk}), got {self.buffer_size!r}: "
                "a buffer smaller than one chunk can never accept one"
            )
        object.__setattr__(self, "buffer_size", int(b))
        v = self.vcs
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_VCS):
            raise NetworkConfigError(f"vcs must be an integer from 1 to {MAX_VCS} (or unset), got {v!r}")
