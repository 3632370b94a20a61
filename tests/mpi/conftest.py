"""Tests in this folder run under mpirun with pytest-mpi (``--with-mpi``)."""
