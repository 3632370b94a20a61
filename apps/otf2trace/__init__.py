"""OTF2 traces: the ``otf2`` app that replays one (:mod:`.replay`, :mod:`.trace`), and the
recording of a simulated run's MPI calls (:mod:`.record`) written as one (:mod:`.export`).

The ``otf2`` package (the OTF2 library's bindings, ``pip install 'simhpc[otf2]'``) is needed
only to read or write a trace; nothing here imports it before then.
"""
