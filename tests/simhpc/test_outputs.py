"""The one check of output paths, made before a run (run, study, replay)."""

import os

from simhpc.outputs import output_problem


def test_a_writable_file_path_has_no_problem(tmp_path):
    assert output_problem("--out", tmp_path / "r.h5") is None
    assert output_problem("--plot", tmp_path, is_dir=True) is None


def test_a_folder_given_as_a_file_is_named_with_an_example(tmp_path):
    msg = output_problem("--out", tmp_path, example="results.h5")
    assert msg == f"--out {str(tmp_path)!r} is a directory; give a file name such as results.h5"


def test_a_missing_folder_is_named(tmp_path):
    missing = tmp_path / "nope"
    assert output_problem("--out", missing / "r.h5") == f"--out {str(missing / 'r.h5')!r}: the folder {str(missing)!r} does not exist"
    # A missing folder to write into is created by the writer (its parent must be a folder).
    assert output_problem("--plot", missing, is_dir=True) is None


def test_an_unwritable_folder_is_named(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):  # root writes anywhere: nothing to check
            return
        assert output_problem("--out", ro / "r.h5").endswith("is not writable")
    finally:
        ro.chmod(0o700)
