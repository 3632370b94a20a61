"""OTF2 traces: the otf2 app replays traces built here with the otf2 writer API (blocking and
non-blocking point-to-point, collectives, sub-communicators, compute scaling) to the runtimes
of the equivalent skeletons; clear errors for malformed and unsupported records; a skeleton
run exported with otf2=DIR replays to the same runtime."""

from __future__ import annotations

import pytest

otf2 = pytest.importorskip("otf2")
from otf2.enums import CollectiveOp, GroupType, Paradigm, RegionRole  # noqa: E402

from apps import AppConfigError, AppError, run_app  # noqa: E402
from apps.otf2trace.trace import load_trace, trace_ranks  # noqa: E402

RES = 10 ** 9  # ticks per second of the hand-built traces (nanoseconds)
UNDEF = 0xFFFFFFFF


class Trace:
    """A hand-built trace of ``p`` MPI ranks: one writer per rank, MPI_COMM_WORLD and the
    regions of the MPI calls, as Score-P defines them."""

    def __init__(self, path, p: int, subgroups: dict[str, tuple[int, ...]] | None = None):
        self._cm = otf2.writer.open(str(path), timer_resolution=RES)
        self.tr = self._cm.__enter__()
        d = self.tr.definitions
        node = d.system_tree_node("host")
        self.locs = [d.location(f"rank {r}", group=d.location_group(f"process {r}", system_tree_parent=node))
                     for r in range(p)]
        d.group("MPI", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=tuple(self.locs))
        world = d.group("world", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI, members=tuple(self.locs))
        self.comms = {"world": d.comm("MPI_COMM_WORLD", group=world)}
        for name, ranks in (subgroups or {}).items():
            g = d.group(name, group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI,
                        members=tuple(self.locs[r] for r in ranks))
            self.comms[name] = d.comm(name, group=g)
        self.main = d.region("main", paradigm=Paradigm.USER, region_role=RegionRole.FUNCTION)
        self.regions: dict[str, object] = {}
        self.w = [self.tr.event_writer_from_location(loc) for loc in self.locs]

    def region(self, name: str):
        r = self.regions.get(name)
        if r is None:
            r = self.regions[name] = self.tr.definitions.region(name, paradigm=Paradigm.MPI,
                                                                 region_role=RegionRole.POINT2POINT)
        return r

    def call(self, rank: int, name: str, t0: int, t1: int, early=(), late=()):
        """One MPI call of ``rank``: records ``early`` at its enter, ``late`` at its leave
        (each a (writer method name, args) pair)."""
        w = self.w[rank]
        reg = self.region(name)
        w.enter(t0, reg)
        for meth, args in early:
            getattr(w, meth)(t0, *args)
        for meth, args in late:
            getattr(w, meth)(t1, *args)
        w.leave(t1, reg)

    def close(self):
        self._cm.__exit__(None, None, None)


def _ring_trace(path, p: int, iters: int, nbytes: int, gap_ns: int, nonblocking: bool = False) -> None:
    """The ring skeleton as a trace: per iteration a compute gap, then send right / receive left
    (MPI_Sendrecv, or MPI_Irecv + MPI_Isend + MPI_Waitall). Traced call durations are
    arbitrary: the replay predicts them."""
    t = Trace(path, p)
    world = t.comms["world"]
    for r in range(p):
        right, left = (r + 1) % p, (r - 1) % p
        now = 1000
        t.w[r].enter(now, t.main)
        for i in range(iters):
            now += gap_ns
            if nonblocking:
                t.call(r, "MPI_Irecv", now, now + 7, early=[("mpi_irecv_request", (40 + i,))])
                t.call(r, "MPI_Isend", now + 7, now + 9, early=[("mpi_isend", (right, world, 0, nbytes, 90 + i))])
                t.call(r, "MPI_Waitall", now + 9, now + 500 + 13 * r,
                       late=[("mpi_isend_complete", (90 + i,)), ("mpi_irecv", (left, world, 0, nbytes, 40 + i))])
                now += 500 + 13 * r
            else:
                t.call(r, "MPI_Sendrecv", now, now + 333 * (r + 1),
                       early=[("mpi_send", (right, world, 0, nbytes))], late=[("mpi_recv", (left, world, 0, nbytes))])
                now += 333 * (r + 1)
        t.w[r].leave(now, t.main)
    t.close()


