"""Synthetic workloads, app assignment and foreground insertion."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from scheduler.errors import UserError
from scheduler.job import Job, nodes_for
from scheduler.lifecycle import simulate
from scheduler.workload import (
    AppSpec,
    Choice,
    Constant,
    Exponential,
    LogNormal,
    LogUniform,
    PowerOfTwo,
    SyntheticWorkload,
    Uniform,
    Weibull,
    assign_apps,
    insert_foreground,
)


def fields(jobs):
    return [(j.job_id, j.job_size, j.nodes, j.submit_time, j.request_time, j.run_time, j.user, j.group) for j in jobs]


def test_same_seed_same_jobs_other_seed_other_jobs():
    spec = SyntheticWorkload(n_jobs=200)
    assert fields(spec.generate(7)) == fields(spec.generate(7))
    assert fields(spec.generate(7)) != fields(spec.generate(8))


def test_generated_jobs_follow_the_spec():
    spec = SyntheticWorkload(
        n_jobs=2000,
        inter_arrival=Exponential(mean=100.0),
        size=PowerOfTwo(low=2, high=32),
        run_time=LogUniform(low=10.0, high=1000.0),
        request_factor=Uniform(low=1.0, high=3.0),
        max_size=16,
        users=5,
        groups=2,
        cores_per_node=4,
        start_time=500.0,
    )
    jobs = spec.generate(1)
    assert [j.job_id for j in jobs] == list(range(1, 2001))
    sub = np.array([j.submit_time for j in jobs])
    assert (np.diff(sub) >= 0).all() and sub[0] >= 500.0
    assert np.mean(np.diff(sub)) == pytest.approx(100.0, rel=0.1)
    sizes = Counter(j.job_size for j in jobs)
    assert set(sizes) == {2, 4, 8, 16}  # 32 clipped to max_size
    assert sizes[16] > sizes[8]  # 16 and 32 both land on 16
    assert all(j.nodes == nodes_for(j.job_size, 4) for j in jobs)
    run = np.array([j.run_time for j in jobs])
    req = np.array([j.request_time for j in jobs])
    assert run.min() >= 10 and run.max() <= 1000 and (run == np.round(run)).all()
    assert (req >= run).all() and (req <= 3 * run + 1).all()
    assert {j.user for j in jobs} == set(range(5)) and all(j.group == j.user % 2 for j in jobs)
    assert all(j.app_name == "timekeeper" for j in jobs)


def test_distributions_sample_their_laws():
    rng = np.random.Generator(np.random.PCG64(0))
    n = 20000
    assert np.median(LogNormal(median=300.0, sigma=1.0).sample(rng, n)) == pytest.approx(300.0, rel=0.05)
    w = Weibull(shape=1.0, scale=50.0).sample(rng, n)  # shape 1: exponential with mean 50
    assert w.mean() == pytest.approx(50.0, rel=0.05)
    c = Choice(values=(1, 4), weights=(3, 1)).sample(rng, n)
    assert (c == 1).mean() == pytest.approx(0.75, abs=0.02)
    assert (Constant(value=2.5).sample(rng, 3) == 2.5).all()


@pytest.mark.parametrize("make,match", [
    (lambda: Exponential(mean=0), r"mean must be a finite number in \(0, inf\), got 0"),
    (lambda: Uniform(low=5, high=1), r"high must be a finite number in \[5, inf\), got 1"),
    (lambda: PowerOfTwo(low=3, high=8), "power of two"),
    (lambda: Choice(values=(1, 2), weights=(1,)), "weights must be 2 numbers"),
    (lambda: SyntheticWorkload(n_jobs=-1), "n_jobs must be an integer >= 0"),
    (lambda: SyntheticWorkload(n_jobs=5, size=3), "size must be a distribution"),
    (lambda: SyntheticWorkload(n_jobs=5, users=0), "users must be an integer >= 1"),
])
def test_bad_specs_raise_naming_the_parameter(make, match):
    with pytest.raises(UserError, match=match):
        make()


def test_synthetic_workload_runs_through_the_scheduler():
    jobs = SyntheticWorkload(n_jobs=300, size=PowerOfTwo(low=1, high=16)).generate(3)
    res = simulate(jobs, n_nodes=16, backfill="easy")
    assert all(j.status == "completed" for j in res.jobs)  # exact estimates: nobody killed


def test_assign_fixed_app_and_weighted_mix():
    jobs = SyntheticWorkload(n_jobs=4000).generate(0)
    fixed = assign_apps(jobs, AppSpec(name="allreduce", args={"bytes": 1024}))
    assert all(j.app_name == "allreduce" and j.app_args == {"bytes": 1024} for j in fixed)
    assert all(j.app_name == "timekeeper" for j in jobs)  # originals untouched
    assert fixed[0].app_args is not fixed[1].app_args
    mix = [AppSpec(name="stencil3d", weight=3.0), AppSpec(name="pairs", weight=1.0)]
    a = assign_apps(jobs, mix, seed=5)
    b = assign_apps(jobs, mix, seed=5)
    assert [j.app_name for j in a] == [j.app_name for j in b]
    share = Counter(j.app_name for j in a)["stencil3d"] / len(a)
    assert share == pytest.approx(0.75, abs=0.03)
    assert [j.app_name for j in assign_apps(jobs, mix, seed=6)] != [j.app_name for j in a]
    assert [j.app_name for j in assign_apps(jobs, "pairs")][:3] == ["pairs"] * 3


def test_assign_apps_validates_its_input():
    jobs = SyntheticWorkload(n_jobs=3).generate(0)
    with pytest.raises(UserError, match="non-empty list of AppSpec"):
        assign_apps(jobs, [])
    with pytest.raises(UserError, match="positive sum"):
        assign_apps(jobs, [AppSpec(name="a", weight=0.0)])


def background():
    return [Job(job_id=i, job_size=1, submit_time=100.0 * i, request_time=50, run_time=50) for i in range(1, 11)]


def foreground(n=2):
    return [Job(job_id=i, job_size=4, submit_time=0, request_time=500, run_time=400, app_name="stencil3d")
            for i in range(1, n + 1)]


def test_foreground_at_chosen_times():
    jobs = insert_foreground(background(), foreground(), at=[250.0, 50.0])
    fg = [j for j in jobs if j.foreground]
    assert [(j.job_id, j.submit_time) for j in fg] == [(12, 50.0), (11, 250.0)]  # renumbered above 10
    assert [j.submit_time for j in jobs] == sorted(j.submit_time for j in jobs)
    assert len(jobs) == 12 and sum(not j.foreground for j in jobs) == 10


def test_foreground_after_chosen_background_jobs():
    jobs = insert_foreground(background(), foreground(1), after_jobs=[4])
    k = [j.job_id for j in jobs].index(4)
    assert jobs[k + 1].foreground and jobs[k + 1].submit_time == 400.0


def test_foreground_at_random_points_is_seeded_and_inside_the_trace():
    a = insert_foreground(background(), foreground(5), seed=3)
    b = insert_foreground(background(), foreground(5), seed=3)
    c = insert_foreground(background(), foreground(5), seed=4)
    t = lambda js: [j.submit_time for j in js if j.foreground]  # noqa: E731
    assert t(a) == t(b) != t(c)
    assert all(100.0 <= x <= 1000.0 for x in t(a))


def test_foreground_errors():
    with pytest.raises(UserError, match="either at= .* or after_jobs="):
        insert_foreground(background(), foreground(1), at=[1.0], after_jobs=[1])
    with pytest.raises(UserError, match="gives 1 time"):
        insert_foreground(background(), foreground(2), at=[1.0])
    with pytest.raises(UserError, match="background job 99 does not exist"):
        insert_foreground(background(), foreground(1), after_jobs=[99])
    with pytest.raises(UserError, match="also a background job id"):
        insert_foreground(background(), foreground(1), at=[5.0], renumber=False)


def test_foreground_job_in_a_replay_keeps_its_flag():
    jobs = insert_foreground(background(), foreground(1), at=[120.0])
    res = simulate(jobs, n_nodes=4)
    (fg,) = [j for j in res.jobs if j.foreground]
    assert fg.start_time == 150.0  # waits for background job 1 (100..150) to free its node


@pytest.mark.parametrize("role,dist,drawn", [
    ("size", Uniform(low=0.0, high=8.0), "can draw 0"),
    ("size", LogNormal(median=32.0, sigma=1.0), "can draw values near 0"),
    ("size", Choice(values=(0.4, 2.0)), "can draw 0.4"),
    ("run_time", Constant(value=0.0), "can draw 0"),
    ("run_time", Uniform(low=-5.0, high=60.0), "can draw -5"),
    ("request_factor", Constant(value=0.0), "can draw 0"),
    ("request_factor", Uniform(low=-1.0, high=2.0), "can draw -1"),
    ("inter_arrival", Uniform(low=-10.0, high=10.0), "can draw -10"),
])
def test_a_distribution_that_can_draw_out_of_range_is_refused_not_clipped(role, dist, drawn):
    # These used to be clipped without a word: size 0 -> 1 process, factor 0 -> a 1-s
    # request, a negative gap -> 0.
    with pytest.raises(UserError, match=f"SyntheticWorkload: {role}: {type(dist).__name__} {drawn}, out of range"):
        SyntheticWorkload(n_jobs=10, **{role: dist})


def test_distributions_in_range_are_accepted():
    # A factor below 1 is a choice (the jobs are killed at their requested time), and
    # continuous run times above 0 are in range.
    jobs = SyntheticWorkload(n_jobs=50, size=Uniform(low=1.0, high=8.0), run_time=Exponential(mean=60.0),
                             request_factor=Uniform(low=0.5, high=0.9), inter_arrival=Constant(value=0.0)).generate(1)
    assert all(j.request_time < j.run_time for j in jobs if j.run_time > 2)
    assert len({j.submit_time for j in jobs}) == 1


def test_changed_draws_are_counted_by_rule():
    run = Choice(values=(0.3, 600.0, 3000.0))  # 0.3 s rounds to 0 at the 1-s resolution
    spec = SyntheticWorkload(n_jobs=400, size=PowerOfTwo(low=1, high=64), run_time=run, max_size=16,
                             max_run_time=2000.0)
    jobs, counts = spec.generate_counted(3)
    raw = SyntheticWorkload(n_jobs=400, size=PowerOfTwo(low=1, high=64), run_time=run, min_run_time=0.0).generate(3)
    assert counts["size_capped"] == sum(j.job_size > 16 for j in raw) > 0
    assert counts["run_time_raised"] == sum(j.run_time < 1.0 for j in raw) > 0
    assert counts["run_time_capped"] == sum(j.run_time > 2000.0 for j in raw) > 0
    assert max(j.job_size for j in jobs) == 16 and min(j.run_time for j in jobs) == 1.0
    assert [j.job_id for j in jobs] == [j.job_id for j in spec.generate(3)]
