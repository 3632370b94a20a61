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
import sys
from typing import Any

import numpy as np

_BYTES, _TMIN, _TOTAL, _ERR = range(4)


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
    """The per-window collective: global minimum next-event time plus the remote events."""

    def __init__(self, comm: Any):
        from mpi4py import MPI

        self.MPI = MPI
        self.comm = comm
        self.size = comm.size
        self.rank = comm.rank
        self.meta_send = np.zeros((self.size, 4), dtype=np.float64)
        self.meta_recv = np.zeros((self.size, 4), dtype=np.float64)
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
        for j in range(size):
            box = outboxes[j]
            if box:
                self.sent_events += len(box)
                b = pickle.dumps(box, protocol=pickle.HIGHEST_PROTOCOL)
                box.clear()
            else:
                b = b""
            payloads.append(b)
            total += len(b)
        ms = self.meta_send
        ms[:, _BYTES] = [len(b) for b in payloads]
        ms[:, _TMIN] = local_min
        ms[:, _TOTAL] = total
        ms[:, _ERR] = 1.0 if failed else 0.0
        mr = self.meta_recv
        self.comm.Alltoall(ms, mr)
        tmin = float(mr[:, _TMIN].min())
        any_failed = bool(mr[:, _ERR].any())
        received: list = []
        if any_failed or not mr[:, _TOTAL].any():
            return tmin, any_failed, received
        self.bytes_sent += total
        scounts = np.array([len(b) for b in payloads], dtype=np.int64)
        rcounts = mr[:, _BYTES].astype(np.int64)
        if scounts.max(initial=0) >= 2**31 or rcounts.max(initial=0) >= 2**31:
            raise OverflowError("more than 2 GiB of remote events in one window; lower the lookahead or add ranks")
        sdispl = np.zeros(size, dtype=np.int64)
        np.cumsum(scounts[:-1], out=sdispl[1:])
        rdispl = np.zeros(size, dtype=np.int64)
        np.cumsum(rcounts[:-1], out=rdispl[1:])
        sendbuf = np.frombuffer(b"".join(payloads), dtype=np.uint8) if total else np.zeros(0, np.uint8)
        recvbuf = np.empty(int(rcounts.sum()), dtype=np.uint8)
        BYTE = self.MPI.BYTE
        self.comm.Alltoallv(
            [sendbuf, (scounts.astype(np.int32), sdispl.astype(np.int32)), BYTE],
            [recvbuf, (rcounts.astype(np.int32), rdispl.astype(np.int32)), BYTE],
        )
        mv = memoryview(recvbuf)
        for j in range(size):
            n = int(rcounts[j])
            if n:
                batch = pickle.loads(mv[int(rdispl[j]) : int(rdispl[j]) + n])
                self.recv_events += len(batch)
                received.extend(batch)
        return tmin, any_failed, received
