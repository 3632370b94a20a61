"""Conservative window synchronization over mpi4py.

Only imported when a simulator runs with an MPI communicator, so sequential runs never import
MPI. One window exchange costs one ``Alltoall`` of a small float64 table (bytes for each
destination, this rank's next event time, total bytes sent, failure flag) and, only when some
rank has remote events, one ``Alltoallv`` of pickled batches: one pickle per destination rank
per window, never one per event. Packing, the collectives and unpacking are separate steps, so
a failure while packing or delivering events on one rank is reported to every rank through
the failure flag of the next table instead of leaving the others waiting in a collective.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
from typing import Any


# (size, rank) environment variables of the MPI launchers (MPICH/Hydra, Open MPI, MVAPICH, PMIx).
_LAUNCHER_VARS = (("PMI_SIZE", "PMI_RANK"), ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"),
                  ("MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"), ("PMIX_SIZE", "PMIX_RANK"))


def _launcher_var(index: int) -> int | None:
    for names in _LAUNCHER_VARS:
        v = os.environ.get(names[index])
        if v is not None and v.isdigit():
            return int(v)
    return None


def world_comm() -> Any | None:
    """MPI's world communicator when launched under mpirun with more than one rank, else None.

    The launcher is recognised from its environment, so a sequential run never imports mpi4py.
    """
    size = _launcher_var(0)
    if size is not None and size > 1:
        from mpi4py import MPI

        return MPI.COMM_WORLD
    return None


def launcher_rank() -> int:
    """This process's rank when started by mpirun (from the launcher's environment), else 0."""
    rank = _launcher_var(1)
    return 0 if rank is None else rank


def install_abort_hook(comm: Any) -> None:
    """Make an uncaught exception on one rank print and abort every rank (no hang)."""
    if comm is None or comm.size == 1 or getattr(sys.excepthook, "_pdes_abort", False):
        return
    previous = sys.excepthook

    def hook(tp, value, tb):  # pragma: no cover - exercised in subprocess tests
        # The error itself goes on the first line: output after it may be cut short when
        # the launcher tears the other ranks down.
        sys.stderr.write(f"[rank {comm.rank}] uncaught {tp.__name__}: {value}; aborting every rank\n")
        sys.stderr.flush()
        previous(tp, value, tb)
        sys.stderr.flush()
        comm.Abort(1)

    hook._pdes_abort = True  # type: ignore[attr-defined]
    sys.excepthook = hook


class WindowExchange:
    """The per-window collective: global minimum next-event time plus the remote events.

    The small table travels as packed doubles (``struct``) rather than numpy arrays: with a
    few ranks the per-window Python overhead, not the bytes, is what costs.
    """

    def __init__(self, comm: Any):
        from mpi4py import MPI

        self.MPI = MPI
        self.comm = comm
        self.size = size = comm.size
        self.rank = comm.rank
        self._fmt = struct.Struct(f"<{4 * size}d")
        self._meta_send = bytearray(self._fmt.size)
        self._meta_recv = bytearray(self._fmt.size)
        self._spec_send = [self._meta_send, MPI.DOUBLE]
        self._spec_recv = [self._meta_recv, MPI.DOUBLE]
        self.sent_events = 0
        self.recv_events = 0
        self.bytes_sent = 0

    def pack(self, outboxes: list[list]) -> list[bytes]:
        """Pickle each destination's batch of remote events (one pickle per batch).

        Raises (leaving the outboxes as they were) when an event cannot be pickled or a batch
        is too large; the caller then reports the failure in :meth:`exchange`.
        """
        payloads = []
        dumps = pickle.dumps
        for box in outboxes:
            b = dumps(box, protocol=pickle.HIGHEST_PROTOCOL) if box else b""
            if len(b) >= 2**31:
                raise OverflowError("more than 2 GiB of remote events for one rank in one window; lower the lookahead or add ranks")
            payloads.append(b)
        for box in outboxes:
            if box:
                self.sent_events += len(box)
                box.clear()
        return payloads

    def exchange(self, payloads: list[bytes] | None, local_min: float, failed: bool) -> tuple[float, bool, list]:
        """Swap packed remote events with every rank (collectives only: nothing here can fail
        on one rank alone, so every rank always takes the same path).

        ``payloads`` is the result of :meth:`pack`, or None when this rank sends nothing
        (after a failure). Returns (global minimum next-event time over all heaps and
        in-flight events, whether any rank failed, the received chunks for :meth:`unpack`).
        """
        size = self.size
        if payloads is None:
            payloads = [b""] * size
        total = 0
        for b in payloads:
            total += len(b)
        err = 1.0 if failed else 0.0
        vals: list[float] = []
        for b in payloads:
            vals += (len(b), local_min, total, err)
        fmt = self._fmt
        fmt.pack_into(self._meta_send, 0, *vals)
        self.comm.Alltoall(self._spec_send, self._spec_recv)
        got = fmt.unpack_from(self._meta_recv)
        tmin = min(got[1::4])
        any_failed = any(got[3::4])
        chunks: list = []
        if any_failed or not any(got[2::4]):
            return tmin, any_failed, chunks
        self.bytes_sent += total
        scounts = [len(b) for b in payloads]
        rcounts = [int(x) for x in got[0::4]]
        sdispl = [0] * size
        rdispl = [0] * size
        for j in range(1, size):
            sdispl[j] = sdispl[j - 1] + scounts[j - 1]
            rdispl[j] = rdispl[j - 1] + rcounts[j - 1]
        recvbuf = bytearray(sum(rcounts))
        BYTE = self.MPI.BYTE
        self.comm.Alltoallv([b"".join(payloads), (scounts, sdispl), BYTE], [recvbuf, (rcounts, rdispl), BYTE])
        mv = memoryview(recvbuf)
        for j in range(size):
            n = rcounts[j]
            if n:
                chunks.append(mv[rdispl[j] : rdispl[j] + n])
        return tmin, any_failed, chunks

    def unpack(self, chunks: list) -> list:
        """The event tuples ``(time, key, dest id, service, data)`` of the received chunks."""
        received: list = []
        loads = pickle.loads
        for c in chunks:
            batch = loads(c)
            self.recv_events += len(batch)
            received += batch
        return received
