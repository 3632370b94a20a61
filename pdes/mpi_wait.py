"""How the ranks of a parallel run wait for each other at the window exchange.

MPICH busy-polls while a blocking collective waits. With more ranks than cores on a node
(or a machine busy with other work) the waiting ranks then take CPU time from the ranks
that still compute: each window costs several scheduler time slices and a run slows down
far more than the extra ranks explain. Polling with pauses does not help either, since a
non-blocking collective only advances while every rank keeps calling into MPI.

So, when a node is oversubscribed, the ranks meet without MPI and sleep in the kernel while
they wait. When the whole run is on one node, each rank writes its row of the window table
and its batches of remote events into shared memory and sleeps on a futex until every row
is there (:class:`SharedMeeting`): one step, no system call to look for the others' rows,
and no MPI collective at all. Where there is no futex, the same step goes over Unix
datagram sockets (:meth:`NodeMeeting.meet`: each rank sends every other, in one datagram,
its entry for it and its batch for it, and blocks in ``recv``). On several nodes the ranks
of a node send their rows to the node's first rank, which answers once all have arrived,
and the MPI collective follows, entered by ranks that have all arrived.

The environment variable ``PDES_MPI_WAIT`` chooses (the same on every rank; ``mpirun``
passes the environment on):

* ``auto`` (default): ``block`` when this node runs more ranks than the cores this process may
  use (``os.sched_getaffinity``), else ``spin``;
* ``block``: always meet on the node as above (Linux only: it uses abstract socket names);
* ``spin``: MPI's own blocking collectives only (MPICH polls without pause: the fastest when
  every rank has a core to itself).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import platform
import socket
import struct
import sys
import tempfile
import time
from typing import Any

from .errors import ConfigError
from .validate import check_choice

#: The environment variable that chooses the waiting mode.
WAIT_VAR = "PDES_MPI_WAIT"
#: Its values (``auto``: ``block`` when oversubscribed, else ``spin``).
WAIT_MODES = ("auto", "block", "spin")


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - platforms without sched_getaffinity
        return os.cpu_count() or 1


def requested_mode() -> str:
    """``PDES_MPI_WAIT`` checked: one of :data:`WAIT_MODES`."""
    raw = os.environ.get(WAIT_VAR, "auto").strip().lower() or "auto"
    return check_choice(WAIT_VAR, raw, WAIT_MODES, error=ConfigError)


#: The most ranks that exchange their window entries and batches rank to rank through the
#: node meeting (each sends one datagram to every other per window); more, or ranks on
#: several nodes, meet and then use MPI.
ONE_NODE_MAX_RANKS = 32
#: Looks for the others' rows (or a datagram), with ``sched_yield`` between them, before a
#: waiting rank sleeps (on the futex, or in ``recv``). 10: with four ranks on two busy cores
#: it cost 6-11% less per window than 20 (PHOLD); 3 made two ranks 1.25x slower.
YIELD_TRIES = 10
#: One rank's entry of the window table for another: bytes of its batch for that rank, its
#: next event time, its total bytes, its failure or stop flag.
ENTRY = struct.Struct("<4d")
#: The largest batch of remote events one rank sends in a window through the node meeting;
#: a window with more goes through MPI's ``Alltoallv`` (every rank sees the same totals).
MAX_SOCKET_BATCH = 60 * 1024


class NodeMeeting:
    """The ranks of one node meeting over Unix datagram sockets (see the module).

    :meth:`rows` returns the rows of every rank of the node, in node-rank order, once all
    have given theirs; :meth:`swap` hands each rank the batches the others address to it.
    A rank waiting for the others sleeps in the kernel. Built collectively by
    :func:`node_meeting`.

    Datagrams carry a tag (``R`` row, ``T`` table, ``W``/``X`` a meeting's entry and batch in
    even/odd exchanges) and the sender's node rank. One that arrives before its turn (the next
    window's datagram of a quick rank) waits in a per-sender slot: a rank sends one of each
    per window, and never the next window's before every rank has given this one's (a rank is
    at most one exchange ahead of another, hence two alternating tags for :meth:`meet`).
    Sends never block: a receiver whose queue is full (Linux queues few datagrams per
    socket) is retried while this rank empties its own queue, so two ranks sending to each
    other cannot wait on each other.
    """

    def __init__(self, node_comm: Any, token: str):
        self.size = node_comm.size
        self.rank = node_comm.rank
        self._me = self.rank.to_bytes(2, "little")
        self._addr = [f"\0pdes-{token}-{r}".encode() for r in range(self.size)]
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.bind(self._addr[self.rank])
        self._bufsize = 64 * 1024 + 64 * self.size * self.size
        self._got: dict[int, dict[int, bytes]] = {ord("R"): {}, ord("T"): {}, ord("W"): {}, ord("X"): {}}
        self._parity = 0

    def _take(self, block: bool) -> bool:
        """File one datagram in its slot (waiting for one when ``block``); False if none."""
        try:
            d = self._sock.recv(self._bufsize, 0 if block else socket.MSG_DONTWAIT)
        except BlockingIOError:
            return False
        self._got[d[0]][int.from_bytes(d[1:3], "little")] = d[3:]
        return True

    def _send(self, dest: int, tag: bytes, body: bytes) -> None:
        self._put(dest, tag + self._me + body)

    def _put(self, dest: int, data: bytes) -> None:
        addr = self._addr[dest]
        sock = self._sock
        while True:
            try:
                sock.sendto(data, socket.MSG_DONTWAIT, addr)
                return
            except BlockingIOError:
                if not self._take(False):
                    time.sleep(20e-6)

    def _wait(self, slot: dict[int, bytes], src: int) -> bytes:
        # A few looks with the core handed to another runnable process in between (a
        # partner about to answer costs no sleep and wake-up), then sleep in the kernel.
        tries = YIELD_TRIES
        while src not in slot:
            if tries:
                tries -= 1
                if not self._take(False):
                    os.sched_yield()
            else:
                self._take(True)
        return slot.pop(src)

    def rows(self, row: bytes) -> list[bytes]:
        """Every node rank's ``row`` (all of one length), this rank's included."""
        n = self.size
        k = len(row)
        if self.rank == 0:
            got = [row]
            slot = self._got[ord("R")]
            for src in range(1, n):
                got.append(self._wait(slot, src))
            whole = b"".join(got)
            for dest in range(1, n):
                self._send(dest, b"T", whole)
        else:
            self._send(0, b"R", row)
            whole = self._wait(self._got[ord("T")], 0)
        return [whole[i * k : (i + 1) * k] for i in range(n)]

    def meet(self, entries: list[tuple], batches: list[bytes] | None) -> tuple[list[tuple], list[bytes]]:
        """Send node rank j, in one datagram, ``entries[j]`` (four floats) and ``batches[j]``
        (None: no batches); return, in node-rank order, every rank's entry for this rank and
        its batch for this rank (b"" if none), this rank's own included.

        One step for every rank: each sends before it waits, so a rank waits only for the
        ranks that have not arrived yet.
        """
        me = self.rank
        tag = b"W" if self._parity == 0 else b"X"
        self._parity ^= 1
        pre = tag + self._me
        pack = ENTRY.pack
        put = self._put
        for dest in range(self.size):
            if dest != me:
                put(dest, pre + pack(*entries[dest]) + batches[dest] if batches is not None else pre + pack(*entries[dest]))
        slot = self._got[tag[0]]
        wait = self._wait
        unpack = ENTRY.unpack_from
        got: list[tuple] = []
        out: list[bytes] = []
        for src in range(self.size):
            if src == me:
                got.append(entries[me])
                out.append(batches[me] if batches is not None else b"")
            else:
                d = wait(slot, src)
                got.append(unpack(d))
                out.append(d[ENTRY.size:])
        return got, out

    def meet_table(self, payloads: list[bytes], local_min: float, total: int, err: float,
                   limit: int) -> tuple[tuple, list[bytes] | None]:
        """:meth:`SharedMeeting.meet_table` over the sockets (:meth:`meet`)."""
        limit = min(limit, MAX_SOCKET_BATCH)
        got4, batches = self.meet([(len(b), local_min, total, err) for b in payloads],
                                  payloads if total <= limit else None)
        got = tuple(x for g in got4 for x in g)
        return got, (batches if max(got[2::4]) <= limit else None)

    def close(self) -> None:
        self._sock.close()


#: ``futex`` system call numbers by machine (the one-node meeting sleeps on a futex; other
#: machines meet over the sockets).
_SYS_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98, "riscv64": 98}
_FUTEX_WAIT, _FUTEX_WAKE = 0, 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _futex_call() -> Any | None:
    """libc's ``syscall`` set up for futexes, or None where there is none (not Linux, or a
    machine missing from :data:`_SYS_FUTEX`)."""
    if not sys.platform.startswith("linux") or platform.machine().lower() not in _SYS_FUTEX:
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):  # pragma: no cover - a libc without syscall()
        return None
    fn.restype = ctypes.c_long
    fn.argtypes = [ctypes.c_long, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                   ctypes.c_void_p, ctypes.c_int]
    return fn


class SharedMeeting:
    """The ranks of a run on one node meeting in shared memory (:meth:`meet_table`).

    Each rank writes its row of the window table (its batch size for every rank, its next event
    time, total bytes, failure or stop flag) and, when they are small enough, its batches
    into its own slot of a shared file mapping, then its exchange number: looking for the
    others' rows is a memory read, not a system call. A rank that finds some row missing
    looks again a few times with ``sched_yield`` in between (the core goes to a rank that
    still computes), then sleeps on a futex; each arriving rank changes the futex word and
    wakes the sleepers. Slots alternate between even and odd exchanges: a rank writes an
    exchange's slot only after every rank has read the one before it (a rank is at most one
    exchange ahead of another). Built collectively by :func:`node_meeting`.
    """

    def __init__(self, node_comm: Any, token: str, futex: Any):
        self.size = n = node_comm.size
        self.rank = node_comm.rank
        self._futex = futex
        self._row = struct.Struct(f"<{n + 3}d")
        self._table = struct.Struct(f"<{n * (n + 3)}d")
        self._seq_off = 64
        self._rows_off = 64 + 8 * 2 * n
        self._bufs_off = self._rows_off + 2 * self._table.size
        length = self._bufs_off + 2 * n * MAX_SOCKET_BATCH
        path = os.path.join("/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir(), f"pdes-{token}")
        if self.rank == 0:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            os.ftruncate(fd, length)
        node_comm.Barrier()  # the file exists at its full length
        if self.rank != 0:
            fd = os.open(path, os.O_RDWR)
        try:
            self._mm = mmap.mmap(fd, length)
        finally:
            os.close(fd)
        node_comm.Barrier()  # every rank has it mapped: the name is not needed any more
        if self.rank == 0:
            os.unlink(path)
        self._word = ctypes.c_int32.from_buffer(self._mm, 0)
        self._addr = ctypes.addressof(self._word)
        self._wait_for = _Timespec(0, 50_000_000)  # a safety net only: every arrival wakes
        self._mv = memoryview(self._mm)
        self._seqs = self._mv[self._seq_off : self._rows_off].cast("q")
        self._count = 0

    def meet_table(self, payloads: list[bytes], local_min: float, total: int, err: float,
                   limit: int) -> tuple[tuple, list[bytes] | None]:
        """Give this rank's row (``len(payloads[j])`` for each rank j, then ``local_min``,
        ``total``, ``err``) and, when ``total`` is at most ``limit`` (capped at
        :data:`MAX_SOCKET_BATCH`), its batches; return the table for this rank, flat as MPI's
        ``Alltoall`` would give it (for each rank in order: its batch size for this rank, its
        next event time, its total, its flag), and the batches addressed to this rank in rank
        order (this rank's own included), or None when some rank's total was over the limit
        (every rank then gets None).
        """
        n, me = self.size, self.rank
        limit = min(limit, MAX_SOCKET_BATCH)
        send = total <= limit
        self._count += 1
        seq = self._count
        par = seq & 1
        mv = self._mv
        rows = self._rows_off + par * self._table.size
        self._row.pack_into(self._mm, rows + me * self._row.size, *[len(b) for b in payloads], local_min, total, err)
        if send and total:
            base = self._bufs_off + (par * n + me) * MAX_SOCKET_BATCH
            mv[base : base + total] = b"".join(payloads)
        seqs = self._seqs
        lo = par * n
        seqs[lo + me] = seq
        # Every arrival changes the futex word (to a value no other arrival writes in this
        # exchange) and wakes the sleepers, after its row and number are in place.
        self._word.value = (seq * n + me) & 0x7FFFFFFF
        futex = self._futex
        futex(_SYS_FUTEX_NR, self._addr, _FUTEX_WAKE, 0x7FFFFFFF, None, None, 0)
        hi = lo + n
        tries = YIELD_TRIES
        while True:
            word = self._word.value  # read before looking, so that a later arrival changes it
            if min(seqs[lo:hi]) == seq:
                break
            if tries:
                tries -= 1
                os.sched_yield()
            else:
                futex(_SYS_FUTEX_NR, self._addr, _FUTEX_WAIT, word, ctypes.byref(self._wait_for), None, 0)
        vals = self._table.unpack_from(self._mm, rows)
        k = n + 3
        got: list = []
        big = False
        for i in range(n):
            r = i * k
            t = vals[r + n + 1]
            got += (vals[r + me], vals[r + n], t, vals[r + n + 2])
            if t > limit:
                big = True
        if big:
            return tuple(got), None
        batches: list[bytes] = []
        for i in range(n):
            if i == me:
                batches.append(payloads[me])
                continue
            r = i * k
            size = int(vals[r + me])
            if size:
                start = self._bufs_off + (par * n + i) * MAX_SOCKET_BATCH + int(sum(vals[r : r + me]))
                batches.append(bytes(mv[start : start + size]))
            else:
                batches.append(b"")
        return tuple(got), batches

    def close(self) -> None:
        self._seqs.release()
        self._mv.release()
        del self._word
        self._mm.close()


_SYS_FUTEX_NR = _SYS_FUTEX.get(platform.machine().lower(), 0)


def node_meeting(comm: Any) -> tuple[NodeMeeting | SharedMeeting | None, bool]:
    """Collectively over ``comm``: the node meeting of this rank (None when the ranks spin)
    and whether the whole communicator is on this one node. Every rank gets the same answer
    (an ``allreduce`` decides), so every rank takes the same path at every exchange.
    """
    from mpi4py import MPI

    mode = requested_mode()
    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.rank)
    try:
        want = mode == "block" or (mode == "auto" and node.size > usable_cores())
        can = sys.platform.startswith("linux") and node.size <= 65535
        use = comm.allreduce(1 if (want and can) else 0, op=MPI.MIN) == 1 and comm.allreduce(
            1 if want else 0, op=MPI.MAX) == 1
        if mode == "block" and not comm.allreduce(1 if can else 0, op=MPI.MIN):
            raise ConfigError(f"{WAIT_VAR}=block needs Linux (abstract Unix socket names); use auto or spin")
        if not use or node.size == 1:
            return None, False
        token = node.bcast(os.urandom(8).hex() if node.rank == 0 else None, root=0)
        # Ranks meet rank to rank (meet) only while each window's datagrams stay few; larger
        # runs meet with empty rows (rows), then use MPI.
        one_node = node.size == comm.size and comm.size <= ONE_NODE_MAX_RANKS
        futex = _futex_call() if one_node else None
        if comm.allreduce(0 if futex is None else 1, op=MPI.MIN):
            return SharedMeeting(node, token, futex), True
        meeting = NodeMeeting(node, token)
        node.Barrier()  # every socket is bound before anyone sends
        return meeting, one_node
    finally:
        node.Free()
