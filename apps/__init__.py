"""apps layer of simhpc: simulated MPI and the skeleton applications of interference studies.

* :mod:`apps.mpi`: point-to-point with MPI semantics, collectives with MPICH's algorithms,
  communicators and Cartesian grids (the ``mpi`` handle an app receives);
* :mod:`apps.registry`: the :func:`app` decorator and lookup by name;
* :mod:`apps.skeletons`: the built-in apps (timekeeper, allreduce, stencils, pairs, sub-a2a,
  unstr-mesh, even-odd, ring, alltoall);
* :mod:`apps.node`: the MPI node entity and the job launch/report/kill protocol;
* :mod:`apps.manager`: a job manager entity that runs jobs through that protocol;
* :mod:`apps.platform`: :func:`build_platform`, the one assembly of a machine that runs jobs
  (simulator, network of MPI nodes, job manager);
* :mod:`apps.run`: :func:`run_app`, one app alone on a machine.
"""

from .errors import AppConfigError, AppError, AppsError, AppTimeoutError, DeadlockError, MpiError
from .manager import JobManager, JobRecord
from .mapping import RANK_MAPPINGS, map_ranks, register_mapping
from .mpi import ANY_SOURCE, ANY_TAG, PROC_NULL, CartComm, Comm, Request, Status, dims_create
from .node import LaunchSpec, MpiNode, MpiOptions, MpiShared, NodeReport
from .platform import Platform, build_platform
from .registry import AppInfo, JobContext, app, app_names, bind_args, get_app
from .run import AppResult, choose_nodes, run_app

__all__ = [
    "ANY_SOURCE", "ANY_TAG", "PROC_NULL",
    "AppConfigError", "AppError", "AppInfo", "AppResult", "AppTimeoutError", "AppsError", "CartComm", "Comm",
    "DeadlockError", "JobContext", "JobManager", "JobRecord", "LaunchSpec", "MpiError", "MpiNode", "MpiOptions",
    "MpiShared", "NodeReport", "Platform", "Request", "Status",
    "app", "app_names", "bind_args", "build_platform", "choose_nodes", "dims_create", "get_app", "map_ranks", "register_mapping", "run_app", "RANK_MAPPINGS",
]
