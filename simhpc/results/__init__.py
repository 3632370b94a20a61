"""Experiment results: the in-memory :class:`Results` and its HDF5 file format."""

from .compare import arrays_identical, job_table_diff, job_table_equal, results_diff, results_equal
from .hdf5 import ResultsFileError, read_file_info, read_results, write_results
from .model import JOB_COLUMNS, LINK_COLUMNS, SCHEMA_NAME, SCHEMA_VERSION, SERIES, Results, empty_job_columns

__all__ = [
    "JOB_COLUMNS", "LINK_COLUMNS", "SCHEMA_NAME", "SCHEMA_VERSION", "SERIES", "Results", "empty_job_columns",
    "ResultsFileError", "write_results", "read_results", "read_file_info",
    "arrays_identical", "job_table_diff", "job_table_equal", "results_diff", "results_equal",
]
