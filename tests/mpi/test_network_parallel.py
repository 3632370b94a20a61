"""The packet and ideal models give identical deliveries and link statistics for any P."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.mpi


def _traffic(n):
    # Every node sends three messages of different sizes to scattered destinations.
    return {s: [((s * 7 + k) % n, 1500 * k + 64, s % 4) for k in range(1, 4)] for s in range(n)}


@pytest.mark.parametrize("machine", ["tiny-fattree3", "tiny-torus", "tiny-dragonfly"])
@pytest.mark.parametrize("model", ["packet", "ideal"])
def test_deliveries_and_link_stats_identical_to_sequential(machine, model):
    from mpi4py import MPI

    from models.presets import get_machine
    from tests_support import run_traffic

    comm = MPI.COMM_WORLD
    topo = get_machine(machine).topology
    msgs = _traffic(topo.n_nodes)
    sim, net, log, sent = run_traffic(topo, msgs, model=model, chunk=1024, o_s=2e-7, o_r=3e-7, comm=comm)
    st = net.stats()
    logs = comm.gather(log, root=0)
    if comm.rank == 0:
        par = sorted(x for part in logs for x in part)
        _, net1, log1, _ = run_traffic(topo, msgs, model=model, chunk=1024, o_s=2e-7, o_r=3e-7, comm=None)
        st1 = net1.stats()
        assert par == log1
        assert np.array_equal(st.link_bytes, st1.link_bytes)
        assert np.array_equal(st.link_busy, st1.link_busy)
        assert np.array_equal(st.link_max_queue, st1.link_max_queue)
        assert st.job_bytes == st1.job_bytes and st.job_hop_bytes == st1.job_hop_bytes
        assert st.chunks == st1.chunks
        if comm.size > 1:
            assert sim.stats.remote_events > 0
