"""Interference studies: a foreground job among background jobs, against its runtime alone
and on the ideal network (``simhpc study``, ``docs/studies.md``).

* :mod:`.spec`: :class:`InterferenceStudy` and its parts, the TOML form;
* :mod:`.interference`: :func:`run_study`;
* :mod:`.results`: :class:`StudyResults` (runs table, hot links, summaries);
* :mod:`.hdf5`: the ``simhpc-study`` results file (:func:`write_study`, :func:`read_study`);
* :mod:`.plot`: slowdown and runtime against the number of background jobs.
"""

from .interference import run_study
from .results import StudyResults
from .spec import (
    BackgroundApp,
    ForegroundJob,
    InterferenceStudy,
    StudyConfigError,
    dumps_study,
    load_study,
    loads_study,
    study_from_dict,
)

__all__ = [
    "BackgroundApp",
    "ForegroundJob",
    "InterferenceStudy",
    "StudyConfigError",
    "StudyResults",
    "dumps_study",
    "load_study",
    "loads_study",
    "read_study",
    "run_study",
    "study_from_dict",
    "write_study",
    "plot_study",
]


def __getattr__(name: str):
    # The HDF5 and plotting modules import h5py and matplotlib: only when asked for.
    if name in ("read_study", "write_study"):
        from . import hdf5

        return getattr(hdf5, name)
    if name == "plot_study":
        from . import plot

        return plot.plot_study
    raise AttributeError(f"module 'simhpc.studies' has no attribute {name!r}")
