"""Synthetic traffic: the standard patterns of interconnect studies and offered-load sweeps.

* :mod:`apps.traffic.patterns`: destination functions by name (uniform, permutation, shift,
  tornado, transpose, bitcomp, neighbor, hotspot, group-adversarial) and their registry;
* :mod:`apps.traffic.sweep`: :func:`sweep`, one run of the ``traffic`` app per offered load,
  and :func:`traffic_point`, the accepted throughput and latency of one run;
* :mod:`apps.traffic.bounds`: :func:`~apps.traffic.bounds.channel_bound`, the channel-load
  bound of a pattern under an oblivious routing (what saturation is compared against).

The ``traffic`` app itself is a built-in skeleton (:mod:`apps.skeletons.traffic`).
"""

from .patterns import PATTERNS, Pattern, TrafficPatternError, build_pattern, check_pattern, pattern, pattern_names

__all__ = ["PATTERNS", "Pattern", "TrafficPatternError", "build_pattern", "check_pattern", "pattern", "pattern_names"]