@pytest.mark.parametrize("nonblocking", [False, True])
def test_a_traced_ring_replays_to_the_ring_skeletons_runtime(tmp_path, nonblocking):
    _ring_trace(tmp_path / "ring", 4, iters=3, nbytes=100_000, gap_ns=5000, nonblocking=nonblocking)
    rep = run_app("tiny-torus", "otf2", 4, ranks_per_node=1, trace=str(tmp_path / "ring"), comm=None)
    ske = run_app("tiny-torus", "ring", 4, ranks_per_node=1, iters=3, nbytes=100_000, compute_s=5e-6, comm=None)
    assert rep.runtime == ske.runtime and rep.bytes_sent == ske.bytes_sent and rep.messages == ske.messages
    assert rep.rank_results[0] == {"ranks": 4, "records": 4 * (2 + 3 * (10 if nonblocking else 4)), "skipped": {}}


def test_compute_scale_multiplies_the_gaps_between_calls(tmp_path):
    _ring_trace(tmp_path / "ring", 4, iters=3, nbytes=1000, gap_ns=20_000)
    one = run_app("tiny-torus", "otf2", 4, trace=str(tmp_path / "ring"), comm=None, network="ideal")
    half = run_app("tiny-torus", "otf2", 4, trace=str(tmp_path / "ring"), compute_scale=0.5, comm=None,
                   network="ideal")
    # Three gaps of 20 us on the critical path, halved.
    assert one.runtime - half.runtime == pytest.approx(3 * 10e-6, rel=1e-9)
    ske = run_app("tiny-torus", "ring", 4, iters=3, nbytes=1000, compute_s=10e-6, comm=None, network="ideal")
    assert half.runtime == ske.runtime


def test_collectives_replay_with_score_p_sizes(tmp_path):
    # The allreduce skeleton (compute 2 us, allreduce of 300,000 bytes: Rabenseifner) traced as
    # Score-P records it: sent = received = P * n.
    p, n = 8, 300_000
    t = Trace(tmp_path / "ar", p)
    world = t.comms["world"]
    for r in range(p):
        t.w[r].enter(0, t.main)
        now = 0
        for _ in range(2):
            now += 2000
            t.call(r, "MPI_Allreduce", now, now + 100, early=[("mpi_collective_begin", ())],
                   late=[("mpi_collective_end", (CollectiveOp.ALLREDUCE, world, UNDEF, p * n, p * n))])
            now += 100
        t.w[r].leave(now, t.main)
    t.close()
    rep = run_app("tiny-torus", "otf2", p, trace=str(tmp_path / "ar"), comm=None)
    ske = run_app("tiny-torus", "allreduce", p, iters=2, nbytes=n, compute_s=2e-6, comm=None)
    assert rep.runtime == ske.runtime and rep.bytes_sent == ske.bytes_sent


def test_a_sub_communicator_of_the_trace_carries_its_collectives(tmp_path):
    # Ranks 1 and 3 allreduce 4 KiB on their own communicator; their world ranks send it.
    t = Trace(tmp_path / "sub", 4, subgroups={"odd": (1, 3)})
    odd = t.comms["odd"]
    for r in range(4):
        t.w[r].enter(0, t.main)
        if r in (1, 3):
            t.call(r, "MPI_Bcast", 10, 20, early=[("mpi_collective_begin", ())],
                   late=[("mpi_collective_end", (CollectiveOp.BCAST, odd, 1, 2 * 4096 if r == 3 else 0, 4096))])
        t.w[r].leave(30, t.main)
    t.close()
    tr = load_trace(tmp_path / "sub")
    assert tr.comms == [(0, 1, 2, 3), (1, 3)] and tr.comm_names == ["MPI_COMM_WORLD", "odd"]
    assert tr.programs[3][1] == (8, 1, "bcast", 4096, 1)  # bcast of 4096 bytes from comm rank 1 (world 3)
    rep = run_app("tiny-torus", "otf2", 4, ranks_per_node=1, trace=str(tmp_path / "sub"), comm=None)
    assert rep.messages == 1 and rep.bytes_sent == 4096  # binomial bcast on 2 ranks: one message


