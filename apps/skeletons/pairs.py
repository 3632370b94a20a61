"""The pairs skeleton: exchanges with a random partner, reshuffled every iteration.

Every rank must agree on the pairing without talking, and cheaply: the pairing of an
iteration comes from a pseudo-random permutation pi of the ranks (a 4-round Feistel network
keyed from the job's shared random stream, restricted to 0..p-1 by cycle walking), which any
rank evaluates at one point in O(1): rank r is paired with pi^-1(pi(r) XOR 1). With an odd
number of ranks the rank whose pi(r) is p - 1 sits the iteration out.

The ranks of a job that share a simulation process share the draws: the job's random stream
is seeded once per process, each iteration's permutation is made once, and the partners of
all ranks for an iteration are computed together (:meth:`Permutation.partners`, vectorized),
which gives every rank the same partner as evaluating the permutation at its own rank.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..registry import app
from ._args import count, nbytes as _nbytes, one_of, seconds

_M64 = (1 << 64) - 1
MODES = ("random", "fixed")


def _mix(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


class Permutation:
    """A keyed pseudo-random permutation of 0..n-1 with O(1) evaluation and inverse."""

    ROUNDS = 4

    def __init__(self, n: int, keys: list[int]):
        self.n = n
        half = max(1, ((n - 1).bit_length() + 1) // 2)
        self.half = half
        self.mask = (1 << half) - 1
        self.keys = keys

    def _enc(self, x: int) -> int:
        h, m = self.half, self.mask
        left, right = x >> h, x & m
        for k in self.keys:
            left, right = right, left ^ (_mix(right ^ k) & m)
        return (left << h) | right

    def _dec(self, y: int) -> int:
        h, m = self.half, self.mask
        left, right = y >> h, y & m
        for k in reversed(self.keys):
            left, right = right ^ (_mix(left ^ k) & m), left
        return (left << h) | right

    def __call__(self, x: int) -> int:
        y = self._enc(x)
        while y >= self.n:
            y = self._enc(y)
        return y

    def inverse(self, y: int) -> int:
        x = self._dec(y)
        while x >= self.n:
            x = self._dec(x)
        return x

    def partner(self, r: int) -> int | None:
        """r's partner in the pairing (pi^-1(2i), pi^-1(2i+1)); None if it has none."""
        q = self(r) ^ 1
        return self.inverse(q) if q < self.n else None

    def partners(self) -> list[int]:
        """Every rank's partner at once (-1 for none): ``partner(r)`` for r in 0..n-1."""
        n = self.n
        y = self._enc_all(np.arange(n, dtype=np.uint64))
        out = y >= n
        while out.any():  # cycle walking, for the points still outside 0..n-1
            y[out] = self._enc_all(y[out])
            out = y >= n
        inv = np.empty(n, dtype=np.int64)
        inv[y] = np.arange(n, dtype=np.int64)
        q = y ^ np.uint64(1)
        has = q < n
        return np.where(has, inv[np.where(has, q, 0)], -1).tolist()

    def _enc_all(self, x: np.ndarray) -> np.ndarray:
        """:meth:`_enc` of every element of ``x`` (uint64: products wrap modulo 2^64, as
        ``_mix``'s masks do)."""
        h, m = np.uint64(self.half), np.uint64(self.mask)
        left, right = x >> h, x & m
        for k in self.keys:
            left, right = right, left ^ (_mix_all(right ^ np.uint64(k)) & m)
        return (left << h) | right


def _mix_all(x: np.ndarray) -> np.ndarray:
    """:func:`_mix` of every element of a uint64 array."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


class _Pairings:
    """A job's pairings, shared by its ranks in one simulation process: permutation i uses
    draws 4i..4i+3 of the job's "pairs" stream, as each rank drawing from its own copy of the
    stream would; the partner lists of the last few iterations are kept. A memo: what it
    returns depends only on its arguments, whichever rank asks first."""

    KEEP = 4

    def __init__(self, size: int, rng: Any):
        self.size = size
        self.rng = rng
        self.perms: list[Permutation] = []
        self.lists: dict[int, list[int]] = {}
        self.oldest = 0  # iterations below this one had their lists dropped

    def partner(self, i: int, r: int) -> int | None:
        """Rank r's partner in permutation i; None if it has none."""
        got = self.lists.get(i)
        if got is None:
            perms = self.perms
            while len(perms) <= i:
                perms.append(Permutation(self.size, [self.rng.getrandbits(64) for _ in range(Permutation.ROUNDS)]))
            if i < self.oldest:  # a rank far behind the others: evaluate its partner alone
                return perms[i].partner(r)
            got = self.lists[i] = perms[i].partners()
            lists = self.lists
            while len(lists) > self.KEEP:
                old = next(iter(lists))
                del lists[old]
                self.oldest = old + 1
        q = got[r]
        return q if q >= 0 else None


CHECKS = {"iters": count, "nbytes": _nbytes, "mode": one_of(MODES), "compute_s": seconds}


@app("pairs", checks=CHECKS)
def pairs(mpi: Any, *, iters: int = 10, nbytes: Any = 65536, mode: str = "random", compute_s: Any = 0.0) -> None:
    """``iters`` times: compute, then exchange ``nbytes`` with a partner. ``mode="random"``
    draws a new random pairing of all ranks every iteration; ``"fixed"`` keeps the first."""
    n = _nbytes(nbytes, "nbytes")
    c = seconds(compute_s, "compute_s")
    pairings = mpi.shared_cache(("pairs", mpi.job, mpi.size), lambda: _Pairings(mpi.size, mpi.job_rng("pairs")))
    rank = mpi.rank
    fixed = mode != "random"
    for i in range(iters):
        if c:
            mpi.compute(c)
        partner = pairings.partner(0 if fixed else i, rank)
        if partner is not None:
            mpi.sendrecv(partner, n)
