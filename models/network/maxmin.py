"""Max-min fair rates by progressive filling, vectorised over a link-flow incidence (CSR).

Every flow's rate rises at the same pace from zero; when a link's capacity is used up, the
flows crossing it freeze at the current level (that link is their bottleneck) and the others
keep rising. One iteration per distinct bottleneck level, each a few numpy passes over the
incidence, so the cost is O(levels x incidence entries).

The result depends only on the set of flows, not on their order in the arrays (link counts
are integers and the levels are sums of the same increments), so the solver entity gets the
same rates, bit for bit, for any order of simultaneous starts.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

#: A link counts as saturated when its fair share is within this relative margin of the
#: smallest share: floating-point rounding must not leave a link with a residue that takes
#: one more iteration (and freezes its flows at a level a few ulps higher).
_TIE = 1e-9


def maxmin_rates(ptr: np.ndarray, idx: np.ndarray, cap: np.ndarray, comp: np.ndarray | None = None) -> np.ndarray:
    """The max-min fair rate of each flow.

    Args:
        ptr: offsets (length m + 1): flow ``f`` crosses ``idx[ptr[f]:ptr[f+1]]``; every flow
            crosses at least one link.
        idx: compact link indices in ``[0, len(cap))``, no link twice within a flow.
        cap: capacity of each link (> 0).
        comp: optional component label of each flow (``0..C-1``; flows of different labels
            share no link). Each component then fills at its own pace, so its rates are
            bit for bit those of solving it alone, in one pass over all of them.

    Returns:
        float64 rates (length m): no link carries more than its capacity, and every flow
        crosses a saturated link on which no other flow has a higher rate.
    """
    m = len(ptr) - 1
    if m == 0:
        return np.zeros(0)
    return maxmin_incidence(m, np.repeat(np.arange(m), np.diff(ptr)), idx, cap, comp)


def maxmin_incidence(m: int, owner: np.ndarray, idx: np.ndarray, cap: np.ndarray,
                     comp: np.ndarray | None = None) -> np.ndarray:
    """:func:`maxmin_rates` over an incidence in any order: entry ``i`` says flow
    ``owner[i]`` (of ``m``, each in at least one entry) crosses link ``idx[i]``."""
    k = len(cap)
    rate = np.zeros(m)
    if m == 0:
        return rate
    if comp is None:
        comp = np.zeros(m, dtype=np.int64)
    n_comp = int(comp.max()) + 1
    link_comp = np.zeros(k, dtype=np.int64)
    link_comp[idx] = comp[owner]
    rc = np.array(cap, dtype=np.float64)  # capacity not yet handed out
    active = np.ones(m, dtype=bool)
    inc = idx  # incidence entries of the flows still rising
    inc_owner = owner
    level = np.zeros(n_comp)
    share = np.empty(k)
    nd = np.empty(k)
    tie = 1.0 + _TIE
    # Masked ufuncs (``where=used``) rather than gathers and scatters of the used links: the
    # same operations on the same links. A link not used stays at an infinite share; n * d
    # may be NaN there (0 * inf), never read. A saturated link is not zeroed: its flows all
    # freeze, so it is never used again.
    with np.errstate(invalid="ignore"):
        while inc.size:
            n = np.bincount(inc, minlength=k)
            used = n > 0
            share.fill(np.inf)
            np.divide(rc, n, out=share, where=used)
            if n_comp == 1:
                delta = share.min(keepdims=True)
            else:
                delta = np.full(n_comp, np.inf)
                np.minimum.at(delta, link_comp, share)
            going = np.isfinite(delta)
            level[going] += delta[going]
            d = delta[link_comp]
            np.multiply(n, d, out=nd)
            np.subtract(rc, nd, out=rc, where=used)
            sat = share <= d * tie  # (only read on used links)
            frozen = inc_owner[sat[inc]]  # repeats are harmless: the same value is written
            rate[frozen] = level[comp[frozen]]
            active[frozen] = False
            keep = active[inc_owner]
            inc = inc[keep]
            inc_owner = inc_owner[keep]
    return rate


def maxmin_small(routes: Sequence[Sequence[int]], cap: Sequence[float]) -> list[float]:
    """:func:`maxmin_rates` for one component of a few flows, on Python floats.

    ``routes[f]`` are the links flow ``f`` crosses (at least one, none twice) and ``cap[l]``
    link ``l``'s capacity. The arithmetic is that of :func:`maxmin_rates`, operation for
    operation (numpy's float64 operations are Python's float operations), so the rates are
    the same bit for bit; without numpy's fixed cost per call, a component of a few flows
    costs a few microseconds instead of a few hundred. The links are numbered for this call
    and solved by :func:`maxmin_local`.
    """
    if not routes:
        return []
    num: dict[int, int] = {}
    local = [[num.setdefault(l, len(num)) for l in r] for r in routes]
    n = [0] * len(num)
    for r in local:
        for x in r:
            n[x] += 1
    rc = [0.0] * len(num)
    for l, x in num.items():
        rc[x] = float(cap[l])
    return maxmin_local(local, n, rc)


def maxmin_local(routes: Sequence[Sequence[int]], n: list[int], rc: list[float]) -> list[float]:
    """Max-min fair rates (those of :func:`maxmin_rates`) over links numbered ``0..k-1``.

    ``routes[f]`` are the local numbers of the links flow ``f`` crosses (at least one, none
    twice), ``n[i]`` the number of flows crossing link ``i`` (used up) and ``rc[i]`` its
    capacity (a float). Lists instead of dicts: the same operations, link for link, so the
    same rates bit for bit. A link whose flows are all frozen has no share (infinite).
    """
    rate = [0.0] * len(routes)
    active: Sequence[int] = range(len(routes))
    level = 0.0
    tie = 1.0 + _TIE
    inf = math.inf
    while True:
        share = [r / c if c else inf for r, c in zip(rc, n)]
        delta = min(share)
        level += delta
        lim = delta * tie
        # c * delta is 0.0 for a link without flows: its rc stays as it is.
        rc = [r - c * delta for r, c in zip(rc, n)]
        still = []
        for i in active:
            r = routes[i]
            for x in r:
                if share[x] <= lim:
                    break
            else:
                still.append(i)
                continue
            rate[i] = level
            for x in r:
                n[x] -= 1
        if not still:
            return rate
        active = still


__all__ = ["maxmin_incidence", "maxmin_local", "maxmin_rates", "maxmin_small"]
