"""Conservative window synchronization over mpi4py.

Only imported when a simulator runs with an MPI communicator, so sequential runs never import
MPI. One window exchange costs one ``Alltoall`` of a small float64 table (bytes for each
destination, this rank's next event time, total bytes sent, failure flag) and, only when some
rank has remote events, one ``Alltoallv`` of pickled batches: one pickle per destination rank
per window, never one per event.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
from typing import Any



def world_comm() -> Any | None:
    """MPI's world communicator when launched under mpirun with more than one rank, else None.

    The launcher is recognised from its environment (MPICH/Hydra, Open MPI, MVAPICH, PMIx),
    so a sequential run never imports mpi4py.
    """
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "PMIX_SIZE"):
        v = os.environ.get(var)
        if v is not None and v.isdigit() and int(v) > 1:
            from mpi4py import MPI

            return MPI.COMM_WORLD
    return None


def install_abort_hook(comm: Any) -> None:
    """Make an uncaught exception on one rank print and abort every rank (no hang)."""
    if comm is None or comm.size == 1 or getattr(sys.excepthook, "_pdes_abort", False):
        return
    previous = sys.excepthook

    def hook(tp, value, tb):  # pragma: no cover - exercised in subprocess tests
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

    def exchange(self, outboxes: list[list], local_min: float, failed: bool) -> tuple[float, bool, list]:
        """Swap remote events with every rank.

        Returns (global minimum next-event time over all heaps and in-flight events, whether
        any rank failed, the list of received event tuples).
        """
        size = self.size
        payloads = []
        total = 0
        dumps = pickle.dumps
        for box in outboxes:
            if box:
                self.sent_events += len(box)
                b = dumps(box, protocol=pickle.HIGHEST_PROTOCOL)
                box.clear()
                total += len(b)
            else:
                b = b""
            payloads.append(b)
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
        received: list = []
        if any_failed or not any(got[2::4]):
            return tmin, any_failed, received
        self.bytes_sent += total
        scounts = [len(b) for b in payloads]
        rcounts = [int(x) for x in got[0::4]]
        if max(scounts) >= 2**31 or max(rcounts) >= 2**31:
            raise OverflowError("more than 2 GiB of remote events in one window; lower the lookahead or add ranks")
        sdispl = [0] * size
        rdispl = [0] * size
        for j in range(1, size):
            sdispl[j] = sdispl[j - 1] + scounts[j - 1]
            rdispl[j] = rdispl[j - 1] + rcounts[j - 1]
        recvbuf = bytearray(sum(rcounts))
        BYTE = self.MPI.BYTE
        self.comm.Alltoallv([b"".join(payloads), (scounts, sdispl), BYTE], [recvbuf, (rcounts, rdispl), BYTE])
        mv = memoryview(recvbuf)
        loads = pickle.loads
        for j in range(size):
            n = rcounts[j]
            if n:
                batch = loads(mv[rdispl[j] : rdispl[j] + n])
                self.recv_events += len(batch)
                received += batch
        return tmin, any_failed, received
