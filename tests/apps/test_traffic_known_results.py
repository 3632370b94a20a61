"""Known results of interconnect studies, reproduced with the traffic sweep (docs/traffic.md,
"Known results"): dragonfly minimal, Valiant and UGAL under uniform and group-adversarial
traffic, fat-tree saturation under uniform traffic, and the channel-load bounds they are
compared with. Credit-based flow control throughout (buffers="credit", default sizes)."""

from __future__ import annotations

from functools import lru_cache

import pytest

from apps.errors import AppConfigError
from apps.traffic.bounds import channel_bound
from apps.traffic.sweep import sweep
from models.network import NetworkConfig
from models.presets import get_machine
from models.topology import Dragonfly

CREDIT = NetworkConfig(buffers="credit")
DFLY = "tiny-dragonfly"  # balanced: a=4, p=2, h=2, g=9, one global link per pair of groups


@lru_cache(maxsize=None)
def accepted(machine, pattern, routing, load=1.0):
    """Accepted throughput at one offered load (each point is simulated once per session)."""
    return sweep(machine, pattern, [load], routing=routing, network=CREDIT).points[0].accepted


def test_minimal_routing_under_adversarial_traffic_accepts_one_global_link():
    # Every node of group g sends to group g+1: all of a group's traffic crosses its one
    # global link to g+1, which carries one node's injection bandwidth: 1/(a p) of the group's.
    t = get_machine(DFLY).topology
    share = 1 / (t.a * t.p)
    assert channel_bound(DFLY, "group-adversarial", routing="minimal").bound == pytest.approx(share)
    assert accepted(DFLY, "group-adversarial", "minimal") == pytest.approx(share, rel=0.05)


def test_valiant_accepts_about_half_under_uniform_and_adversarial_traffic():
    # Every route takes two global links: about 0.5. Adversarially exactly (g-2)/(2(g-1))
    # (the intermediate group is neither source nor destination, so the direct link idles);
    # measured within 10% of that bound.
    g = get_machine(DFLY).topology.g
    bound = (g - 2) / (2 * (g - 1))
    adv = accepted(DFLY, "group-adversarial", "valiant")
    assert 0.9 * bound <= adv <= bound
    uni = accepted(DFLY, "uniform", "valiant")
    assert 0.45 <= uni <= 0.56


@pytest.mark.parametrize("pattern", ["uniform", "group-adversarial"])
def test_ugal_local_is_within_ten_percent_of_the_better_oblivious_routing(pattern):
    best = max(accepted(DFLY, pattern, "minimal"), accepted(DFLY, pattern, "valiant"))
    ugal = accepted(DFLY, pattern, "ugal")
    assert ugal >= 0.9 * best
    # UGAL-G, reading the global links themselves, is the idealised bound of UGAL-L.
    assert accepted(DFLY, pattern, "ugal-g") >= 0.97 * ugal


@pytest.mark.parametrize("buffers", ["credit", "infinite"])
def test_uniform_traffic_on_a_full_bisection_fat_tree_saturates_above_ninety_percent(buffers):
    m = "tiny-fattree3"
    assert channel_bound(m, "uniform", samples=2048).bound > 0.95  # every link at most the ejection's load
    s = sweep(m, "uniform", [1.0], network=NetworkConfig(buffers=buffers), duration="200us", warmup="40us")
    assert s.points[0].accepted > 0.9


def test_channel_bound_refuses_adaptive_routings_and_bad_samples():
    with pytest.raises(AppConfigError, match="adaptive.*oblivious routing of minimal, valiant"):
        channel_bound(DFLY, "uniform", routing="ugal")
    with pytest.raises(AppConfigError, match="samples"):
        channel_bound(DFLY, "uniform", samples=0)


def test_ugal_rules_read_the_first_ports_or_the_global_links():
    t = Dragonfly(a=4, p=2, h=2, routing="ugal")
    s, d, key = 0, 8 * 5 + 3, 7  # group 0 to group 5
    rm = t.route(s, d, key)
    rv = t.replace(routing="valiant").route(s, d, key)
    assert rm != rv and rm[1] != rv[1]
    # Idle ports: the shorter (minimal) route; a busy minimal first port: Valiant.
    assert t.route_adaptive(s, d, key, lambda l: 0.0) == rm
    assert t.route_adaptive(s, d, key, lambda l: 1000.0 if l == rm[1] else 0.0) == rv
    # Ties of q x H go minimal; UGAL-L never looks past the first port.
    hm, hv = len(rm) - 2, len(rv) - 2
    assert t.route_adaptive(s, d, key, lambda l: hv if l == rm[1] else hm if l == rv[1] else 0.0) == rm
    glob = {l for l in rm[1:-1] if l >= t.n_links - t.g * t.a * t.h}
    assert len(glob) == 1
    assert t.route_adaptive(s, d, key, lambda l: 1e6 if l in glob else 0.0) == rm
    g = t.replace(routing="ugal-g")
    assert g.route_adaptive(s, d, key, lambda l: 1e6 if l in glob else 0.0) == rv
    assert g.route_adaptive(s, d, key, lambda l: 1e6 if l == rm[1] else 0.0) == rm


def test_minimal_adaptive_routing_lifts_transpose_on_a_torus():
    # Dimension order puts four transpose flows on some links of tiny-torus (channel-load
    # bound 0.25); minimal adaptive routing spreads them over the other minimal paths.
    assert channel_bound("tiny-torus", "transpose", samples=1).bound == pytest.approx(0.25)
    dor = accepted("tiny-torus", "transpose", "dor")
    ada = accepted("tiny-torus", "transpose", "adaptive")
    assert ada > 2 * dor
