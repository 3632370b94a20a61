"""Experiment results: the in-memory :class:`Results` and its HDF5 file format."""

from .model import JOB_COLUMNS, LINK_COLUMNS, SCHEMA_NAME, SCHEMA_VERSION, SERIES, Results, empty_job_columns

__all__ = ["JOB_COLUMNS", "LINK_COLUMNS", "SCHEMA_NAME", "SCHEMA_VERSION", "SERIES", "Results", "empty_job_columns"]
