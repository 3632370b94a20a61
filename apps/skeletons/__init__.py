"""The built-in skeleton apps (imported by the registry on first use).

================  ================================================================
timekeeper        runs for a given time: O(1) events, no rank processes
allreduce         iterations of compute + allreduce
stencil2d/3d/4d   halo exchange on a periodic process grid
pairs             exchanges with a random (or fixed) partner, reshuffled per iteration
sub-a2a           all-to-all inside sub-communicators of a 3D process grid
unstr-mesh        exchanges with random neighbourhoods of bounded degree on a 3D grid
even-odd          rank 2i <-> 2i+1 exchanges
ring              send right, receive from the left
alltoall          bulk all-to-all
traffic           open-loop synthetic traffic of a named pattern at an offered load
================  ================================================================
"""

from . import allreduce, alltoall, pairs, simple, stencil, sub_a2a, timekeeper, traffic, unstr_mesh

__all__ = ["allreduce", "alltoall", "pairs", "simple", "stencil", "sub_a2a", "timekeeper", "traffic", "unstr_mesh"]