def test_the_trace_must_have_the_jobs_rank_count(tmp_path):
    _ring_trace(tmp_path / "ring", 4, iters=1, nbytes=10, gap_ns=0)
    assert trace_ranks(tmp_path / "ring") == 4
    with pytest.raises(AppConfigError, match=r"the trace '.*ring' has 4 ranks, the job 2: run it on 4 ranks"):
        run_app("tiny-torus", "otf2", 2, trace=str(tmp_path / "ring"), comm=None)
    with pytest.raises(AppConfigError, match=r"trace: no OTF2 archive at"):
        run_app("tiny-torus", "otf2", 2, trace=str(tmp_path / "nothing"), comm=None)
    with pytest.raises(AppConfigError, match=r"compute_scale must be a number > 0"):
        run_app("tiny-torus", "otf2", 4, trace=str(tmp_path / "ring"), compute_scale=0, comm=None)


@pytest.mark.parametrize("meth,args,what", [
    ("mpi_request_cancelled", (5,), r"record MpiRequestCancelled at t=2e-08 s: a cancelled request, which the otf2 app "
                                    r"does not replay"),
    ("mpi_irecv", (0, "world", 3, 64, 5), r"record MpiIrecv at t=2e-08 s: completes receive request 5, which no "
                                          r"MpiIrecvRequest started"),
    ("mpi_send", (7, "world", 0, 64), r"record MpiSend at t=2e-08 s: rank 7 is not a rank of communicator "
                                      r"'MPI_COMM_WORLD' \(size 2\)"),
    ("mpi_collective_end", (CollectiveOp.SCAN, "world", UNDEF, 8, 8), r"record MpiCollectiveEnd at t=2e-08 s: "
                                                                       r"collective SCAN, which simhpc has no "
                                                                       r"algorithm for"),
])
def test_unsupported_or_malformed_records_name_the_record_and_the_location(tmp_path, meth, args, what):
    t_path = tmp_path / "bad"
    t = Trace(t_path, 2)
    args = tuple(t.comms["world"] if isinstance(a, str) else a for a in args)  # the trace's own definition
    for r in range(2):
        t.w[r].enter(0, t.main)
    t.call(1, "MPI_Wait", 10, 20, late=[(meth, args)])
    for r in range(2):
        t.w[r].leave(30, t.main)
    t.close()
    with pytest.raises(AppError, match=r"trace '.*bad/traces.otf2': location 'rank 1' \(rank 1\): " + what):
        run_app("tiny-torus", "otf2", 2, trace=str(t_path), comm=None)


def test_one_sided_records_are_refused(tmp_path):
    t = Trace(tmp_path / "rma", 2)
    win = t.tr.definitions.rma_win("window", comm=t.comms["world"])
    for r in range(2):
        t.w[r].enter(0, t.main)
    t.w[0].rma_put(10, win, 1, 4096, 0)
    for r in range(2):
        t.w[r].leave(30, t.main)
    t.close()
    with pytest.raises(AppError, match=r"location 'rank 0' \(rank 0\): record RmaPut at t=1e-08 s: one-sided MPI "
                                       r"\(RMA\), which the otf2 app does not replay"):
        run_app("tiny-torus", "otf2", 2, trace=str(tmp_path / "rma"), comm=None)


@pytest.mark.parametrize("name,ranks,args", [
    ("stencil3d", 8, {"face_bytes": 100_000, "iters": 2, "compute_s": 3e-6}),
    ("allreduce", 8, {"nbytes": 1 << 20, "iters": 2}),
    ("sub-a2a", 8, {"along": "x,yz", "nbytes": 500, "iters": 2}),
    ("pairs", 6, {"nbytes": 70_000, "iters": 3, "compute_s": 1e-6}),
])
def test_an_exported_skeleton_run_replays_to_the_same_runtime(tmp_path, name, ranks, args):
    out = tmp_path / name
    ske = run_app("tiny-torus", name, ranks, app_args=args, otf2=str(out), comm=None)
    plain = run_app("tiny-torus", name, ranks, app_args=args, comm=None)
    # Recording changes nothing of the simulation.
    assert (ske.runtime, ske.events, ske.bytes_sent) == (plain.runtime, plain.events, plain.bytes_sent)
    assert ske.otf2["ranks"] == ranks and ske.otf2["calls"] > 0 and plain.otf2 is None
    rep = run_app("tiny-torus", "otf2", ranks, trace=str(out), comm=None)
    assert rep.runtime == ske.runtime
    assert (rep.bytes_sent, rep.messages, rep.events) == (ske.bytes_sent, ske.messages, ske.events)


