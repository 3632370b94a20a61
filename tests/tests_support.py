"""Helpers shared by several test modules (importable from tests/ and tests/mpi/)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from models.network import Network, NetworkConfig, NetworkNode, network_lookahead
from pdes import Simulator


#: The mpirun beside this Python (the mpich wheel's), else the one on PATH; None without one.
MPIRUN = shutil.which("mpirun", path=os.path.dirname(sys.executable)) or shutil.which("mpirun")


class Probe(NetworkNode):
    """Sends what it is told at t=0 and records every delivery and buffer release."""

    def __init__(self, net, log, sent):
        super().__init__(net)
        self.log = log
        self.sent_log = sent

    def on_message(self, src, nbytes, payload, job):
        self.log.append((self.sim.now, src, self.node, nbytes, payload, job))

    def on_sent(self, payload, job):
        self.sent_log.append((self.sim.now, self.node, payload))

    def go(self, msgs):
        """Send ``(dst, nbytes, job)`` or ``(dst, nbytes, job, notify)`` (default: notify)."""
        for m in msgs:
            self.net_send(m[0], m[1], (self.node, m[0]), job=m[2], notify=m[3] if len(m) > 3 else True)


def run_traffic(topo, msgs_by_src, *, model="packet", chunk=4096, o_s=0.0, o_r=0.0, mem_bw=10e9, comm=None,
                end_time=float("inf"), **net_kw):
    """Run the messages ``{src: [(dst, nbytes, job), ...]}``; ``net_kw``: more NetworkConfig keys."""
    sim = Simulator(lookahead=network_lookahead(topo), comm=comm, end_time=end_time)
    log, sent = [], []
    cfg = NetworkConfig(model=model, chunk_size=chunk, send_overhead=o_s, recv_overhead=o_r, **net_kw)
    net = Network(sim, topo, cfg, mem_bw=mem_bw, node_cls=Probe, node_args=(log, sent))
    for src, msgs in msgs_by_src.items():
        if sim.is_local(net.node_eid(src)):
            n = sim.entity("node", src)
            n.send(n.eid, "go", msgs, 0.0)
    sim.run()
    return sim, net, sorted(log), sorted(sent)




def load_test_module(relpath: str):
    """A test module of another folder (e.g. ``"simhpc/test_studies.py"``), imported once under
    its own name, so the MPI tests reuse the sequential tests' cases instead of copying them."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parent / relpath
    name = path.stem
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


#: The archive copies of the shipped traces, beside the repository when present: the one
#: place tests look outside the repository (never through an environment variable).
ARCHIVE_TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"


def archive_trace(name: str) -> Path:
    """The archive copy of shipped trace ``name``; skips the calling test when it is absent
    (the default test run needs nothing outside the repository)."""
    import pytest

    path = ARCHIVE_TRACES / name
    if not path.is_file():
        pytest.skip(f"{path} is absent (the archive copies live beside the repository)")
    return path


def assert_route_summaries_match_routes(topo) -> None:
    """Every node pair's ``route_summary`` is its route's length, narrowest link bandwidth and
    last (ejection) link."""
    bw = topo.link_bw.tolist()
    for s in range(topo.n_nodes):
        for d in range(topo.n_nodes):
            if s != d:
                r = topo.route_uncached(s, d)
                assert topo.route_summary(s, d) == (len(r), min(bw[l] for l in r), r[-1])
