"""pdes.parallel.StopSignals: how a parallel run's window loop takes SIGINT and SIGTERM.

The collective stop itself (every rank raising together) is tested under mpirun in
tests/mpi/test_parallel_kernel.py; here, the handler's two behaviours on one process.
"""

from __future__ import annotations

import os
import signal

import pytest

from pdes import Interrupted
from pdes.parallel import StopSignals


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_outside_the_window_a_signal_is_only_recorded_for_the_next_exchange(signum):
    before = signal.getsignal(signum)
    with StopSignals() as stop:
        os.kill(os.getpid(), signum)  # no KeyboardInterrupt here: MPI may be mid-exchange
        assert stop.signum == signum
    assert signal.getsignal(signum) is before


def test_inside_the_window_a_signal_raises_at_once():
    with StopSignals() as stop:
        stop.in_window = True
        with pytest.raises(Interrupted) as ei:
            os.kill(os.getpid(), signal.SIGTERM)
        assert ei.value.signum == signal.SIGTERM and not ei.value.collective
        assert stop.signum == signal.SIGTERM and not stop.in_window
        os.kill(os.getpid(), signal.SIGINT)  # a second signal keeps the first one's number
        assert stop.signum == signal.SIGTERM


def test_an_ignored_signal_stays_ignored():
    old = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with StopSignals() as stop:
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGTERM)
            assert stop.signum == 0
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, old)
