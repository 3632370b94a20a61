"""Learn a job-selection policy on lublin_256 windows with nothing but numpy, and compare it
with FCFS on bounded slowdown.

The policy scores each waiting job shown in the observation with a linear function of its
features (the environment's six per-slot features plus its position in the queue) and picks
the best-scoring one. Its weights are learned by the cross-entropy method (a random search:
draw weights from a Gaussian, keep the best fifth, refit the Gaussian) on windows from the
first half of the trace, and judged on windows from the second half, against FCFS (always
the first waiting job) and SJF (the shortest request) in the same environment::

    python examples/gym_train.py                 # about a minute on one core
    python examples/gym_train.py --backfill easy --json

Needs the ``gym`` extra (``pip install 'simhpc[gym]'``); docs/gym.md gives its figures.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from simhpc.gym import JOB_FEATURES, SchedulingEnv

N_FEAT = len(JOB_FEATURES) + 1  # + the slot's position in the queue


def slot_features(obs: np.ndarray, slots: int) -> np.ndarray:
    """(slots, N_FEAT): each slot's features and its position (0 first, 1 last)."""
    f = obs[: slots * len(JOB_FEATURES)].reshape(slots, len(JOB_FEATURES))
    pos = np.linspace(0.0, 1.0, slots, dtype=np.float32)[:, None]
    return np.hstack([f, pos])


def linear_policy(w: np.ndarray, slots: int):
    def act(obs: np.ndarray, mask: np.ndarray) -> int:
        score = slot_features(obs, slots) @ w
        score[~mask[:slots]] = -np.inf
        return int(np.argmax(score))
    return act


def fcfs(obs: np.ndarray, mask: np.ndarray) -> int:
    return 0


def sjf(slots: int):
    def act(obs: np.ndarray, mask: np.ndarray) -> int:
        req = slot_features(obs, slots)[:, 2].copy()
        req[~mask[:slots]] = np.inf
        return int(np.argmin(req))
    return act


def mean_bsld(env: SchedulingEnv, policy, starts: list[int]) -> float:
    """The mean over windows of each window's mean bounded slowdown."""
    out = []
    for s in starts:
        obs, info = env.reset(seed=0, options={"start": s})
        done = False
        while not done:
            obs, _, done, _, info = env.step(policy(obs, info["action_mask"]))
        out.append(info["mean_bounded_slowdown"])
    return float(np.mean(out))


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=128, help="jobs per window (default 128)")
    ap.add_argument("--slots", type=int, default=16, help="waiting jobs the policy sees (default 16)")
    ap.add_argument("--backfill", choices=("none", "easy"), default="none")
    ap.add_argument("--train", type=int, default=8, help="training windows (default 8)")
    ap.add_argument("--test", type=int, default=30, help="test windows (default 30)")
    ap.add_argument("--iters", type=int, default=12, help="cross-entropy iterations (default 12)")
    ap.add_argument("--pop", type=int, default=20, help="weights drawn per iteration (default 20)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="end with one JSON line")
    a = ap.parse_args(argv)

    env = SchedulingEnv(jobs=a.jobs, slots=a.slots, backfill=a.backfill)
    rng = np.random.default_rng(a.seed)
    n = env.trace_length
    half = n // 2
    train = sorted(rng.integers(0, half - a.jobs, a.train).tolist())
    test = sorted(rng.integers(half, n - a.jobs, a.test).tolist())

    t0 = time.perf_counter()
    mu, sigma = np.zeros(N_FEAT), np.ones(N_FEAT)
    elite_n = max(2, a.pop // 5)
    best_w, best = mu.copy(), mean_bsld(env, linear_policy(mu, a.slots), train)
    for it in range(a.iters):
        ws = mu + sigma * rng.standard_normal((a.pop, N_FEAT))
        scores = np.array([mean_bsld(env, linear_policy(w, a.slots), train) for w in ws])
        order = np.argsort(scores)
        elite = ws[order[:elite_n]]
        mu, sigma = elite.mean(axis=0), elite.std(axis=0) + 0.05
        if scores[order[0]] < best:
            best, best_w = float(scores[order[0]]), ws[order[0]].copy()
        print(f"iteration {it + 1:2d}: best training bsld {best:10.2f}  (this draw {scores[order[0]]:10.2f})")
    train_s = time.perf_counter() - t0

    res = {
        "fcfs": mean_bsld(env, fcfs, test),
        "sjf": mean_bsld(env, sjf(a.slots), test),
        "learned": mean_bsld(env, linear_policy(best_w, a.slots), test),
    }
    print(f"\nmean bounded slowdown on {a.test} held-out windows of {a.jobs} lublin_256 jobs "
          f"(backfill {a.backfill}):")
    print(f"{'policy':10s} {'bsld':>10s} {'vs FCFS':>8s}")
    for k, v in res.items():
        print(f"{k:10s} {v:10.2f} {v / res['fcfs']:8.3f}")
    print(f"weights ({', '.join(JOB_FEATURES)}, position): {np.round(best_w, 3).tolist()}")
    print(f"training: {train_s:.1f} s for {a.iters * a.pop * a.train + a.train} episodes")
    out = {"jobs": a.jobs, "slots": a.slots, "backfill": a.backfill, "train_windows": a.train, "test_windows": a.test,
           "bsld": res, "learned_vs_fcfs": res["learned"] / res["fcfs"], "weights": best_w.tolist(),
           "train_s": train_s}
    if a.json:
        print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
