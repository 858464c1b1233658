"""The trace prong on real traces recorded on an H200 (tests/traces/data, made by bench/trace_fixtures.py from
bench/trace_record.py's run): planted problems named with their share of the step, steady steps, formats."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from orchestrator.traces import intervals as iv
from orchestrator.traces.step_account import account_rank
from orchestrator.traces.analyze import analyze
from orchestrator.traces.inputs import TraceInputError, expand
from orchestrator.traces.kineto import read_kineto
from orchestrator.traces.nsys import read_nsys

DATA = Path(__file__).parent / "data"
META = json.loads((DATA / "meta.json").read_text())


def _account(name: str):
    return account_rank(read_kineto(DATA / f"{name}.json.gz"))


def _steady_truth(name: str, acc) -> tuple[float, float]:
    """(planted ms, step wall ms) per steady step, as the recording script measured them on the host."""
    run = META["runs"][name]
    steady = [int(s.label.split("#")[1]) for s in acc.steps if s.steady]
    planted = sum(run["planted_ms"][i] for i in steady) / len(steady)
    wall = sum(run["step_wall_ms"][i] for i in steady) / len(steady)
    return planted, wall


def test_planted_host_sleep_is_named_with_its_share_of_the_step():
    acc = _account("decode_eager_sleep")
    top = acc.idle_owners[0]
    assert top.name == "planted_host_sleep"
    planted_ms, _ = _steady_truth("decode_eager_sleep", acc)
    truth = planted_ms * 1e3 / acc.breakdown.step_us
    assert abs(top.share_of_step - truth) <= 0.05 * truth, (top.share_of_step, truth)
    assert acc.breakdown.idle_by_cause_us["host_bound"] > 0.8 * acc.breakdown.step_us  # eager decode: launch-bound


def test_sync_per_step_is_named_once_per_step():
    acc = _account("decode_eager_sync")
    sync = {s.name: s for s in acc.sync_calls}
    assert sync["cudaDeviceSynchronize"].count_per_step == 1.0
    planted_ms, _ = _steady_truth("decode_eager_sync", acc)
    truth = planted_ms * 1e3 / acc.breakdown.step_us  # the host's perf_counter around torch.cuda.synchronize()
    assert abs(sync["cudaDeviceSynchronize"].share_of_step - truth) <= 0.05


def test_serialized_collective_is_named_with_its_share_of_the_step():
    acc = _account("prefill_eager_collective")
    assert acc.idle_owners[0].name == "planted_serialized_collective"
    # truth: the host time inside the planted range per steady step, from the raw events
    doc = json.load(gzip.open(DATA / "prefill_eager_collective.json.gz"))
    ranges = [e for e in doc["traceEvents"] if e.get("name") == "planted_serialized_collective"
              and e.get("cat") == "user_annotation"]
    steady = [s for s in acc.steps if s.steady]
    inside = sum(e["dur"] for e in ranges for s in steady if s.start_us <= e["ts"] < s.start_us + s.dur_us)
    truth = inside / sum(s.dur_us for s in steady)
    assert abs(acc.idle_owners[0].share_of_step - truth) <= 0.05 * truth, (acc.idle_owners[0].share_of_step, truth)
    names = {s.name for s in acc.sync_calls}
    assert "cudaMemcpyAsync (pageable)" in names and "cudaStreamSynchronize" in names


def test_graph_capture_and_warmup_steps_are_left_out():
    acc = _account("decode_graph_capture")
    assert any("CUDA-graph capture" in x for x in acc.excluded)
    assert acc.breakdown.busy_share > 0.85  # replayed graphs keep the GPU fed
    assert acc.breakdown.idle_by_cause_us["host_bound"] < 0.01 * acc.breakdown.step_us
    eager = _account("prefill_eager")
    assert any("warm-up" in x for x in eager.excluded)


def test_steps_found_from_the_kernel_sequence_without_markers(tmp_path):
    doc = json.load(gzip.open(DATA / "decode_eager_sleep.json.gz"))
    doc["traceEvents"] = [e for e in doc["traceEvents"] if "ProfilerStep" not in e.get("name", "")]
    p = tmp_path / "nomarkers.json"
    p.write_text(json.dumps(doc))
    periodic = account_rank(read_kineto(p))
    marked = _account("decode_eager_sleep")
    assert periodic.step_source.startswith("periodic")
    assert abs(periodic.breakdown.step_p50_us - marked.breakdown.step_p50_us) <= 0.05 * marked.breakdown.step_p50_us
    assert periodic.idle_owners[0].name == "planted_host_sleep"


def test_nsys_export_of_the_same_run_gives_the_same_account():
    nsys = account_rank(read_nsys(DATA / "prefill_eager_collective.sqlite"))
    kin = _account("prefill_eager_collective")
    assert nsys.step_source == kin.step_source == "markers: ProfilerStep#N"
    assert abs(nsys.breakdown.busy_share - kin.breakdown.busy_share) < 0.01
    assert nsys.idle_owners[0].name == "planted_serialized_collective"
    assert {s.name for s in nsys.sync_calls} >= {"cudaStreamSynchronize", "cudaMemcpyAsync (pageable)"}


def test_overlapping_kernels_on_two_streams_are_counted_once(tmp_path):
    ev = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1, "ts": i * 100.0,
           "dur": 90.0} for i in range(5)]
    for i in range(5):
        for s, (t, d) in enumerate([(10.0, 40.0), (30.0, 40.0)]):
            c = i * 10 + s
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": i * 100.0 + s, "dur": 2.0, "args": {"correlation": c}})
            ev.append({"ph": "X", "cat": "kernel", "name": "nvjet_sm90_tst_128x128", "pid": 0, "tid": 7 + s,
                       "ts": i * 100.0 + t, "dur": d, "args": {"stream": 7 + s, "device": 0, "correlation": c}})
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    acc = account_rank(read_kineto(p))
    assert acc.breakdown.step_us == pytest.approx(100.0)
    assert acc.breakdown.busy_us == pytest.approx(60.0)  # [10, 70), not 80
    assert acc.breakdown.by_class_us["gemm"] == pytest.approx(60.0)


def test_interval_difference_and_intersection():
    a = iv.merge([(0, 5), (3, 8), (10, 12)])
    assert a == [(0, 8), (10, 12)]
    assert iv.intersect(a, [(4, 11)]) == [(4, 8), (10, 11)]
    assert iv.subtract(a, [(4, 11)]) == [(0, 4), (11, 12)]


def test_diff_names_the_added_copies_and_the_host_bound_idle():
    r = analyze([str(DATA / "prefill_eager_collective.json.gz")], baseline=[str(DATA / "prefill_eager.json.gz")])
    d = r.diff
    assert d is not None and d.cur_step_us > 1.4 * d.base_step_us
    new = {k.name for k in d.kernels if k.status == "new"}
    assert {"Memcpy DtoH (Device -> Pageable)", "Memcpy HtoD (Pageable -> Device)"} <= new
    assert d.idle_delta_us_per_step["host_bound"] > 0.25 * d.base_step_us


def test_bad_trace_paths_are_refused_before_any_work(tmp_path):
    with pytest.raises(TraceInputError, match="no such file"):
        expand([str(tmp_path / "missing.json")])
    (tmp_path / "x.json").write_text("[1, 2]")
    with pytest.raises(TraceInputError, match="neither a Kineto"):
        expand([str(tmp_path / "x.json")])
    (tmp_path / "y.json").write_text('{"schemaVersion": 1, "other": []}')
    with pytest.raises(TraceInputError, match="no traceEvents"):
        expand([str(tmp_path / "y.json")])
    with pytest.raises(TraceInputError, match="matches no file"):
        expand([str(tmp_path / "*.trace.json.gz")])


def test_straggler_rank_and_the_collective_wait_it_causes(tmp_path):
    from support.trace_ranks import build

    build(DATA / "prefill_eager.json.gz", tmp_path, sleep_us=2000.0, comm_us=300.0)
    r = analyze([str(tmp_path)])
    assert [a.rank for a in r.ranks] == [0, 1]
    assert r.straggler is not None and r.straggler.rank == 1
    r0 = r.ranks[0]
    # rank 0's all-reduce waits the planted 2000 us per step for rank 1
    assert r0.collective_wait_us_per_step == pytest.approx(2000.0, rel=0.05)
    assert r0.collective_wait_share == pytest.approx(2000.0 / r0.breakdown.step_us, rel=0.05)
    assert r.ranks[1].collective_wait_share == pytest.approx(0.0, abs=1e-6)
    assert r0.breakdown.comm_exposed_us > 0.9 * r0.breakdown.comm_us


def test_host_only_events_are_streamed_past_in_bounded_memory(tmp_path):
    import tracemalloc

    p = tmp_path / "big.json"
    with open(p, "w") as f:  # 40k python_function events (~7 MB) and one kernel step
        f.write('{"schemaVersion": 1, "traceEvents": [\n')
        for i in range(40_000):
            f.write(json.dumps({"ph": "X", "cat": "python_function", "name": f"model.py(123): forward_{i % 97}",
                                "pid": 1, "tid": 1, "ts": float(i), "dur": 0.5,
                                "args": {"Python id": i, "Python parent id": i - 1}}) + ",\n")
        f.write(json.dumps({"ph": "X", "cat": "kernel", "name": "nvjet_sm90", "pid": 0, "tid": 7, "ts": 10.0,
                            "dur": 5.0, "args": {"stream": 7, "device": 0, "correlation": 1}}) + "\n]}\n")
    tracemalloc.start()
    cols = read_kineto(p)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert cols.skipped["python_function"] == 40_000 and cols.n_gpu == 1
    assert peak < 5_000_000, peak  # json.load of the same file takes ~35 MB
    assert len(read_kineto(p, include_host=True).annotations) == 40_000


def test_rank_is_read_from_distributed_info_else_from_the_file_name():
    from orchestrator.traces.kineto import rank_from_name

    assert rank_from_name("1733-TP-3-DP-0-PP-0-EP-0.trace.json.gz") == 3  # SGLang per-rank layout
    assert rank_from_name("worker_rank2.1733.pt.trace.json.gz") == 2
    assert rank_from_name("trace.json") is None
    assert read_kineto(DATA / "prefill_eager.json.gz").rank == 0  # distributedInfo.rank


def test_a_directory_of_sglang_rank_files_skips_the_merged_copy(tmp_path):
    src = (DATA / "prefill_graph.json.gz").read_bytes()
    for name in ("1733-TP-0-DP-0-PP-0-EP-0.trace.json.gz", "1733-TP-1-DP-0-PP-0-EP-0.trace.json.gz",
                 "merged-1733.trace.json.gz"):
        (tmp_path / name).write_bytes(src)
    (tmp_path / "notes.txt").write_text("not a trace")
    files = [p.name for p, fmt in expand([str(tmp_path)])]
    assert files == ["1733-TP-0-DP-0-PP-0-EP-0.trace.json.gz", "1733-TP-1-DP-0-PP-0-EP-0.trace.json.gz"]


def test_prefill_gemms_from_recorded_shapes_sit_on_the_h200_roofline():
    from orchestrator.prongs.trace.tool import place_on_roofline

    r = analyze([str(DATA / "prefill_eager.json.gz")])
    place_on_roofline(r)
    g = {(x.m, x.n, x.k): x for x in r.ranks[0].gemms}[(4096, 5632, 2048)]  # 4 x 1024 tokens, up/gate projection
    assert g.dtype == "bf16" and g.peak_tflops == 989 and g.bound == "compute"
    assert 0.5 * 989 < g.achieved_tflops < 989  # cuBLAS on an H200 at this size: most of the dense peak
    assert g.fraction_of_attainable == pytest.approx(g.achieved_tflops / g.attainable_tflops, rel=1e-3)
