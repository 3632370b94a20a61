"""How the ranks of a parallel run wait for each other at the window exchange.

MPICH busy-polls while a blocking collective waits. With more ranks than cores on a node
(or a machine busy with other work) the waiting ranks then take CPU time from the ranks
that still compute: each window costs several scheduler time slices and a run slows down
far more than the extra ranks explain. Polling with pauses does not help either, since a
non-blocking collective only advances while every rank keeps calling into MPI.

So, when a node is oversubscribed, the ranks of that node meet first in a :class:`NodeMeeting`
over Unix datagram sockets and block in ``recv`` (no CPU while they wait, woken by the kernel
the moment a datagram comes). When the whole run is on one node, each rank sends every other
rank, in one datagram, its entry of the window table for that rank together with the batch
of remote events for it (:meth:`NodeMeeting.meet`): one step, in which the last rank to
arrive wakes every other directly, and no MPI collective at all. Otherwise the ranks of a
node send their rows to the node's first rank, which answers once all have arrived, and the
MPI collective follows, entered by ranks that have all arrived.

The environment variable ``PDES_MPI_WAIT`` chooses (the same on every rank; ``mpirun``
passes the environment on):

* ``auto`` (default): ``block`` when this node runs more ranks than the cores this process may
  use (``os.sched_getaffinity``), else ``spin``;
* ``block``: always meet on the node as above (Linux only: it uses abstract socket names);
* ``spin``: MPI's own blocking collectives only (MPICH polls without pause: the fastest when
  every rank has a core to itself).
"""

from __future__ import annotations

import os
import socket
import struct
import sys
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
#: Non-blocking looks for a datagram, with ``sched_yield`` between them, before a waiting
#: rank sleeps in ``recv``.
YIELD_TRIES = 20
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

    def close(self) -> None:
        self._sock.close()


def node_meeting(comm: Any) -> tuple[NodeMeeting | None, bool]:
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
        meeting = NodeMeeting(node, token)
        node.Barrier()  # every socket is bound before anyone sends
        # Ranks meet rank to rank (meet) only while each window's datagrams stay few; larger
        # runs meet with empty rows (rows), then use MPI.
        one_node = node.size == comm.size and comm.size <= ONE_NODE_MAX_RANKS
        return meeting, one_node
    finally:
        node.Free()
