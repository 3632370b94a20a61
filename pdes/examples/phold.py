"""PHOLD, the standard synthetic PDES benchmark, written on the kernel in two styles.

``n_lps`` logical processes each start with ``events_per_lp`` events. Handling an event
sends exactly one new event (so the population stays constant) to a destination LP after
``lookahead + Exp(mean_delay)`` seconds. LPs are grouped into ``regions`` contiguous blocks;
with probability ``remote`` the destination is drawn from another region, otherwise from
the sender's own region. With block placement and ``regions`` equal to the number of MPI
ranks, ``remote`` is the fraction of events that cross ranks.

Every draw comes from the sending LP's own stream, so results do not depend on the number of
ranks. Each LP keeps a count and a digest of the events it processed (for determinism
checks).

Styles:
* ``service``: the event handler is a service method (``PholdLP``).
* ``process``: one greenlet process per LP blocks on a mailbox (``PholdProcessLP``).

Run it: ``python -m pdes.examples.phold --lps 1000 --end 100`` (or under ``mpirun -n P``).
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass

from ..entity import Entity
from ..simulator import RunStats, Simulator


@dataclass(frozen=True, kw_only=True)
class PholdParams:
    """PHOLD parameters (times in seconds)."""

    n_lps: int = 1000
    events_per_lp: int = 10
    lookahead: float = 1.0
    mean_delay: float = 1.0
    remote: float = 0.1
    regions: int = 1
    end_time: float = 100.0
    max_hops: int = 0  # > 0: each event chain dies after this many hops (exact event count)
    digest: bool = False

    def __post_init__(self) -> None:
        if self.n_lps < 1 or self.events_per_lp < 1:
            raise ValueError("n_lps and events_per_lp must be >= 1")
        if not 1 <= self.regions <= self.n_lps:
            raise ValueError(f"regions must be in 1..n_lps ({self.n_lps}), got {self.regions}")
        if not 0.0 <= self.remote <= 1.0:
            raise ValueError(f"remote must be in [0, 1], got {self.remote}")
        if self.lookahead <= 0 or self.mean_delay < 0:
            raise ValueError("lookahead must be > 0 and mean_delay >= 0")

    def expected_events(self) -> float:
        """Expected events executed before ``end_time`` (constant population, no hop limit).

        Every chain is a renewal process with inter-event time ``lookahead + Exp(mean)``,
        starting from an initial delay ``Exp(mean)``.
        """
        return self.n_lps * self.events_per_lp * _renewal_count(self.end_time, self.lookahead, self.mean_delay)


def _renewal_count(t_end: float, shift: float, mean: float) -> float:
    """E[number of renewals in [0, t_end)] with first arrival Exp(mean), then shift + Exp(mean).

    Computed exactly by summing P(S_k < t_end) where S_k = (k-1)*shift + Gamma(k, mean).
    """
    if mean == 0:
        return float(math.floor((t_end - 1e-300) / shift) + 1) if t_end > 0 else 0.0
    total = 0.0
    k = 1
    while True:
        x = t_end - (k - 1) * shift
        if x <= 0:
            break
        # P(Gamma(k, mean) < x) via the regularised lower incomplete gamma (Poisson tail).
        lam = x / mean
        term = math.exp(-lam)
        cdf_upper = term
        for i in range(1, k):
            term *= lam / i
            cdf_upper += term
        prob = 1.0 - cdf_upper
        total += prob
        if prob < 1e-15 and k > lam:  # the tail of the series is negligible
            break
        k += 1
    return total


class _PholdBase(Entity):
    def __init__(self, params: PholdParams):
        self.p = params
        self.count = 0
        self.digest = 0
        n = params.n_lps
        self._rate = 1.0 / params.mean_delay if params.mean_delay > 0 else math.inf
        self._region_size = n // params.regions
        r = min(self.index // self._region_size, params.regions - 1)
        self._lo = r * self._region_size
        self._hi = n if r == params.regions - 1 else self._lo + self._region_size
        # Hot-path copies: the handler reads only locals and plain attributes.
        self._r = self.rng
        self._base = self.sim.entity_type("lp").offset
        self._n = n
        self._la = params.lookahead
        self._remote = params.remote
        self._size = self._hi - self._lo
        self._n_out = n - self._size
        self._plain = params.regions == 1 and not params.digest and not params.max_hops and params.mean_delay > 0
        for _ in range(params.events_per_lp):
            self.send(self.eid, "event", params.max_hops, self._draw_exp(self._r))

    def _draw_exp(self, rng) -> float:
        return rng.expovariate(self._rate) if self._rate != math.inf else 0.0

    def _dest(self, rng) -> int:
        lo = self._lo
        if self.p.regions > 1 and rng.random() < self._remote:
            # Uniform over the LPs outside this region.
            k = rng.randrange(self._n_out)
            return k if k < lo else k + self._size
        return lo + rng.randrange(self._size)

    def _next(self, hops: int) -> tuple[int, int, float] | None:
        """Count one event; return (destination id, hops, delay) of the next, or None."""
        self.count += 1
        p = self.p
        if p.digest:
            self.digest = hash((self.digest, self.sim.now, hops))
        if p.max_hops:
            if hops <= 1:
                return None
            hops -= 1
        rng = self._r
        return self._base + self._dest(rng), hops, self._la + self._draw_exp(rng)


class PholdLP(_PholdBase):
    """Service style: ``event`` handles one event and sends the next."""

    def event(self, hops: int) -> None:
        nxt = self._next(hops)
        if nxt is not None:
            self.send(nxt[0], "event", nxt[1], nxt[2])


class _PlainPholdLP(PholdLP):
    """The service style without digest, hop limit or regions: the benchmarked hot path."""

    def event(self, hops: int) -> None:
        self.count += 1
        r = self._r
        self.send(self._base + r.randrange(self._n), "event", hops, self._la + r.expovariate(self._rate))


class _PlainRegionPholdLP(PholdLP):
    """The service style with regions, without digest or hop limit: the parallel benchmark's
    hot path (the same draws, in the same order, as ``PholdLP``)."""

    def event(self, hops: int) -> None:
        self.count += 1
        r = self._r
        if r.random() < self._remote:
            k = r.randrange(self._n_out)
            d = k if k < self._lo else k + self._size
        else:
            d = self._lo + r.randrange(self._size)
        self.send(self._base + d, "event", hops, self._la + r.expovariate(self._rate))


class PholdProcessLP(_PholdBase):
    """Process style: one process per LP loops on a blocking receive of its inbox."""

    inboxes = ("event",)

    def __init__(self, params: PholdParams):
        self.spawn(self.loop, name="phold", inbox="event")
        super().__init__(params)

    def loop(self) -> None:
        receive = self.current_process().receive
        send = self.send
        if self._plain:
            r = self._r
            base, n, la, rate = self._base, self._n, self._la, self._rate
            while True:
                hops = receive()
                self.count += 1
                send(base + r.randrange(n), "event", hops, la + r.expovariate(rate))
        while True:
            nxt = self._next(receive())
            if nxt is not None:
                send(nxt[0], "event", nxt[1], nxt[2])


STYLES = {"service": PholdLP, "process": PholdProcessLP}


def build(params: PholdParams, *, style: str = "service", seed: int = 0, comm="auto", parallel=None,
          predict_ranks: tuple[int, ...] = ()) -> Simulator:
    """A simulator holding a PHOLD model, ready to run."""
    try:
        cls = STYLES[style]
    except KeyError:
        raise ValueError(f"unknown PHOLD style {style!r}; valid: {', '.join(STYLES)}") from None
    if cls is PholdLP and not params.digest and not params.max_hops and params.mean_delay > 0:
        cls = _PlainPholdLP if params.regions == 1 else _PlainRegionPholdLP
    sim = Simulator(end_time=params.end_time, lookahead=params.lookahead, seed=seed, comm=comm, parallel=parallel,
                    predict_ranks=predict_ranks)
    sim.add_entities(cls, params.n_lps, params, name="lp", placement="block")
    return sim


def run(params: PholdParams, *, style: str = "service", seed: int = 0, comm="auto", parallel=None,
        predict_ranks: tuple[int, ...] = ()) -> tuple[Simulator, RunStats]:
    """Build and run PHOLD; returns the simulator (for per-LP state) and its statistics
    (``predict_ranks``: the kernel's statistics mode, see :mod:`pdes.predict`)."""
    sim = build(params, style=style, seed=seed, comm=comm, parallel=parallel, predict_ranks=predict_ranks)
    return sim, sim.run()


def lp_digests(sim: Simulator) -> list[tuple[int, int, int]] | None:
    """(id, events, digest) of every LP, gathered to rank 0 (None on the other ranks)."""
    mine = [(lp.eid, lp.count, lp.digest) for lp in sim.entities("lp")]
    if sim.comm is not None and sim.size > 1:
        parts = sim.comm.gather(mine, root=0)
        if sim.rank != 0:
            return None
        mine = [x for part in parts for x in part]
    return sorted(mine)


def run_digest(sim: Simulator) -> str | None:
    """One hex digest of every LP's processed events (rank 0; None elsewhere)."""
    import hashlib

    d = lp_digests(sim)
    return None if d is None else hashlib.sha256(repr(d).encode()).hexdigest()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="PHOLD on the pdes kernel")
    ap.add_argument("--lps", type=int, default=1000)
    ap.add_argument("--events", type=int, default=10, help="initial events per LP")
    ap.add_argument("--end", type=float, default=100.0)
    ap.add_argument("--lookahead", type=float, default=1.0)
    ap.add_argument("--mean", type=float, default=1.0)
    ap.add_argument("--remote", type=float, default=0.1)
    ap.add_argument("--regions", type=int, default=0, help="default: number of ranks")
    ap.add_argument("--style", choices=sorted(STYLES), default="service")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--parallel", action="store_true", help="use the windowed loop even on one rank")
    ap.add_argument("--digest", action="store_true", help="record and print a digest of every LP's events")
    ap.add_argument("--predict", default="", metavar="P,P,...",
                    help="sequentially, predict the parallel figures of these rank counts (pdes.predict)")
    a = ap.parse_args(argv)
    from ..parallel import install_abort_hook, world_comm

    comm = world_comm()
    if a.parallel and comm is None:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    install_abort_hook(comm)
    size = comm.size if comm is not None else 1
    params = PholdParams(
        n_lps=a.lps, events_per_lp=a.events, end_time=a.end, lookahead=a.lookahead, mean_delay=a.mean,
        remote=a.remote, regions=a.regions or size, digest=a.digest,
    )
    try:
        predict = tuple(int(x) for x in a.predict.split(",") if x.strip())
    except ValueError:
        ap.error(f"--predict takes rank counts separated by commas, got {a.predict!r}")
    sim, st = run(params, style=a.style, seed=a.seed, comm=comm, parallel=a.parallel or None, predict_ranks=predict)
    digest = run_digest(sim) if a.digest else None
    if sim.rank == 0:
        if st.predicted:
            from ..predict import prediction_table

            print(prediction_table(st.predicted))
        print(json.dumps({
            "events": st.events, "wall_s": st.wall_s, "events_per_s": st.events_per_s, "ranks": st.ranks,
            "windows": st.windows, "remote_fraction": st.remote_fraction,
            "exec_s_per_rank": st.exec_s_per_rank, "sync_s_per_rank": st.sync_s_per_rank,
            "expected_events": params.expected_events(), "digest": digest,
            "predicted": {p: vars(r) for p, r in st.predicted.items()},
        }))


if __name__ == "__main__":
    main()
