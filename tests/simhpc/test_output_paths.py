"""Output paths: only regular files are replaced (a symbolic link to one is written through),
empty and too-long names and conflicting options are refused before the run, output folders
are created."""

from __future__ import annotations

import os

import pytest

from results_helpers import fabricate
from simhpc.cli import main
from simhpc.outputs import output_problem, write_target
from simhpc.results import ResultsFileError, read_results, write_results
from simhpc.studies.hdf5 import StudyFileError, write_study

STAMP = "2024-01-01T00:00:00+00:00"


@pytest.fixture(scope="module")
def res():
    return fabricate()


@pytest.fixture
def fifo(tmp_path):
    p = tmp_path / "pipe"
    os.mkfifo(p)
    return p


def _one_line_error(capsys, text):
    err = capsys.readouterr().err
    assert err.startswith("simhpc: error: ") and text in err and err.count("\n") == 1 and "Traceback" not in err


# ----------------------------------------------------------------------------- the check
def test_non_regular_files_are_refused(tmp_path, fifo):
    assert output_problem("--out", "/dev/null", example="r.h5") == (
        "--out '/dev/null' is a character device; only regular files are replaced; give a file name such as r.h5")
    assert "is a FIFO; only regular files are replaced" in output_problem("--out", fifo)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "missing.h5")
    assert f"is a symbolic link to {str(tmp_path / 'missing.h5')!r}, which does not exist" in output_problem("--out", dangling)
    to_fifo = tmp_path / "to_fifo"
    to_fifo.symlink_to(fifo)
    assert "is a symbolic link to" in output_problem("--out", to_fifo) and "a FIFO" in output_problem("--out", to_fifo)
    to_dev = tmp_path / "to_dev"
    to_dev.symlink_to("/dev/null")
    assert "a character device" in output_problem("--out", to_dev)


def test_a_regular_file_and_a_link_to_one_are_accepted(tmp_path):
    real = tmp_path / "real.h5"
    real.write_text("old")
    link = tmp_path / "link.h5"
    link.symlink_to(real)
    assert output_problem("--out", real) is None and output_problem("--out", link) is None
    assert write_target(link) == real and write_target(tmp_path / "new.h5") == tmp_path / "new.h5"


def test_empty_and_too_long_names_are_refused(tmp_path):
    assert output_problem("--out", "", example="results.h5") == "--out is empty; give a file name, such as results.h5"
    msg = output_problem("--out", tmp_path / ("x" * 300 + ".h5"))
    assert msg.startswith("--out: the file name 'xxxx") and "is 303 bytes long" in msg and "allows 255" in msg
    # The longest name that fits is accepted: the temporary file written first fits too.
    assert output_problem("--out", tmp_path / ("x" * 252 + ".h5")) is None


def test_a_plot_folder_may_be_missing_but_not_a_file(tmp_path):
    assert output_problem("--plot", tmp_path / "a" / "b", is_dir=True) is None
    f = tmp_path / "f"
    f.write_text("")
    assert output_problem("--plot", f, is_dir=True) == f"--plot {str(f)!r} exists and is not a folder"
    assert "cannot be created" in output_problem("--plot", f / "sub", is_dir=True)
    assert output_problem("--plot", "", is_dir=True) == "--plot is empty; give a folder name"


# ----------------------------------------------------------------------------- the writers
def test_the_writers_refuse_a_fifo_and_a_dangling_link(tmp_path, res, fifo):
    with pytest.raises(ResultsFileError, match="is a FIFO"):
        write_results(res, fifo)
    assert fifo.is_fifo() and sorted(os.listdir(tmp_path)) == ["pipe"]
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "missing.h5")
    with pytest.raises(ResultsFileError, match="which does not exist"):
        write_results(res, dangling)
    with pytest.raises(ResultsFileError, match="empty file name"):
        write_results(res, "")
    # The study writer checks the path before it looks at the results.
    with pytest.raises(StudyFileError, match="is a FIFO"):
        write_study(None, fifo)  # type: ignore[arg-type]
    assert fifo.is_fifo()