def test_the_exported_trace_reads_as_mpi_calls_with_simulated_times(tmp_path):
    ske = run_app("tiny-torus", "ring", 2, ranks_per_node=1, iters=2, nbytes=1000, compute_s=1e-6, otf2=str(tmp_path),
                  comm=None)
    with otf2.reader.open(str(tmp_path / "traces.otf2")) as tr:
        d = tr.definitions
        assert d.clock_properties.timer_resolution == 10 ** 12
        assert [n.name for n in d.system_tree_nodes if n.class_name == "simhpc job"] == ["job 0"]
        assert [loc.name for loc in d.locations] == ["job 0 rank 0", "job 0 rank 1"]
        assert [c.name for c in d.comms] == ["MPI_COMM_WORLD"]
        evs = [(loc.name, type(e).__name__, e.time) for loc, e in tr.events]
    r0 = [(k, t) for n, k, t in evs if n == "job 0 rank 0"]
    assert [k for k, _ in r0] == ["Enter"] + ["Enter", "MpiSend", "MpiRecv", "Leave"] * 2 + ["Leave"]
    assert r0[0][1] == round(ske.start * 1e12) and r0[-1][1] == round(ske.end * 1e12)
    assert r0[1][1] - r0[0][1] == 10 ** 6  # the compute before the first call: 1 us


def test_a_trace_of_several_jobs_needs_the_job_chosen(tmp_path):
    from apps.otf2trace.export import write_otf2
    from apps.platform import build_platform
    from apps.node import LaunchSpec

    plat = build_platform("tiny-torus", "packet", record=True, comm=None)
    for job, nodes in ((3, (0, 1)), (4, (2, 3, 4))):
        plat.launch(LaunchSpec.build(job=job, app="ring", args={"iters": 1, "nbytes": 100}, rank_nodes=nodes,
                                     report_to=plat.manager_eid))
    plat.sim.run()
    counts = write_otf2(tmp_path, plat.recorded(), machine="tiny-torus")
    assert counts["jobs"] == 2 and counts["ranks"] == 5
    with pytest.raises(AppConfigError, match=r"holds 2 jobs \(3, 4\); choose one with the argument job=J"):
        trace_ranks(tmp_path)
    assert trace_ranks(tmp_path, 4) == 3
    rep = run_app("tiny-torus", "otf2", 3, trace=str(tmp_path), job=4, placement=[2, 3, 4], ranks_per_node=1,
                  comm=None)
    alone = run_app("tiny-torus", "ring", 3, iters=1, nbytes=100, placement=[2, 3, 4], ranks_per_node=1, comm=None)
    assert rep.runtime == alone.runtime


def test_an_experiment_exports_one_system_tree_node_per_app_job(tmp_path):
    from simhpc.experiment import default_experiment_text, loads
    from simhpc.experiment.runner import run_experiment

    exp = loads(default_experiment_text(), overrides=["workload.jobs=4", "foreground.0.count=1",
                                                      "scheduler.alone_baseline=false",
                                                      "scheduler.ideal_baseline=false"])
    res = run_experiment(exp, comm=None, progress=False, otf2=str(tmp_path))
    j = res.jobs
    ran = (j["app"] != "timekeeper") & (j["status"] == "completed")
    with otf2.reader.open(str(tmp_path / "traces.otf2")) as tr:
        d = tr.definitions
        jobs = {n.name: n for n in d.system_tree_nodes if n.class_name == "simhpc job"}
        ranks = {name: sum(1 for loc in d.locations if loc.name.startswith(name + " rank ")) for name in jobs}
        hosts = [n for n in d.system_tree_nodes if n.class_name == "node"]
    assert sorted(jobs) == sorted(f"job {i}" for i in j["job_id"][ran])
    assert all(h.parent.class_name == "simhpc job" for h in hosts)
    fg = int(j["job_id"][j["foreground"]][0])
    row = list(j["job_id"]).index(fg)
    assert ranks[f"job {fg}"] == trace_ranks(tmp_path, fg) == 32
    # The foreground job replayed on its own, 4 ranks per node as in the run: the same bytes
    # cross the network.
    rep = run_app(exp.machine.build(), "otf2", 32, trace=str(tmp_path), job=fg, ranks_per_node=4, comm=None)
    assert rep.network_bytes == j["bytes_sent"][row] == 10 * 32 * 28 * 32 * 1024


