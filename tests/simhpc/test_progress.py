"""The progress bar of an experiment: its estimate of the wall time left stays defined to
the end of the run (after the last submission, while the last jobs run)."""

from __future__ import annotations

import io
import re

import pytest

from simhpc.experiment import loads
from simhpc.experiment import runner as runner_mod
from simhpc.experiment.progress import BAR_FORMAT, NO_ETA, eta_text, progress_postfix


@pytest.mark.parametrize("done,total,wall,text", [
    (0, 40, 12.0, NO_ETA),             # no job ended yet: an explicit label
    (5, 40, 0.0, NO_ETA),
    (30, 40, 60.0, "ETA 00:20"),       # 60 s for 30 jobs: 20 s for the 10 left
    (39, 40, 390.0, "ETA 00:10"),      # every job submitted, the last one still running
    (1, 100, 3600.0, "ETA 99:00:00"),
    (40, 40, 100.0, "ETA 00:00"),      # every job ended
    (41, 40, 100.0, "ETA 00:00"),      # never a negative estimate
])
def test_eta_text(done, total, wall, text):
    assert eta_text(done=done, total=total, wall=wall) == text


def test_postfix_names_simulated_time_event_rate_and_eta():
    assert progress_postfix(now="2h", done=3, total=4, wall=2.0, events=10_000) == "t=2h events/s=5,000 ETA 00:01"


def test_the_bar_shows_our_estimate_not_tqdms():
    tqdm = pytest.importorskip("tqdm").tqdm
    out = io.StringIO()
    bar = tqdm(total=10, file=out, bar_format=BAR_FORMAT, ncols=100)
    bar.update(4)
    bar.set_postfix_str(progress_postfix(now="1h", done=4, total=10, wall=8.0, events=100))
    bar.close()
    last = out.getvalue().split("\r")[-1]
    assert "ETA 00:12" in last and "?" not in last and "<" not in last


class _Bar:
    """Records what the ticker shows."""

    def __init__(self):
        self.n = 0
        self.shown: list[tuple[int, str]] = []

    def update(self, k):
        self.n += k

    def set_postfix_str(self, text, refresh=True):
        self.shown.append((self.n, text))

    def close(self):
        pass


def test_the_estimate_stays_defined_while_the_last_jobs_run(monkeypatch):
    bar = _Bar()
    monkeypatch.setattr(runner_mod, "_progress_bar", lambda total, enabled: bar)
    # Ten jobs submitted within a minute that run for about an hour: the ticks after the last
    # submission outnumber those before it.
    exp = loads('[machine]\npreset = "tiny-fattree3"\n[workload]\njobs = 10\n'
                'inter_arrival = { dist = "constant", value = "5s" }\nsize = { dist = "constant", value = 2 }\n'
                'run_time = { dist = "uniform", low = "50min", high = "1h" }\n[[apps]]\nname = "timekeeper"\n')
    r = runner_mod.run_experiment(exp, comm=None, progress=True)
    assert (r.jobs["status"] == "completed").all()
    assert len(bar.shown) > 50
    for n, text in bar.shown:
        if n == 0:
            assert text.endswith(" " + NO_ETA), text
        else:
            assert re.search(r" ETA \d+:\d\d(:\d\d)?$", text), text
    # Many ticks come after every job was submitted, some ended, and before the last one did.
    assert sum(0 < n < 10 for n, _ in bar.shown) > 100