def test_a_link_to_a_regular_file_is_written_through(tmp_path, res):
    real = tmp_path / "real.h5"
    real.write_text("old")
    link = tmp_path / "link.h5"
    link.symlink_to(real)
    write_results(res, link, created=STAMP)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert read_results(real).name == res.name
    assert sorted(os.listdir(tmp_path)) == ["link.h5", "real.h5"]


def test_a_path_that_became_a_fifo_during_the_run_is_not_replaced(tmp_path, res, monkeypatch):
    from simhpc.results import hdf5

    out = tmp_path / "r.h5"
    real_write = hdf5._write_file

    def write_then_swap(f, r, created):
        real_write(f, r, created)
        os.mkfifo(out)  # something else took the name meanwhile

    monkeypatch.setattr(hdf5, "_write_file", write_then_swap)
    with pytest.raises(ResultsFileError, match="is a FIFO"):
        write_results(res, out)
    assert out.is_fifo() and sorted(os.listdir(tmp_path)) == ["r.h5"]


def test_a_name_of_the_longest_length_is_written(tmp_path, res):
    # Its temporary sibling used to be the name plus 20 characters: ENAMETOOLONG at the end.
    out = tmp_path / ("x" * 252 + ".h5")
    write_results(res, out, created=STAMP)
    assert read_results(out).n_jobs == res.n_jobs


# ----------------------------------------------------------------------------- the commands
# A FIFO (or a link to /dev/null) stands for a device: were the check ever lost, the test
# would replace a file of its own, never the machine's /dev/null.
@pytest.mark.parametrize("argv,text", [
    (["run", "--out", "", "--set", "workload.jobs=2"], "--out is empty; give a file name, such as results.h5"),
    (["run", "--out", "{fifo}", "--set", "workload.jobs=2"], "--out '{fifo}' is a FIFO"),
    (["run", "--out", "{dev}", "--set", "workload.jobs=2"], "--out '{dev}' is a symbolic link to '/dev/null', a character device"),
    (["run", "--set", "output.path={fifo}", "--set", "workload.jobs=2"], "output.path '{fifo}' is a FIFO"),
    (["replay", "builtin:lublin_256.swf", "--out", "{fifo}"], "--out '{fifo}' is a FIFO"),
    (["replay", "builtin:lublin_256.swf", "--swf-out", "{fifo}"], "--swf-out '{fifo}' is a FIFO"),
    (["replay", "builtin:lublin_256.swf", "--swf-out", ""], "--swf-out is empty"),
    (["replay", "builtin:lublin_256.swf", "--out", ""], "--out is empty"),
    (["study", "{study}", "--out", "{fifo}"], "--out '{fifo}' is a FIFO"),
    (["study", "{study}", "--out", ""], "--out is empty; give a file name, such as study.h5"),
])
def test_commands_refuse_bad_outputs_before_the_run(tmp_path, capsys, fifo, argv, text):
    from tests_support import load_test_module

    CLI_TOML = load_test_module("simhpc/test_studies.py").CLI_TOML
    dev = tmp_path / "dev"
    dev.symlink_to("/dev/null")
    study = tmp_path / "s.toml"
    study.write_text(CLI_TOML)
    names = {"fifo": fifo, "dev": dev, "study": study}
    assert main([a.format(**names) for a in argv]) == 2
    _one_line_error(capsys, text.format(**names))
    assert fifo.is_fifo() and dev.is_symlink() and os.readlink(dev) == "/dev/null"


def test_out_and_no_out_together_are_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--out", "r.h5", "--no-out"])
    assert exc.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_plot_refuses_a_file_as_its_folder(tmp_path, res, capsys):
    pytest.importorskip("matplotlib")
    r = tmp_path / "r.h5"
    write_results(res, r, created=STAMP)
    assert main(["plot", str(r), "--out", str(r)]) == 2
    _one_line_error(capsys, f"--out {str(r)!r} exists and is not a folder")
