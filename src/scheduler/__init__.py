"""scheduler layer of simhpc: workloads, queue policies, backfilling, allocators, job
lifecycle, metrics, experiments, results files and the ``simhpc`` command line."""

__version__ = "0.1.0"
