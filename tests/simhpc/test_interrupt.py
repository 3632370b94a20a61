"""Ctrl-C and SIGTERM stop a command cleanly: the message, status 128 + signal, outputs intact.

Under mpirun every rank must end promptly, whichever rank got the signal: a rank left behind
would wait for the others in a collective forever, busy-polling (MPICH spins in blocking
calls). The commands are started as real processes and signalled as a terminal would
(the whole process group) or as a batch system might (one process).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from tests_support import MPIRUN

try:
    import mpi4py  # noqa: F401

    HAVE_MPI4PY = True
except ImportError:  # pragma: no cover
    HAVE_MPI4PY = False
needs_mpi = pytest.mark.skipif(MPIRUN is None or not HAVE_MPI4PY, reason="needs mpirun and mpi4py (pip install '.[mpi]')")
needs_proc = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads process state from /proc")

# A run that lasts minutes: it is always still running when the signal comes.
LONG_RUN = ["run", "--quiet", "--set", "workload.jobs=2000"]
RUNNING_CPU_S = 4.0  # CPU time of each rank before the signal: imports and set-up are done
PROMPT_S = 15.0  # every process gone within this (the fix takes well under a second)


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(c) for c in text.split()]


def _python_procs(root: int) -> list[int]:
    """The Python processes under ``root`` (the ranks, under mpirun's proxy), in rank order."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        kids = _children(pid)
        todo += kids
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        if "python" in os.path.basename(exe):
            found.append(pid)
    return sorted(found, key=_rank_of)


def _rank_of(pid: int) -> int:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return 0
    for v in env:
        if v.startswith(b"PMI_RANK="):
            return int(v[9:])
    return 0


def _cpu_s(pid: int) -> float:
    """CPU seconds the process has used (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start(argv: list[str], ranks: int, cwd: Path, *, cpu_s: float = 0.0,
           env: dict[str, str] | None = None) -> tuple[subprocess.Popen, list[int]]:
    """Start the command (under mpirun when ranks > 1) in its own process group.

    Returns once every rank has used ``cpu_s`` seconds of CPU (well into the simulation, past
    the imports and set-up), or, with ``cpu_s`` 0, has printed a line "ready".
    """
    launch = [MPIRUN, "-n", str(ranks)] if ranks > 1 else []
    proc = subprocess.Popen([*launch, sys.executable, *argv], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, **(env or {})})
    deadline = time.monotonic() + 300
    if not cpu_s:
        _wait_ready(proc, ranks, deadline)
    while True:
        assert proc.poll() is None, f"the command ended before the signal: {proc.communicate()}"
        pids = [proc.pid] if ranks == 1 else _python_procs(proc.pid)
        if len(pids) == ranks and all(_cpu_s(p) >= cpu_s for p in pids):
            return proc, pids
        if time.monotonic() > deadline:  # pragma: no cover
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"the command never got going: {proc.communicate()}")
        time.sleep(0.1)


def _wait_ready(proc: subprocess.Popen, ranks: int, deadline: float) -> None:
    """Wait until every rank has printed "ready". mpirun forwards the ranks' output in
    whatever pieces it read, so two ranks' lines may arrive joined ("readyready"): count the
    words, and never block past the deadline (a rank that never gets ready is a failure,
    not a hang)."""
    import select

    seen, text = 0, ""
    fd = proc.stdout.fileno()
    while seen < ranks:
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            _kill_all(proc, _python_procs(proc.pid) if ranks > 1 else [])
            out, err = proc.communicate()
            pytest.fail(f"{seen} of {ranks} ranks got ready: {text + out!r} {err!r}")
        if select.select([fd], [], [], min(left, 1.0))[0]:
            chunk = os.read(fd, 4096).decode()
            if not chunk:
                continue
            text += chunk
            seen = text.count("ready")


def _finish(proc: subprocess.Popen, ranks_pids: list[int]) -> tuple[int, str, float]:
    """Wait for the command; (status, stderr, seconds). Kills everything left on a timeout."""
    t0 = time.monotonic()
    try:
        _, err = proc.communicate(timeout=PROMPT_S)
    except subprocess.TimeoutExpired:
        alive = {p: _signal_state(p) for p in ranks_pids if Path(f"/proc/{p}").exists()}
        _kill_all(proc, ranks_pids)
        out, err = proc.communicate()
        pytest.fail(f"still running {PROMPT_S} s after the signal (processes and their signal state: {alive}); "
                    f"output {out!r} {err!r}")
    # No rank lingers after mpirun ends (the launcher may take a moment to reap them).
    while any(_alive(p) for p in ranks_pids) and time.monotonic() < t0 + PROMPT_S:
        time.sleep(0.1)
    took = time.monotonic() - t0
    left = [p for p in ranks_pids if _alive(p)]
    if left:
        _kill_all(proc, left)
    assert not left, f"ranks still running after mpirun ended: {err}"
    return proc.returncode, err, took


def _signal_state(pid: int) -> dict[str, str]:
    """Each thread's state, pending/blocked/caught signal masks and wait channel, so that a
    rank that never acted on its signal says where it was."""
    state = {}
    for task in sorted(Path(f"/proc/{pid}/task").glob("*")):
        try:
            lines = (task / "status").read_text().splitlines()
            wchan = (task / "wchan").read_text()
        except OSError:
            continue
        keep = [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith(("State", "SigPnd", "ShdPnd", "SigBlk", "SigCgt"))]
        state[task.name] = " ".join(keep + [wchan])
    return state


def _kill_all(proc: subprocess.Popen, pids: list[int]) -> None:
    """SIGKILL the launcher's process group and every rank (the ranks may sit in sessions of
    their own, out of the group's reach), so a failing test never leaves a rank spinning."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass


def _alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


@pytest.fixture
def old_results(tmp_path):
    path = tmp_path / "results.h5"
    path.write_bytes(b"results of an earlier run\n" * 100)
    return path


def _module_argv(*args: str) -> list[str]:
    return ["-m", "simhpc.cli", *args]


@needs_proc
@pytest.mark.slow
def test_sigterm_stops_a_sequential_run_like_ctrl_c(tmp_path, old_results):
    before = old_results.read_bytes()
    proc, pids = _start(_module_argv(*LONG_RUN, "--out", str(old_results)), 1, tmp_path, cpu_s=RUNNING_CPU_S)
    proc.send_signal(signal.SIGTERM)
    code, err, _ = _finish(proc, pids)
    assert code == 128 + signal.SIGTERM
    assert err.strip().splitlines()[-1] == "simhpc: interrupted" and "Traceback" not in err
    assert old_results.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.h5"]  # no temp file left


@needs_mpi
@needs_proc
@pytest.mark.slow
@pytest.mark.parametrize("how,wait,parallel", [
    ("ctrl-c", "spin", "simulation"), ("sigterm-rank-1", "spin", "simulation"), ("sigterm-rank-0", "spin", "simulation"),
    ("ctrl-c", "block", "simulation"), ("sigterm-rank-1", "block", "simulation"),
    ("ctrl-c", "spin", "baselines"), ("sigterm-rank-1", "spin", "baselines"),
])
def test_a_signal_under_mpirun_ends_every_rank_promptly(how, wait, parallel, tmp_path, old_results):
    # wait="block": the ranks wait for each other in the kernel (pdes.mpi_wait), as on a
    # node with more ranks than cores; a signal must still reach every rank's next exchange.
    # parallel="baselines": every rank runs the whole simulation on its own (no exchanges).
    before = old_results.read_bytes()
    proc, pids = _start(_module_argv(*LONG_RUN, "--parallel", parallel, "--out", str(old_results)), 2, tmp_path,
                        cpu_s=RUNNING_CPU_S, env={"PDES_MPI_WAIT": wait})
    if how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal does: mpirun and both ranks get it
        expected = {128 + signal.SIGINT}
    else:
        os.kill(pids[int(how[-1])], signal.SIGTERM)
        expected = {128 + signal.SIGTERM}
    code, err, took = _finish(proc, pids)
    assert code in expected, err
    assert "simhpc: interrupted" in err and "Traceback" not in err
    assert err.count("simhpc: interrupted") == 1  # the ranks stopped together: one line
    assert old_results.read_bytes() == before
    assert took < PROMPT_S


@needs_mpi
@needs_proc
@pytest.mark.slow
def test_ctrl_c_stops_a_study_under_mpirun(tmp_path):
    study = Path(__file__).resolve().parents[2] / "examples" / "studies" / "interference.toml"
    out = tmp_path / "study.h5"
    out.write_bytes(b"an earlier study\n")
    proc, pids = _start(_module_argv("study", str(study), "--out", str(out), "--set", "study.seeds=20"), 2, tmp_path,
                        cpu_s=RUNNING_CPU_S)
    os.killpg(proc.pid, signal.SIGINT)
    code, err, _ = _finish(proc, pids)
    assert code != 0 and "simhpc: interrupted" in err and "Traceback" not in err
    assert out.read_bytes() == b"an earlier study\n"


@needs_mpi
@needs_proc
@pytest.mark.slow
@pytest.mark.parametrize("signalled", [0, 1])
def test_a_rank_interrupted_alone_outside_a_run_ends_the_others(signalled, tmp_path):
    # The last resort: one rank stops while the other waits for it in a collective (as
    # rank 0 waits in gather while the others finish their share of runs).
    script = tmp_path / "cmd.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        from mpi4py import MPI
        from simhpc.cli.common import terminate_as_interrupt, user_errors

        comm = MPI.COMM_WORLD
        with terminate_as_interrupt(), user_errors() as status:
            print("ready", flush=True)
            if comm.rank == {signalled}:
                # Interrupted here, in Python as a rank working on its share would be: short
                # sleeps, so the handler runs whichever of MPI's threads the signal reached.
                for _ in range(6000):
                    time.sleep(0.1)
            comm.bcast("never sent", root={signalled})
        sys.exit(status.code)
    """))
    proc, pids = _start([str(script)], 2, tmp_path)
    os.kill(pids[signalled], signal.SIGTERM)
    code, err, _ = _finish(proc, pids)
    assert code != 0 and "simhpc: interrupted" in err
