"""pdes.validate (the shared checks of user-given values) and the one UserError family."""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil

import numpy as np
import pytest

from pdes.errors import UserError
from pdes.validate import check_bool, check_choice, check_float, check_int, check_ints, is_int, is_number
from simhpc.cli import main


class MyError(UserError):
    pass


# ------------------------------------------------------------------------------ is_int, is_number
@pytest.mark.parametrize("v", [0, -3, 2**70, np.int64(5), np.uint8(1), np.int32(-2)])
def test_is_int_takes_python_and_numpy_integers(v):
    assert is_int(v) and is_number(v)


@pytest.mark.parametrize("v", [True, False, np.bool_(True), 1.0, "1", None, [1], np.float64(2.0)])
def test_is_int_refuses_bools_floats_and_strings(v):
    assert not is_int(v)


@pytest.mark.parametrize("v", [1.5, np.float32(0.5), np.float64(-2.0), math.inf, math.nan, 3])
def test_is_number_takes_reals(v):
    assert is_number(v)


@pytest.mark.parametrize("v", [True, np.bool_(False), "1.5", None, 1j])
def test_is_number_refuses_bools_strings_and_complex(v):
    assert not is_number(v)


# ------------------------------------------------------------------------------ check_int
def test_check_int_accepts_and_normalises():
    assert check_int("n", 3, lo=1) == 3
    v = check_int("n", np.int64(7), lo=0, hi=10)
    assert v == 7 and type(v) is int
    assert check_int("n", -5) == -5


@pytest.mark.parametrize("value,kw,message", [
    (0, dict(lo=1), "n must be an integer >= 1, got 0"),
    (11, dict(lo=0, hi=10), "n must be an integer in 0..10, got 11"),
    (5, dict(hi=4), "n must be an integer <= 4, got 5"),
    (True, dict(lo=0), "n must be an integer >= 0, got True"),
    (2.0, dict(lo=0), "n must be an integer >= 0, got 2.0"),
    ("3", dict(), "n must be an integer, got '3'"),
])
def test_check_int_rejects_with_one_message_form(value, kw, message):
    with pytest.raises(UserError) as ei:
        check_int("n", value, **kw)
    assert str(ei.value) == message


def test_checks_raise_the_callers_error_type():
    with pytest.raises(MyError):
        check_int("n", 0, lo=1, error=MyError)
    with pytest.raises(MyError):
        check_ints("n", (1, 0), lo=1, error=MyError)
    with pytest.raises(MyError):
        check_float("x", math.nan, error=MyError)
    with pytest.raises(MyError):
        check_choice("policy", "x", ("a",), error=MyError)
    with pytest.raises(MyError):
        check_bool("flag", 1, error=MyError)


# ------------------------------------------------------------------------------ check_ints
def test_check_ints():
    assert check_ints("dims", [2, np.int64(3)], lo=1) == (2, 3)
    assert check_ints("dims", np.array([4, 4]), length=2, lo=1) == (4, 4)
    with pytest.raises(UserError, match=r"^dims must have 3 entries, got 2: \(2, 3\)$"):
        check_ints("dims", (2, 3), length=3)
    with pytest.raises(UserError, match=r"^dims\[1\] must be an integer >= 1, got 0$"):
        check_ints("dims", (2, 0), lo=1)
    with pytest.raises(UserError, match=r"^dims\[0\] must be an integer >= 1, got True$"):
        check_ints("dims", (True, 2), lo=1)
    with pytest.raises(UserError, match=r"^dims must be a sequence of integers >= 1, got '22'$"):
        check_ints("dims", "22", lo=1)
    with pytest.raises(UserError, match="must be a sequence of integers, got 5"):
        check_ints("dims", 5)


# ------------------------------------------------------------------------------ check_float
def test_check_float_accepts_and_normalises():
    assert check_float("x", 1) == 1.0 and type(check_float("x", 1)) is float
    assert check_float("x", np.float32(0.5), lo=0, hi=1) == 0.5
    assert check_float("x", math.inf, finite=False) == math.inf
    assert check_float("x", 0.0, lo=0.0) == 0.0


@pytest.mark.parametrize("value,kw,message", [
    (math.nan, dict(), "x must be a finite number, got nan"),
    (math.nan, dict(finite=False), "x must be a number, got nan"),
    (math.inf, dict(), "x must be a finite number, got inf"),
    (True, dict(), "x must be a finite number, got True"),
    ("1", dict(), "x must be a finite number, got '1'"),
    (1.5, dict(lo=0, hi=1), "x must be a finite number in [0, 1], got 1.5"),
    (0, dict(lo=0, lo_open=True), "x must be a finite number in (0, inf), got 0"),
    (1, dict(hi=1, hi_open=True), "x must be a finite number in (-inf, 1), got 1"),
    (60, dict(lo=300.0), "x must be a finite number in [300, inf), got 60"),
    (0.1, dict(lo=0.25), "x must be a finite number in [0.25, inf), got 0.1"),
])
def test_check_float_rejects_with_one_message_form(value, kw, message):
    with pytest.raises(UserError) as ei:
        check_float("x", value, **kw)
    assert str(ei.value) == message


