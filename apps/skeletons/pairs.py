"""The pairs skeleton: exchanges with a random partner, reshuffled every iteration.

Every rank must agree on the pairing without talking, and cheaply: the pairing of an
iteration comes from a pseudo-random permutation pi of the ranks (a 4-round Feistel network
keyed from the job's shared random stream, restricted to 0..p-1 by cycle walking), which any
rank evaluates at one point in O(1): rank r is paired with pi^-1(pi(r) XOR 1). With an odd
number of ranks the rank whose pi(r) is p - 1 sits the iteration out.
"""

from __future__ import annotations

from typing import Any

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


CHECKS = {"iters": count, "nbytes": _nbytes, "mode": one_of(MODES), "compute_s": seconds}


@app("pairs", checks=CHECKS)
def pairs(mpi: Any, *, iters: int = 10, nbytes: Any = 65536, mode: str = "random", compute_s: Any = 0.0) -> None:
    """``iters`` times: compute, then exchange ``nbytes`` with a partner. ``mode="random"``
    draws a new random pairing of all ranks every iteration; ``"fixed"`` keeps the first."""
    n = _nbytes(nbytes, "nbytes")
    c = seconds(compute_s, "compute_s")
    rng = mpi.job_rng("pairs")
    perm = None
    for _ in range(iters):
        if perm is None or mode == "random":
            perm = Permutation(mpi.size, [rng.getrandbits(64) for _ in range(Permutation.ROUNDS)])
        if c:
            mpi.compute(c)
        partner = perm.partner(mpi.rank)
        if partner is not None:
            mpi.sendrecv(partner, n)
