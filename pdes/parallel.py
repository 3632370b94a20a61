"""Conservative window synchronization over mpi4py.

Only imported when a simulator runs with an MPI communicator, so sequential runs never import
MPI. One window exchange costs one ``Alltoall`` of a small float64 table (bytes for each
destination, this rank's next event time, total bytes sent, failure or stop flag) and, only when some
rank has remote events, one ``Alltoallv`` of pickled batches: one pickle per destination rank
per window, never one per event. Packing, the collectives and unpacking are separate steps, so
a failure while packing or delivering events on one rank is reported to every rank through
the failure flag of the next table instead of leaving the others waiting in a collective.
SIGINT and SIGTERM travel the same way (:class:`StopSignals`), so that every rank stops at
the same exchange.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
import threading
from typing import Any

from .mpi_wait import MAX_SOCKET_BATCH, node_meeting

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


#: Seconds a rank sleeps between looks at a :func:`quiet_barrier` that is not complete.
QUIET_BARRIER_PAUSE_S = 0.0005


def quiet_barrier(comm: Any) -> None:
    """Wait until every rank of ``comm`` has called this, sleeping meanwhile.

    MPICH polls without pause in a blocking ``Barrier``: ranks that arrive early (while one
    rank still works alone) would take the cores of the ranks that work when there are more
    ranks than cores. Here a non-blocking barrier is looked at every
    :data:`QUIET_BARRIER_PAUSE_S` seconds instead (it advances whenever a rank looks).
    """
    if comm is None or comm.size == 1:
        return
    import time

    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(QUIET_BARRIER_PAUSE_S)


#: Seconds between a rank's last words and ``MPI_Abort`` (see :func:`abort_world`).
ABORT_GRACE_S = 0.2


def abort_world(code: int) -> None:
    """End every rank of this MPI program now, with exit status ``code``.

    The last resort for a rank that must stop alone (an interrupt outside a run's window
    loop): leaving by itself would leave the other ranks waiting in their next collective.
    Does nothing when MPI was never started or there is a single rank.
    """
    if "mpi4py.MPI" not in sys.modules:
        return  # MPI never started here, so no rank waits for this one in a collective
    from mpi4py import MPI

    if not MPI.Is_initialized() or MPI.Is_finalized() or MPI.COMM_WORLD.size == 1:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    # MPI_Abort makes the launcher kill every process at once; give its output forwarder a
    # moment to pass on what this rank just wrote (the message saying why it stops).
    import time

    time.sleep(ABORT_GRACE_S)
    MPI.COMM_WORLD.Abort(code)


class StopSignals:
    """While a parallel run's windows execute, SIGINT and SIGTERM stop every rank together.

    A rank's signal is only recorded (:attr:`signum`) while the rank is in the window
    exchange, and reported to every rank by the next exchange's table, after which every
    rank raises :class:`pdes.errors.Interrupted` (``collective=True``). A
    ``KeyboardInterrupt`` raised in the middle of the exchange's collectives would leave the
    other ranks waiting in one. While events run (:attr:`in_window`) the signal also raises
    ``KeyboardInterrupt`` at once, so that a long window ends promptly; the window loop
    catches it and goes on to the exchange. A signal that arrives while MPI blocks in a
    collective is seen when the collective returns (Python runs signal handlers between
    bytecodes), which is the exchange that every rank is reaching.

    Used as a context manager around the window loop; restores the previous handlers. A
    signal that was ignored stays ignored, and off the main thread nothing is installed.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signum = 0
        self.in_window = False
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, _frame: Any) -> None:
        if not self.signum:
            self.signum = signum
        if self.in_window:
            self.in_window = False
            from .errors import Interrupted

            raise Interrupted(signum)

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is not threading.main_thread():
            return self
        for s in self.SIGNALS:
            old = signal.getsignal(s)
            if old is signal.SIG_IGN or old is None:
                continue  # ignored (a background job's SIGINT), or set outside Python: left alone
            self._previous[s] = old
            signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for s, old in self._previous.items():
            signal.signal(s, old)
        self._previous.clear()


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
        # On an oversubscribed node the ranks meet in the kernel, not polling (pdes.mpi_wait).
        self.meeting, self.one_node = node_meeting(comm)

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

    def exchange(self, payloads: list[bytes] | None, local_min: float, failed: bool,
                 signum: int = 0) -> tuple[float, bool, int, list]:
        """Swap packed remote events with every rank (collectives only: nothing here can fail
        on one rank alone, so every rank always takes the same path).

        ``payloads`` is the result of :meth:`pack`, or None when this rank sends nothing
        (after a failure); ``signum`` is the signal that asks this rank to stop (0: none).
        Returns (global minimum next-event time over all heaps and in-flight events, whether
        any rank failed, the stop signal of any rank (0: none; the largest number when
        several), the received chunks for :meth:`unpack`). No events travel when a rank
        failed or asked to stop.
        """
        size = self.size
        if payloads is None:
            payloads = [b""] * size
        total = 0
        for b in payloads:
            total += len(b)
        # One flag per rank: 1 failed, -signum asked to stop, 0 neither.
        err = 1.0 if failed else -float(signum)
        meeting = self.meeting
        if meeting is not None and self.one_node:
            # Every rank gets every row of the table and, when every rank's batches are small
            # enough for the meeting, the batches addressed to it (shared memory or sockets).
            got, batches = meeting.meet_table(payloads, local_min, total, err, MAX_SOCKET_BATCH)
            if batches is not None and not any(got[3::4]):
                # No failure, and every rank's batches came with its row (every rank sees the
                # same rows, so every rank takes this path).
                self.bytes_sent += total
                return min(got[1::4]), False, 0, [b for b in batches if b]
        else:
            vals: list[float] = []
            for b in payloads:
                vals += (len(b), local_min, total, err)
            fmt = self._fmt
            fmt.pack_into(self._meta_send, 0, *vals)
            if meeting is not None:
                meeting.rows(b"")  # the node's ranks have all arrived before the collective
            self.comm.Alltoall(self._spec_send, self._spec_recv)
            got = fmt.unpack_from(self._meta_recv)
        tmin = min(got[1::4])
        flags = got[3::4]
        any_failed = max(flags) > 0.0
        lowest = min(flags)
        stop = -int(lowest) if lowest < 0.0 else 0
        chunks: list = []
        if any_failed or stop or not any(got[2::4]):
            return tmin, any_failed, stop, chunks
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
        # Every rank has just passed the table exchange: nobody waits long in this one.
        self.comm.Alltoallv([b"".join(payloads), (scounts, sdispl), BYTE], [recvbuf, (rcounts, rdispl), BYTE])
        mv = memoryview(recvbuf)
        for j in range(size):
            n = rcounts[j]
            if n:
                chunks.append(mv[rdispl[j] : rdispl[j] + n])
        return tmin, any_failed, 0, chunks

    def close(self) -> None:
        """Release the node meeting's socket (the exchange is not used after this)."""
        if self.meeting is not None:
            self.meeting.close()
            self.meeting = None

    def unpack(self, chunks: list) -> list:
        """The event tuples ``(time, key, dest id, service, data)`` of the received chunks."""
        received: list = []
        loads = pickle.loads
        for c in chunks:
            batch = loads(c)
            self.recv_events += len(batch)
            received += batch
        return received