# ------------------------------------------------------------------------------ check_choice, check_bool
def test_check_choice():
    assert check_choice("policy", "sjf", ("fcfs", "sjf")) == "sjf"
    with pytest.raises(UserError) as ei:
        check_choice("ordering policy", "lifo", ("fcfs", "sjf"))
    assert str(ei.value) == "unknown ordering policy 'lifo'; valid: fcfs, sjf"
    # An owner prefix stays in front: "<owner>: unknown <name> ...".
    with pytest.raises(UserError) as ei:
        check_choice("FatTree: routing", "xy", ["dmodk", "ecmp"])
    assert str(ei.value) == "FatTree: unknown routing 'xy'; valid: dmodk, ecmp"
    with pytest.raises(UserError, match="unknown policy 1;"):
        check_choice("policy", 1, ("1",))


def test_check_bool():
    assert check_bool("flag", True) is True
    assert check_bool("flag", np.bool_(False)) is False
    for bad in (0, 1, "true", None):
        with pytest.raises(UserError, match=f"^flag must be true or false, got {bad!r}$"):
            check_bool("flag", bad)


# ------------------------------------------------------------------------------ the UserError family
PACKAGES = ("pdes", "models", "apps", "scheduler", "simhpc")

# Errors that mark a bug in a model or in simhpc, or a failure of the simulated application,
# not a user mistake: they keep a traceback (or, for the app's own failures, their own exit status).
NOT_USER_ERRORS = {
    "pdes.errors.PdesError", "pdes.errors.SendError", "pdes.errors.UnknownEntityError",
    "pdes.errors.UnknownServiceError", "pdes.errors.ProcessError", "pdes.errors.SimulationError",
    "pdes.errors.RemoteRankError", "pdes.errors.Interrupted",
    "apps.errors.AppsError", "apps.errors.MpiError", "apps.errors.AppError", "apps.errors.DeadlockError",
    "apps.errors.AppTimeoutError",
    "scheduler.errors.SchedulerError",
    # Not errors of the user's input: a warning (the run goes on) and an environment failure
    # (stdout cannot be written), each reported in one line by the CLI.
    "apps.errors.OversubscriptionWarning", "simhpc.cli.stdout.StdoutError",
}

USER_SUFFIXES = ("ConfigError", "UserError", "UnitError", "TopologyError", "SwfError", "FileError",
                 "NoDataError", "CliError", "ExperimentError", "NodeModelError")


def _error_classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for pkg_name in PACKAGES:
        pkg = importlib.import_module(pkg_name)
        mods = [pkg] + [m.name for m in pkgutil.walk_packages(pkg.__path__, pkg_name + ".")
                        if not m.name.endswith("__main__")]
        for mod in mods:
            try:
                m = importlib.import_module(mod) if isinstance(mod, str) else mod
            except ImportError:  # an optional dependency (mpi4py, matplotlib) is missing
                continue
            for _, obj in inspect.getmembers(m, inspect.isclass):
                # Private classes (a run's internal stop signal) are control flow, not errors.
                if (issubclass(obj, BaseException) and obj.__module__.split(".")[0] in PACKAGES
                        and not obj.__name__.startswith("_")):
                    found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def test_every_user_mistake_error_is_a_user_error():
    classes = _error_classes()
    assert "models.errors.TopologyError" in classes and "scheduler.errors.SwfError" in classes
    named_user = {n: c for n, c in classes.items() if n.endswith(USER_SUFFIXES)}
    assert len(named_user) >= 10
    bad = sorted(n for n, c in named_user.items() if not issubclass(c, UserError))
    assert not bad, f"user-mistake errors outside the UserError family: {bad}"
    # Every error class is either a UserError or one of the few known internal errors.
    unclassified = sorted(n for n, c in classes.items() if not issubclass(c, UserError) and n not in NOT_USER_ERRORS)
    assert not unclassified, f"error classes neither UserError nor listed as internal: {unclassified}"


def test_user_errors_are_value_errors():
    from apps.errors import AppConfigError
    from models.errors import TopologyError
    from models.units import UnitError
    from scheduler.errors import SwfError
    from simhpc.experiment import ConfigError

    for cls in (AppConfigError, TopologyError, UnitError, SwfError, ConfigError):
        assert issubclass(cls, UserError) and issubclass(cls, ValueError)


# ------------------------------------------------------------------------------ the command line
@pytest.mark.parametrize("argv,message", [
    # models: a bad topology parameter
    (["run", "--print-config", "--set", "machine.topology={family='torus',dims=[0,2]}"],
     "Torus: dims[0] must be an integer >= 1, got 0"),
    # models.units: a bad unit string
    (["app", "pingpong", "--machine", "tiny-mesh", "--ranks", "2", "--end-time", "5parsecs"],
     "--end-time: unknown time unit 'parsecs'"),
    # simhpc.experiment: a bad experiment key
    (["run", "--print-config", "--set", "workload.jobs=0"], "workload.jobs: must be an integer >= 1, got 0"),
    # simhpc.results: a file that is not a results file
    (["show", "{bad}"], "not an HDF5 file"),
])
def test_one_user_error_per_layer_is_one_line_and_exit_status_2(argv, message, capsys, tmp_path):
    bad = tmp_path / "bad.h5"
    bad.write_text("not hdf5\n")
    argv = [a.replace("{bad}", str(bad)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("simhpc: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err
