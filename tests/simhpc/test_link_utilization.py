"""Link utilization is busy time over the duration, in [0, 1], on every network model.

The ideal model has no contention: its links carry bytes but are never occupied, so busy
time (bytes / bandwidth) is only the offered load and can exceed the run's duration many
times over. Utilization is then not defined and is reported as NaN/None, never as > 100 %.
"""

from __future__ import annotations

import numpy as np
import pytest

from apps import run_app
from simhpc.cli import main
from simhpc.experiment import loads
from simhpc.experiment.runner import run_experiment
from simhpc.plots import NoDataError
from simhpc.plots.heatmap import router_matrix

@pytest.fixture(scope="module", params=["packet", "ideal"])
def app_run(request):
    # An all-to-all of 64 ranks on 16 nodes: on the ideal network its busiest links carry
    # about 35 times the bytes they could carry in the app's runtime.
    return request.param, run_app("tiny-torus", "alltoall", 64, network=request.param, comm=None)


def test_no_model_reports_a_link_utilization_above_one(app_run):
    model, res = app_run
    util = res.net.link_utilization
    assert len(util) == len(res.net.link_busy)
    if model == "ideal":
        assert np.isnan(util).all() and all(h["utilization"] is None for h in res.hot_links)
        # The offered load is kept: busy time is bytes over bandwidth, beyond the runtime.
        assert res.hot_links and res.hot_links[0]["busy_s"] > res.runtime
    else:
        assert np.isfinite(util).all() and (util >= 0).all() and (util <= 1 + 1e-12).all()
        assert res.hot_links and all(0 < h["utilization"] <= 1 + 1e-12 for h in res.hot_links)
    assert res.to_dict()["hot_links"] == res.hot_links


def test_the_app_command_shows_no_utilization_on_the_ideal_network(capsys):
    code = main(["app", "alltoall", "--ranks", "64", "--network", "ideal", "--top", "3"])
    out = capsys.readouterr().out
    assert code == 0
    table = out[out.index("hot links"):].splitlines()[3:6]
    assert len(table) == 3 and all(row.split()[-3] == "-" for row in table), table
    assert "ideal network: no contention, so links have no utilization" in out
    assert "%" not in out


EXPERIMENT = """
name = "util"
[machine]
preset = "tiny-torus"
[network]
model = "{model}"
[workload]
jobs = 1
inter_arrival = {{ dist = "constant", value = 0 }}
size = {{ dist = "constant", value = 64 }}
run_time = {{ dist = "constant", value = "1min" }}
[[apps]]
name = "alltoall"
request_time = "1min"
[scheduler]
ideal_baseline = false
"""


@pytest.mark.parametrize("model", ["packet", "ideal"])
def test_results_files_hold_utilization_in_0_1_or_nan_on_the_ideal_network(model):
    r = run_experiment(loads(EXPERIMENT.format(model=model)), comm=None, progress=False)
    assert r.jobs["status"][0] == "completed"
    util = np.asarray(r.links["utilization"])
    assert (np.asarray(r.links["busy"]) > 0).any()
    if model == "ideal":
        assert np.isnan(util).all()
        with pytest.raises(NoDataError, match="ideal network has no contention"):
            router_matrix(r)
    else:
        assert np.isfinite(util).all() and (util >= 0).all() and (util <= 1).all()
        mat, _ = router_matrix(r)
        assert np.nanmax(mat) <= 1


def test_studies_on_the_ideal_network_report_no_link_utilization():
    from models.network import NetworkConfig
    from simhpc.studies import ForegroundJob, InterferenceStudy, run_study

    st = InterferenceStudy(name="t", machine="tiny-torus", ranks_per_node=4, allocator="random", k=(0,), seeds=1,
                           network=NetworkConfig(model="ideal"),
                           foreground=ForegroundJob(app="alltoall", ranks=64, args={"iters": 1}))
    res = run_study(st, comm=None)
    assert res.runs["status"][0] == "ok"
    assert np.isnan(res.runs["max_util"]).all() and np.isnan(res.runs["max_util_alone"]).all()
    assert len(res.hot["utilization"]) == st.hot_links
    assert np.isnan(res.hot["utilization"]).all() and np.isnan(res.hot["utilization_alone"]).all()
    # The hot links are the ones that carried the most bytes.
    assert (np.diff(np.asarray(res.hot["fg_bytes"]) + res.hot["other_bytes"]) <= 0).all()
