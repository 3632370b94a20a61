"""The Standard Workload Format reader: fields, header quirks, the filter and its counts."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from scheduler.errors import SwfError, SwfMachineSizeError, UserError
from scheduler.job import Job
from scheduler.swf import SWF_FIELDS, read_swf, write_swf
from simhpc.traces import trace_path

DATA = Path(__file__).resolve().parents[1] / "data"

HEADER = """\
; Version: 2.2
; Computer: test machine
; MaxJobs: 7
; MaxNodes: 64 (batch partition; 128 total)
; MaxProcs: 64
; UnixStartTime: 835823160
; Queue:  1 short
; Queue:  2 long   
; Partition: 1 batch
; Information: http://example.org/machine
;              http://example.org/workloads/
; Note: a free comment
; Note: a second note
;
"""
#        job sub  wait run  alloc cpu  mem  reqp reqt  reqm st user grp exe q  part prec think
LINES = """\
1     0    5    100   8   90.5  -1   8    200   -1   1  3   7   -1  1  1   -1   -1
2     10   -1   -1    4   -1    -1   4    300   -1   5  3   7   -1  2  1   -1   -1
3     20   -1   50    16  -1    -1   -1   -1    -1   1  4   7   -1  2  1   -1   -1
4     30   -1   500   32  -1    -1   32   100   -1   0  5   8   -1  -1 1   -1   -1
5     40   -1   60    128 -1    -1   -1   600   -1   1  5   8   -1  1  1   -1   -1
6     50   -1   0     2   -1    -1   2    10    -1   1  6   8   -1  1  1   -1   -1
7     60   -1   70    -1  -1    -1   -1   80    -1   1  6   8   -1  1  1   -1   -1
"""


def write(tmp_path: Path, text: str, name: str = "t.swf") -> Path:
    p = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(p, "wt") as f:
            f.write(text)
    else:
        p.write_text(text)
    return p


def test_header_values_numbers_queues_and_comments(tmp_path):
    tr = read_swf(write(tmp_path, HEADER + LINES))
    h = tr.header
    assert h.max_nodes == 64 and h.max_procs == 64  # trailing comment ignored
    assert h.values["MaxNodes"] == "64 (batch partition; 128 total)"
    assert h.numbers["UnixStartTime"] == 835823160
    assert h.queues == {1: "short", 2: "long"} and h.partitions == {1: "batch"}
    assert h.values["Computer"] == "test machine"
    assert h.values["Note"] == "a second note"
    # A continuation line holding a URL is a comment (not a key "http"), and an earlier value
    # of a repeated key is kept among the comments.
    assert h.values["Information"] == "http://example.org/machine" and "http" not in h.values
    assert h.comments == ["http://example.org/workloads/", "Note: a free comment"]
    assert tr.n_nodes == 64


def test_all_eighteen_fields_are_kept_as_read(tmp_path):
    tr = read_swf(write(tmp_path, HEADER + LINES))
    assert len(SWF_FIELDS) == 18
    assert tr.records.shape == (7, 18)
    first = dict(zip(SWF_FIELDS, tr.records[0].tolist()))
    assert first == {
        "job_number": 1, "submit_time": 0, "wait_time": 5, "run_time": 100, "allocated_procs": 8,
        "avg_cpu_time": 90.5, "used_memory": -1, "requested_procs": 8, "requested_time": 200,
        "requested_memory": -1, "status": 1, "user_id": 3, "group_id": 7, "executable": -1,
        "queue": 1, "partition": 1, "preceding_job": -1, "think_time": -1,
    }


def test_filter_counts_and_fallbacks(tmp_path):
    tr = read_swf(write(tmp_path, HEADER + LINES))
    rep = tr.report
    assert rep.lines == 7
    assert rep.cancelled == 1  # job 2: run time -1
    assert rep.no_processors == 1  # job 7: neither requested nor allocated
    assert rep.procs_from_allocated == 2  # jobs 3 and 5 (job 7 was dropped)
    assert rep.request_from_runtime == 1  # job 3
    assert rep.too_large == 1  # job 5: 128 processors on 64 nodes
    assert rep.overrun == 1  # job 4: ran 500 s, requested 100 s
    assert rep.zero_runtime == 1  # job 6
    assert rep.kept == 4 and rep.malformed == 0 and rep.dropped == 2
    assert [j.job_id for j in tr.jobs] == [1, 3, 4, 6]
    assert [j.job_id for j in tr.rejected] == [5]
    assert tr.rejected[0].status == "rejected"
    j1, j3, j4, j6 = tr.jobs
    assert (j1.job_size, j1.nodes, j1.submit_time, j1.run_time, j1.request_time) == (8, 8, 0, 100, 200)
    assert (j3.job_size, j3.request_time) == (16, 50)  # allocated procs, run time as estimate
    assert j1.queue_name == "short" and j3.queue_name == "long" and j4.queue_name == ""
    assert (j1.user, j1.group) == (3, 7)
    assert j1.app_name == "timekeeper"


def test_cores_per_node_gives_node_counts_and_machine_size(tmp_path):
    tr = read_swf(write(tmp_path, HEADER + LINES), cores_per_node=16)
    assert tr.n_nodes == 4  # ceil(MaxProcs 64 / 16)
    assert [(j.job_size, j.nodes) for j in tr.jobs] == [(8, 1), (16, 1), (32, 2), (2, 1)]
    assert tr.report.too_large == 1  # 128 processes = 8 nodes > 4


def test_explicit_node_count_overrides_the_header(tmp_path):
    tr = read_swf(write(tmp_path, HEADER + LINES), n_nodes=200)
    assert tr.n_nodes == 200 and tr.report.too_large == 0 and len(tr.jobs) == 5
    tr = read_swf(write(tmp_path, HEADER + LINES), n_nodes=10)
    assert [j.job_id for j in tr.rejected] == [3, 4, 5]


def test_maxnodes_alone_sets_the_machine(tmp_path):
    text = "; MaxNodes: 32\n1 0 -1 10 4 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"
    assert read_swf(write(tmp_path, text)).n_nodes == 32


def test_no_machine_size_is_a_clear_error(tmp_path):
    p = write(tmp_path, "; Computer: x\n1 0 -1 10 4 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n")
    # The reader names its own argument; callers with options of their own name theirs.
    with pytest.raises(SwfMachineSizeError, match=r"t\.swf: the header gives no machine size .*; give it with n_nodes=N$"):
        read_swf(p)
    assert read_swf(p, n_nodes=8).n_nodes == 8


def test_gzip_trace_reads_the_same(tmp_path):
    a = read_swf(write(tmp_path, HEADER + LINES))
    b = read_swf(write(tmp_path, HEADER + LINES, "t.swf.gz"))
    assert np.array_equal(a.records, b.records)
    assert [j.job_id for j in b.jobs] == [j.job_id for j in a.jobs]


def test_malformed_line_names_file_line_and_reason(tmp_path):
    text = HEADER + LINES.replace("6     50   -1   0     2 ", "6     50   -1   zero  2 ")
    p = write(tmp_path, text)
    with pytest.raises(SwfError) as ei:
        read_swf(p)
    line = HEADER.count("\n") + 6
    assert str(ei.value) == f"{p}:{line}: field 4 (run_time) is 'zero', not a number"
    assert ei.value.line == line
    tr = read_swf(p, skip_malformed=True)
    assert tr.report.malformed == 1 and tr.report.lines == 7 and 6 not in [j.job_id for j in tr.jobs]


def test_wrong_field_count_and_non_finite_values(tmp_path):
    p = write(tmp_path, HEADER + LINES + "8 70 -1 10 2 -1 -1 2 10 -1 1\n")
    with pytest.raises(SwfError, match=r":22: expected 18 whitespace-separated SWF fields, found 11"):
        read_swf(p)
    p = write(tmp_path, HEADER + "1 0 -1 nan 2 -1 -1 2 10 -1 1 1 1 -1 -1 -1 -1 -1\n")
    with pytest.raises(SwfError, match="field 4 .* not a finite number"):
        read_swf(p)


@pytest.mark.parametrize("content,match", [
    ("job,submit,run\n1,0,10\n", r":1: expected 18 .*found 1 \(is this a Standard Workload Format trace\?\)"),
    ("", "the file is empty"),
])
def test_files_that_are_not_swf(tmp_path, content, match):
    with pytest.raises(SwfError, match=match):
        read_swf(write(tmp_path, content), n_nodes=4)


def test_binary_and_bad_gzip_files(tmp_path):
    p = tmp_path / "x.swf"
    p.write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    with pytest.raises(SwfError, match="binary file, not an SWF trace"):
        read_swf(p)
    p = tmp_path / "x.swf.gz"
    p.write_text("1 0 -1 10 4 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n")
    with pytest.raises(SwfError, match="cannot read it as gzip"):
        read_swf(p)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        read_swf(tmp_path / "nope.swf")
    with pytest.raises(UserError, match="is a directory"):
        read_swf(tmp_path)


def test_bad_arguments(tmp_path):
    p = write(tmp_path, HEADER + LINES)
    with pytest.raises(UserError, match="machine size must be an int >= 1"):
        read_swf(p, n_nodes=-4)
    with pytest.raises(UserError, match="cores_per_node"):
        read_swf(p, cores_per_node=0)


def test_limit_keeps_the_first_lines(tmp_path):
    tr = read_swf(write(tmp_path, HEADER + LINES), limit=3)
    assert tr.report.lines == 3 and [j.job_id for j in tr.jobs] == [1, 3]
    # The counts concern the lines read: a malformed line past the limit is not read.
    p = write(tmp_path, HEADER + LINES + "8 70 -1 10 2 -1 -1 2 10 -1 1\n")
    tr = read_swf(p, limit=3, skip_malformed=True)
    assert tr.report.lines == 3 and tr.report.malformed == 0 and tr.records.shape == (3, 18)
    assert read_swf(p, limit=7).report.lines == 7
    assert read_swf(p, limit=8, skip_malformed=True).report.as_dict()["malformed"] == 1


def test_write_then_read_round_trip(tmp_path):
    jobs = [Job(job_id=i, job_size=2 * i, submit_time=10.0 * i, request_time=100, run_time=50 + i, user=i % 3)
            for i in range(1, 6)]
    for name in ("w.swf", "w.swf.gz"):
        p = tmp_path / name
        assert write_swf(p, jobs, max_nodes=16, comments=["written by a test"]) == 5
        tr = read_swf(p)
        assert tr.n_nodes == 16 and tr.header.comments == ["written by a test"]
        got = [(j.job_id, j.job_size, j.submit_time, j.request_time, j.run_time, j.user) for j in tr.jobs]
        assert got == [(j.job_id, j.job_size, j.submit_time, j.request_time, j.run_time, j.user) for j in jobs]


def test_shipped_fixture_has_quirks():
    tr = read_swf(DATA / "backfill6.swf")
    assert tr.n_nodes == 8 and tr.header.values["MaxNodes"].startswith("8 (")
    assert tr.report.procs_from_allocated == 1 and tr.report.request_from_runtime == 1


def test_ctc_sp2_trace_quirks():
    path = trace_path("CTC-SP2-1996-3.1-cln.swf.gz")
    tr = read_swf(path)
    rep = tr.report
    assert tr.header.max_nodes == 338 and tr.header.max_procs == 338 and tr.n_nodes == 338
    assert tr.header.numbers["MaxRecords"] == 79302
    assert rep.lines == 77222 and rep.kept == 77222 and len(tr.jobs) == 77222
    assert rep.procs_from_allocated == 77222  # requested processors is -1 on every line
    assert rep.request_from_runtime == 6
    assert rep.overrun == 7174
    assert rep.zero_runtime == 17
    assert tr.header.queues[1] == "DSI"
    assert tr.header.values["Information"] == "http://www.tc.cornell.edu/" and "http" not in tr.header.values
    assert "Note: uses the EASY scheduler" in tr.header.comments


def test_lublin_trace_quirks():
    path = trace_path("lublin_256.swf")
    tr = read_swf(path)
    assert tr.n_nodes == 256 and len(tr.jobs) == 10000
    assert tr.report.request_from_runtime == 10000
    assert all(j.request_time == j.run_time for j in tr.jobs)
