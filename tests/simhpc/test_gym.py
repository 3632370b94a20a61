"""simhpc.gym: the Gymnasium scheduling environment (trace and simulated runtimes)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from scheduler.lifecycle import simulate  # noqa: E402
from simhpc.gym import ENV_ID, GymConfigError, InvalidActionError, SchedulingEnv  # noqa: E402
from simhpc.gym.episode import window_jobs  # noqa: E402


def _play(env, policy, seed=None, options=None):
    """Run one episode; returns (observations, rewards, last info)."""
    obs, info = env.reset(seed=seed, options=options)
    seen, rewards = [obs], []
    done = False
    while not done:
        obs, r, done, trunc, info = env.step(policy(obs, info))
        assert not trunc
        seen.append(obs)
        rewards.append(r)
    return seen, rewards, info


def first(obs, info):
    return 0


def test_check_env_passes():
    from gymnasium.utils.env_checker import check_env

    check_env(SchedulingEnv(jobs=40), skip_render_check=True)
    check_env(SchedulingEnv(jobs=40, allocators=("firstfree", "random"), backfill="easy"), skip_render_check=True)
    check_env(SchedulingEnv(runtime="simulated", machine="tiny-fattree3", jobs=16, slots=4, iters=2,
                            allocators=("firstfree", "random")), skip_render_check=True)


def test_registered_and_import_simhpc_does_not_import_gymnasium():
    env = gymnasium.make(ENV_ID, jobs=32)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    env.close()
    code = "import sys, simhpc; simhpc.replay; assert 'gymnasium' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("backfill", ["none", "easy"])
def test_always_first_slot_is_fcfs_and_return_is_minus_mean_bsld(backfill):
    env = SchedulingEnv(jobs=96, backfill=backfill)
    _, rewards, info = _play(env, first, seed=5)
    jobs = window_jobs(env._trace_jobs, info["start"], env.config, np.random.default_rng(0))
    ref = simulate(jobs, n_nodes=256, ordering="fcfs", backfill=backfill)
    assert {j.job_id: j.start_time for j in env._jobs} == {j.job_id: j.start_time for j in ref.jobs}
    bsld = [max((j.end_time - j.submit_time) / max(j.run_time, 10.0), 1.0) for j in ref.jobs]
    assert sum(rewards) == pytest.approx(-np.mean(bsld), rel=1e-12)
    assert info["mean_bounded_slowdown"] == pytest.approx(np.mean(bsld), rel=1e-12)
    assert info["decisions"] == len(rewards)


def _masked_random(seed):
    rng = np.random.default_rng(seed)

    def pol(obs, info):
        return int(rng.choice(np.flatnonzero(info["action_mask"])))
    return pol


def test_same_seed_same_episode_and_choices_change_the_schedule():
    a = _play(SchedulingEnv(jobs=64), _masked_random(1), seed=11)
    b = _play(SchedulingEnv(jobs=64), _masked_random(1), seed=11)
    assert len(a[0]) == len(b[0])
    assert all(np.array_equal(x, y) for x, y in zip(a[0], b[0]))
    assert a[1] == b[1]
    fcfs = _play(SchedulingEnv(jobs=64), first, seed=11)
    assert fcfs[2]["start"] == a[2]["start"]
    assert fcfs[2]["mean_bounded_slowdown"] != a[2]["mean_bounded_slowdown"]
    other = _play(SchedulingEnv(jobs=64), first, seed=12)
    assert other[2]["start"] != a[2]["start"]


def test_reset_in_mid_episode_gives_the_fresh_episode():
    env = SchedulingEnv(jobs=64)
    env.reset(seed=2)
    for _ in range(3):
        env.step(0)
    again = _play(env, first, options={"start": 100})
    fresh = _play(SchedulingEnv(jobs=64), first, options={"start": 100})
    assert again[1] == fresh[1]
    env.close()
    with pytest.raises(GymConfigError, match="call reset"):
        env.step(0)


def test_bad_actions():
    env = SchedulingEnv(jobs=64, slots=16, allocators=("firstfree", "random"))
    obs, info = env.reset(options={"start": 0})
    for bad in (32, -1, 2.0, "1", True, np.array([1])):
        with pytest.raises(InvalidActionError, match=r"valid actions are the integers 0\.\.31 \(slot \* 2 \+ allocator"):
            env.step(bad)
    while info["action_mask"].all():
        obs, _, _, _, info = env.step(0)
    n = int(info["action_mask"].sum())
    assert 2 <= n < 32 and info["action_mask"][:n].all() and n == 2 * int(obs[:96].reshape(16, 6)[:, 0].sum())
    # An empty slot: a masked no-op.
    obs2, r, done, _, info2 = env.step(n)
    assert info2["invalid_action"] and r == 0.0 and not done
    assert np.array_equal(obs, obs2) and info2["time"] == info["time"]
    obs3, _, _, _, info3 = env.step(np.int64(1))
    assert "invalid_action" not in info3
    with pytest.raises(GymConfigError, match="runtime must be one of trace, simulated; got 'fast'"):
        SchedulingEnv(runtime="fast")
    with pytest.raises(GymConfigError, match="slots"):
        SchedulingEnv(slots=0)
    with pytest.raises(GymConfigError, match=r"options\['start'\]"):
        env.reset(options={"start": 10**6})


def test_utilization_and_user_rewards():
    util = _play(SchedulingEnv(jobs=64, reward="utilization"), first, seed=4)
    assert all(r == 0.0 for r in util[1][:-1])
    assert util[1][-1] == pytest.approx(util[2]["utilization"]) and 0 < util[1][-1] <= 1
    ctxs = []

    def ended(ctx):
        ctxs.append(ctx)
        return float(len(ctx.ended))

    user = _play(SchedulingEnv(jobs=64, reward=ended), first, seed=4)
    assert sum(user[1]) == 64 and ctxs[-1].terminated and ctxs[-1].queue_length == 0


def test_observation_features():
    env = SchedulingEnv(jobs=64, slots=4)
    obs, info = env.reset(options={"start": 0})
    k = int(info["action_mask"].sum())
    slots = obs[:24].reshape(4, 6)
    assert (slots[:k, 0] == 1).all() and (slots[k:] == 0).all()
    win = env._window
    assert slots[0, 1] == pytest.approx(win[0].nodes / 256)
    assert slots[0, 4] == (1.0 if win[0].nodes <= env._ep.sched.state.n_free else 0.0)
    assert obs[24] == pytest.approx(env._ep.sched.state.n_free / 256)


@pytest.mark.parametrize("network", ["flow", "packet"])
def test_simulated_runtimes_depend_on_placement(network):
    kw = dict(runtime="simulated", machine="tiny-fattree3", jobs=16, slots=4, network=network, iters=2,
              allocators=("firstfree", "random"))
    env = SchedulingEnv(**kw)
    assert env.observation_space.shape == (4 * 6 + 3 + 2 * env.n_groups,)
    runs = {}
    loads = []
    for which in (0, 1):
        obs_seq, rewards, info = _play(env, lambda o, i, w=which: w, seed=7, options={"start": 140})
        loads += [o[-env.n_groups:] for o in obs_seq]
        apps = [j for j in env._jobs if j.app_name != "timekeeper"]
        assert apps, "no multi-node job in the window"
        for j in apps:
            # Emergent: computation (1 - comm_fraction) of the trace time, plus real messages.
            assert j.end_time - j.start_time > 0.7 * j.run_time
            assert j.end_time - j.start_time != j.run_time
        runs[which] = {j.job_id: j.end_time - j.start_time for j in apps}
    assert runs[0] != runs[1]
    assert max(float(np.max(x)) for x in loads) > 0
    env2 = SchedulingEnv(**kw)
    _play(env2, lambda o, i: 0, seed=7, options={"start": 140})
    assert {j.job_id: j.end_time - j.start_time for j in env2._jobs if j.app_name != "timekeeper"} == runs[0]


def test_example_training_beats_fcfs_at_a_small_size(capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "gym_train.py"
    spec = importlib.util.spec_from_file_location("gym_train", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(["--train", "2", "--test", "4", "--iters", "2", "--pop", "6", "--json"])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    import json

    assert json.loads(last)["bsld"] == out["bsld"]
    assert out["bsld"]["learned"] < out["bsld"]["fcfs"]
    assert len(out["weights"]) == len(mod.JOB_FEATURES) + 1


def test_docs_quick_start_runs():
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "gym.md").read_text()
    code = re.findall(r"```python\n(.*?)```", doc, flags=re.S)[0]
    ns: dict = {}
    exec(compile(code, "docs/gym.md", "exec"), ns)
    assert ns["done"] and ns["info"]["mean_bounded_slowdown"] >= 1.0


def test_vector_environments_play_the_same_episodes():
    envs = gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make(ENV_ID, jobs=32) for _ in range(2)])
    envs.reset(seed=[1, 2])
    total, done = np.zeros(2), np.zeros(2, dtype=bool)
    while not done.all():
        _, r, term, _, _ = envs.step(np.zeros(2, dtype=np.int64))
        total += np.where(done, 0.0, r)
        done |= term
    for i, seed in enumerate((1, 2)):
        assert total[i] == pytest.approx(sum(_play(SchedulingEnv(jobs=32), first, seed=seed)[1]), rel=1e-12)