def test_simhpc_app_writes_and_replays_a_trace(tmp_path, capsys):
    import json

    from simhpc.cli import main

    assert main(["app", "stencil2d", "--ranks", "4", "iters=2", "--otf2", str(tmp_path / "t"), "--json"]) == 0
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert first["otf2"]["ranks"] == 4 and first["otf2"]["calls"] == 4 * (1 + 2 * 9)  # cart_create; 4 irecv, 4 isend, waitall
    # --ranks comes from the trace.
    assert main(["app", "otf2", "--trace", str(tmp_path / "t"), "--json"]) == 0
    second = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert second["ranks"] == 4 and second["runtime"] == first["runtime"]
    assert main(["app", "ring", "--ranks", "2", "--trace", str(tmp_path / "t")]) == 2
    assert "--trace is the otf2 app's argument" in capsys.readouterr().err


def test_the_worked_example_records_replays_and_studies(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "examples" / "otf2" / "record_and_replay.py"
    spec = importlib.util.spec_from_file_location("otf2_example", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(["--out", str(tmp_path), "--jobs", "2", "--iters", "2"])
    assert out["replay"] == out["runtime"] and out["half_compute"] == out["half_skeleton"] < out["runtime"]
    assert len(out["slowdowns"]) == 2 and all(s >= 1 - 1e-9 for s in out["slowdowns"])
    assert "replayed jobs among 2 background jobs" in capsys.readouterr().out


def test_the_benchmark_compares_the_same_simulations():
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "bench_otf2.py"
    out = subprocess.run([sys.executable, str(script), "--machine", "tiny-torus", "--ranks", "8", "--iters", "2",
                          "--rounds", "1"], capture_output=True, text=True, timeout=300, check=True).stdout
    res = json.loads(out.strip().splitlines()[-1])
    assert res["bench"] == "otf2" and res["baseline"] == "skeleton" and res["same_simulation"]
    assert set(res["patterns"]) == {"stencil3d", "allreduce", "pairs"}
    assert all(p["replay_vs_skeleton_cpu"] > 0 and p["trace_events"] > 0 for p in res["patterns"].values())
    assert "replay/skeleton cpu" in out


def test_a_non_blocking_collective_runs_where_it_starts(tmp_path):
    # MPI_Iallreduce of 4 KiB started at 1 us and completed in an MPI_Wait after 5 us of
    # compute: replayed as the blocking allreduce, then the compute.
    p, n = 4, 4096
    t = Trace(tmp_path / "nbc", p)
    world = t.comms["world"]
    for r in range(p):
        t.w[r].enter(0, t.main)
        t.call(r, "MPI_Iallreduce", 1000, 1100, early=[("non_blocking_collective_request", (9,))])
        t.call(r, "MPI_Wait", 6100, 6200, late=[("non_blocking_collective_complete",
                                                 (CollectiveOp.ALLREDUCE, world, UNDEF, p * n, p * n, 9))])
        t.w[r].leave(6200, t.main)
    t.close()
    prog = load_trace(tmp_path / "nbc").programs[0]
    assert prog == [(0, 1e-6), (8, 0, "allreduce", n, -1), (0, 5e-6)]
    rep = run_app("tiny-torus", "otf2", p, trace=str(tmp_path / "nbc"), comm=None)
    assert rep.bytes_sent == run_app("tiny-torus", "allreduce", p, iters=1, nbytes=n, comm=None).bytes_sent


def test_simhpc_app_reports_an_unreplayable_trace_in_one_line(tmp_path, capsys):
    from simhpc.cli import main

    t = Trace(tmp_path / "bad", 2)
    for r in range(2):
        t.w[r].enter(0, t.main)
    t.call(1, "MPI_Wait", 10, 20, late=[("mpi_isend_complete", (3,))])
    for r in range(2):
        t.w[r].leave(30, t.main)
    t.close()
    assert main(["app", "otf2", "--trace", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"simhpc: error: trace '{tmp_path / 'bad' / 'traces.otf2'}': location 'rank 1' (rank 1): record "
        "MpiIsendComplete at t=2e-08 s: completes send request 3, which no MpiIsend started"]


def _all_collectives(mpi, *, uneven=False):
    """Every collective simhpc has, on the world, a split and a duplicate communicator."""
    mpi.barrier()
    mpi.bcast(70_000, root=1)
    mpi.reduce(3000, root=2)
    mpi.gather(500, root=0)
    mpi.scatter(800, root=3)
    mpi.allgather(1200)
    mpi.alltoall(900)
    mpi.reduce_scatter(2000)
    half = mpi.comm_split(mpi.rank % 2, key=-mpi.rank)
    half.allreduce(100_000)
    twin = half.dup()
    twin.bcast(4096, root=0)
    if uneven:
        mpi.reduce_scatter([1000 * (r + 1) for r in range(mpi.size)])
        mpi.alltoallv([100 * (r + 1) for r in range(mpi.size)])


def test_every_collective_round_trips(tmp_path):
    from apps import app

    app("test-otf2-collectives")(_all_collectives)
    ske = run_app("tiny-torus", "test-otf2-collectives", 6, ranks_per_node=1, otf2=str(tmp_path / "c"), comm=None)
    rep = run_app("tiny-torus", "otf2", 6, ranks_per_node=1, trace=str(tmp_path / "c"), comm=None)
    assert (rep.runtime, rep.bytes_sent, rep.events) == (ske.runtime, ske.bytes_sent, ske.events)
    tr = load_trace(tmp_path / "c")
    assert sorted(set(map(len, tr.comms))) == [3, 6] and len(tr.comms) == 5  # world, 2 halves, 2 twins
    # Sizes per rank vary in the v-forms: they replay with the rank's average, and run.
    ske = run_app("tiny-torus", "test-otf2-collectives", 6, ranks_per_node=1, uneven=True,
                  otf2=str(tmp_path / "u"), comm=None)
    rep = run_app("tiny-torus", "otf2", 6, ranks_per_node=1, trace=str(tmp_path / "u"), comm=None)
    assert rep.messages == ske.messages and rep.runtime > 0


def _polling(mpi):
    """Rank 0 polls for a large message with test() and compute; rank 1 probes, then receives
    with waitany; both end with a blocking exchange."""
    if mpi.rank == 0:
        req = mpi.irecv(1, tag=5)
        while not mpi.test(req):
            mpi.compute(3e-6)
        mpi.send(1, 10, tag=6)
    else:
        mpi.compute(20e-6)
        mpi.send(0, 200_000, tag=5)
        mpi.probe(0, 6)
        _, st = mpi.waitany([mpi.irecv(0, 6)])
        assert st.nbytes == 10
    mpi.sendrecv(1 - mpi.rank, 5000)


def test_polling_probing_and_waitany_round_trip(tmp_path):
    from apps import app

    app("test-otf2-polling")(_polling)
    ske = run_app("tiny-torus", "test-otf2-polling", 2, ranks_per_node=1, otf2=str(tmp_path), comm=None)
    rep = run_app("tiny-torus", "otf2", 2, ranks_per_node=1, trace=str(tmp_path), comm=None)
    assert (rep.runtime, rep.bytes_sent, rep.events) == (ske.runtime, ske.bytes_sent, ske.events)
    prog = load_trace(tmp_path).programs[0]
    assert sum(1 for op in prog if op[0] == 7) >= 5  # the failed tests replay as tests


def test_the_bindings_event_objects_give_the_same_programs(tmp_path, monkeypatch):
    # The slower path, for bindings whose internals the callback reader does not know.
    from apps.otf2trace import trace as T

    _ring_trace(tmp_path / "ring", 4, iters=2, nbytes=100_000, gap_ns=5000, nonblocking=True)
    run_app("tiny-torus", "stencil2d", 4, iters=2, otf2=str(tmp_path / "st"), comm=None)
    fast = [T.load_trace(tmp_path / name) for name in ("ring", "st")]

    def refuse(*_a, **_k):
        raise T._NoFastPath()

    monkeypatch.setattr(T, "_read_records", refuse)
    slow = [T.load_trace(tmp_path / name) for name in ("ring", "st")]
    for f, s in zip(fast, slow):
        assert s.programs == f.programs and s.records == f.records and s.comms == f.comms
