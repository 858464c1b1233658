"""Write the fuzz corpus (tests/fuzz/corpus/<kind>/): a few well-formed seeds per kind of input, and every hostile
input a review found, as the file that reproduces it.

    python tests/fuzz/make_corpus.py      # (re)writes the files below (deterministic); commit what changed

A break found later goes in by hand or here: its file under corpus/<kind>/, named after what it does (the mutants the
fuzz pass found are kept as they were generated, `fuzz-*`; this script leaves them alone). Large inputs
are kept gzipped (`NAME.EXT.gz`): the fuzz harness hands every kind but traces (which read gzip themselves) the
decompressed bytes.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
REPO = HERE.parents[1]
SEED_TRANSCRIPT = REPO / "transcripts" / "seed-rtx-pro-6000-fp4.jsonl"


def _write(kind: str, name: str, data: bytes | str) -> None:
    d = CORPUS / kind
    d.mkdir(parents=True, exist_ok=True)
    raw = data.encode() if isinstance(data, str) else data
    if name.endswith(".gz"):
        raw = gzip.compress(raw, 9, mtime=0)
    (d / name).write_bytes(raw)


def _nest_list(n: int) -> str:
    return "[" * n + "]" * n


def _nest(n: int) -> object:
    v: object = 1
    for _ in range(n):
        v = {"a": v}
    return v


def _alias_bomb_yaml(key: str) -> str:
    return "l0: &l0 {" + ", ".join(f"k{j}: x" for j in range(10)) + "}\n" + "".join(
        f"l{i}: &l{i} {{" + ", ".join(f"k{j}: *l{i - 1}" for j in range(10)) + "}\n" for i in range(1, 10)) + \
        f"{key}: *l9\n"


# --- seeds -----------------------------------------------------------------------------------------------------------

def seeds() -> None:
    _write("observations", "seed.yaml", """model: {name: GLM-5-NVFP4, quantization: nvfp4, num_layers: 78, num_experts: 256, top_k: 8,
        hidden_size: 6144, moe_intermediate_size: 2048}
runs:
  - {tp: 8, pp: 1, ep: 1, concurrency: 512, total_tok_s: 2800}
  - {tp: 4, pp: 2, ep: 1, concurrency: 512, total_tok_s: 1318}
gpu: {power_w: 330, power_limit_w: 600, sm_occupancy: 0.98}
notes: free text
""")
    _write("observations", "seed.json", json.dumps({"model": {"name": "Llama-3.1-8B", "num_layers": 32},
                                                    "runs": [{"tp": 1, "concurrency": 64, "output_tok_s": 2100.5,
                                                              "input_len": 1024, "output_len": 256}],
                                                    "gpu": {"utilization_pct": 97}}, indent=1))
    bench = REPO / "tests" / "engine" / "data" / "bench"
    for f in ("vllm-infqps-concurrency64-Llama-3.1-8B-Instruct-20251130-101500.json", "profile_export_genai_perf.json",
              "sglang_1130_500_1024_256.jsonl"):
        _write("bench", "seed-" + f.split("-")[0].split("_")[0] + Path(f).suffix, (bench / f).read_bytes())
    vllm_log = (REPO / "tests" / "engine" / "data" / "logs" / "vllm-0.11-eager.log").read_text()
    sglang_log = (REPO / "tests" / "scenarios" / "engine" / "sglang-kv-pool-full-retract" / "sglang.log").read_text()
    _write("log", "seed-vllm.log", vllm_log)
    _write("log", "seed-sglang.log", sglang_log)
    _write("baseline_log", "seed-vllm.log", vllm_log)
    _write("config", "seed-vllm.yaml", "max-num-seqs: 128\nenforce-eager: true\ngpu_memory_utilization: 0.92\n"
                                       "compilation-config: {level: 3, cudagraph_capture_sizes: [1, 2, 4, 8]}\n")
    _write("config", "seed-trtllm.yaml", "tensor_parallel_size: 8\nmax_batch_size: 256\nkv_cache_config:\n"
                                         "  dtype: fp8\n  free_gpu_memory_fraction: 0.85\n  enable_block_reuse: false\n"
                                         "cuda_graph_config:\n  batch_sizes: [1, 2, 4, 8, 16]\n  max_batch_size: 16\n"
                                         "moe_config: {backend: CUTLASS}\n")
    _write("trace", "seed.json", json.dumps(_small_trace(), indent=None))
    _write("trace", "seed.json.gz", json.dumps(_small_trace(ranks=1)))
    _small_nsys(CORPUS / "nsys" / "seed.sqlite")
    _write("transcript", "seed-mini.jsonl.gz", "\n".join(_mini_transcript()) + "\n")


def _small_trace(ranks: int = 0) -> dict:
    """A Kineto trace of a few steps: markers, launches, kernels of several classes, a GEMM shape, a capture call."""
    ev: list[dict] = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "python"}}]
    t = 1_000_000.0
    corr = 1
    for step in range(6):
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1, "ts": t,
                   "dur": 900.0})
        if step == 0:
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamBeginCapture", "pid": 1, "tid": 1,
                       "ts": t + 1, "dur": 2.0, "args": {"correlation": 0}})
        for k, name in enumerate(("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", "flash_fwd_kernel", "rms_norm_kernel",
                                  "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "Memcpy DtoH (Device -> Pageable)")):
            ts = t + 10 + 150 * k
            ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": ts, "dur": 5.0,
                       "args": {"External id": corr, "Input Dims": [[128, 4096], [4096, 4096]],
                                "Input type": ["c10::BFloat16", "c10::BFloat16"]}})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts + 1,
                       "dur": 4.0, "args": {"correlation": corr, "External id": corr}})
            ev.append({"ph": "X", "cat": "gpu_memcpy" if "Memcpy" in name else "kernel", "name": name, "pid": 0,
                       "tid": 7, "ts": ts + 8, "dur": 100.0,
                       "args": {"stream": 7, "device": 0, "correlation": corr, "External id": corr}})
            corr += 1
        t += 1000.0
    doc: dict = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "computeMajor": 9}]}
    if ranks:
        doc["distributedInfo"] = {"rank": 0, "world_size": ranks}
    doc["traceEvents"] = ev
    doc["traceName"] = "seed"
    return doc


def _small_nsys(path: Path, extra: str = "") -> None:
    """An Nsight Systems export's shape (the tables and columns nsys.py reads), a few rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.execute("PRAGMA page_size=512")  # small files in the repository
    db.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO StringIds VALUES (1, 'sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n'), (2, 'cudaLaunchKernel_v7000'),
            (3, 'ProfilerStep#1'), (4, 'flash_fwd_kernel'), (5, 'cudaStreamBeginCapture_v10000');
        CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT);
        INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H200');
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
            streamId INTEGER, correlationId INTEGER, demangledName INTEGER, shortName INTEGER, graphNodeId INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, globalTid INTEGER,
            correlationId INTEGER, nameId INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
            correlationId INTEGER, copyKind INTEGER, srcKind INTEGER, dstKind INTEGER, bytes INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
            correlationId INTEGER);
        CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, text TEXT, textId INTEGER, globalTid INTEGER);
    """)
    rows_k, rows_r, rows_n = [], [], []
    corr = 1
    for step in range(6):
        t = 1_000_000_000 + step * 1_000_000
        rows_n.append((t, t + 900_000, None, 3, 77))
        for k, nid in enumerate((1, 4)):
            ts = t + 10_000 + 200_000 * k
            rows_r.append((ts, ts + 4_000, 77, corr, 2))
            rows_k.append((ts + 8_000, ts + 108_000, 0, 7, corr, nid, nid, None))
            corr += 1
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows_k)
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?)", rows_r)
    db.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?)", rows_n)
    db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (1000900000, 1000950000, 0, 7, 999, 2, 3, 1, 4096)")
    db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (1000960000, 1000970000, 0, 7, 998)")
    if extra:
        db.executescript(extra)
    db.commit()
    db.execute("VACUUM")
    db.close()


def _mini_transcript() -> list[str]:
    """The shipped seed transcript cut to what show and report read: header, run start (no agent definitions), the
    observations result, one agent's end, the diagnosis, the run's end."""
    out = []
    took_result = took_finished = False
    for line in SEED_TRANSCRIPT.read_text().splitlines():
        ev = json.loads(line)
        kind = ev.get("type")
        if kind == "run_started":
            ev["agent_defs"] = {}
            line = json.dumps(ev)
        elif kind == "tool_result" and not took_result and ev.get("tool") == "observations":
            took_result = True
        elif kind == "agent_finished" and not took_finished and len(line) < 1000:
            took_finished = True
        elif kind not in ("header", "diagnosis_submitted", "run_finished"):
            continue
        out.append(line)
    return out


def _mini_with(edit) -> str:
    lines = []
    done = False
    for line in _mini_transcript():
        ev = json.loads(line)
        if not done and edit(ev):
            line, done = json.dumps(ev), True
        lines.append(line)
    assert done
    return "\n".join(lines) + "\n"


# --- every break found -----------------------------------------------------------------------------------------------

def reproductions() -> None:
    # host config YAML (S1, m7)
    bomb = "max-num-seqs: 7\n" + _alias_bomb_yaml("compilation-config")
    _write("config", "s1-alias-bomb.yaml", bomb)
    _write("config", "m7-nested-20k.yaml.gz", "compilation-config: " + _nest_list(20_000) + "\n")
    _write("config", "bad-values-trtllm.yaml", "tensor_parallel_size: abc\nmax_seq_len: .inf\nkv_cache_config: "
                                               "{max_tokens: -1e308}\ncuda_graph_config: {batch_sizes: 7}\n")
    # observations, bench (issue 23, round 2)
    _write("observations", "alias-bomb.yaml", "runs: [&a [x, x, x, x, x, x, x, x, x], " + ", ".join(
        f"&{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]" for i in range(9)) + "]\n")
    _write("observations", "nested-600.json", '{"notes": ' + _nest_list(600) + "}")
    _write("observations", "int-5000-digits.json", '{"gpu": {"power_w": ' + "9" * 5000 + "}}")
    _write("observations", "duplicate-key.yaml", "model: {name: a}\nmodel: {name: b}\n")
    _write("observations", "python-tag.yaml", "model: !!python/object/apply:os.system ['id']\n")
    _write("bench", "int-5000-digits.json", '{"mean_ttft_ms": ' + "9" * 5000 + "}")
    _write("bench", "nested-700.json", _nest_list(700))
    _write("bench", "nan-inf-negative.json", '{"backend": "vllm", "mean_ttft_ms": NaN, "mean_itl_ms": -Infinity, '
                                             '"output_throughput": -5, "completed": 1e999}')
    # --baseline-log and engine logs (m6)
    pump = "INFO vLLM API server version 0.11.0\n" + "server_args=ServerArgs(" * 40_000 + "\n" + \
        "non-default args: {" * 20_000 + "\n" + "] args: Namespace(" * 20_000 + "\n"
    _write("baseline_log", "m6-920k-line.log.gz", pump)
    _write("log", "m6-920k-line.log.gz", pump)
    _write("log", "pumped-catalog-literals.log.gz", "".join(
        lit * (8000 // len(lit)) + "\n" for lit in ("SymmMem", "[AutoTuner]: No tuned config covers",
                                                     "Decode batch. #running-req: 1,", "Try DeepGEMM JIT Compiling for ",
                                                     "Load weight end. type=", "SpecDecoding metrics: ", "Using ",
                                                     "AER:", "eyJ", "device_name=")))
    # Kineto traces (S2, S4, m5)
    _write("trace", "s2-header-nested-60k.json.gz", '{"deviceProperties": ' + _nest_list(60_000)
           + ', "traceEvents": []}')
    _write("trace", "s2-event-nested-60k.json.gz", '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", '
           '"ts": 1, "dur": 1}, {"ph": "X", "cat": "cpu_op", "args": {"x": ' + _nest_list(60_000) + "}}]}")
    _write("trace", "s2-input-dims-5000.json.gz", '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", '
           '"ts": 1, "dur": 1}, {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "args": {"Input Dims": '
           + _nest_list(5000) + "}}]}")
    _write("trace", "s4-names-100k.json.gz", json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "sm1_" * 25_000 + str(i), "ts": 10.0 * i, "dur": 5.0,
         "args": {"stream": 7}} for i in range(2)]}))
    _write("trace", "s4-steps-and-captures.json.gz", json.dumps({"traceEvents": [
        *({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "ts": 100.0 * i, "dur": 90.0, "tid": 1}
          for i in range(3000)),
        *({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamBeginCapture", "ts": 100.0 * i + 1, "dur": 1.0,
           "args": {"correlation": -1}} for i in range(3000)),
        *({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 100.0 * i + 5, "dur": 1.0,
           "args": {"correlation": i}} for i in range(3000)),
        *({"ph": "X", "cat": "kernel", "name": "k", "ts": 100.0 * i + 10, "dur": 50.0,
           "args": {"stream": 7, "correlation": i}} for i in range(3000))]}))
    times = '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 10, "dur": 5}, ' + ", ".join(
        '{"ph": "X", "cat": "kernel", "name": "k", ' + t + "}" for t in (
            '"ts": 1e308, "dur": 1', '"ts": 1, "dur": 1.7e308', '"ts": 1, "dur": -1.7e308', '"ts": NaN, "dur": 1',
            '"ts": Infinity', '"ts": 1e999', '"ts": "abc"', '"dur": 3', '"ts": ' + "9" * 400)) + "]}"
    _write("trace", "m5-times-out-of-range.json", times)
    _write("trace", "shapes.json", '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1}, 7, "x", '
           '[1], null, {"ph": "X", "cat": "kernel", "ts": 2, "args": [1, 2]}, {"ph": "X", "cat": {"a": 1}, "ts": 1}, '
           '{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "args": {"Input Dims": [[1e300, 2], [2, "x"]], '
           '"External id": 1e300}}]}')
    _write("trace", "int-5000-digits.json", '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": '
           + "9" * 5000 + ", \"dur\": 1}]}")
    _write("trace", "event-over-1mib.json.gz", '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "'
           + "k" * (1 << 20) + '", "ts": 1, "dur": 1}]}')
    _write("trace", "top-level-array.json", "[" + json.dumps({"ph": "X", "cat": "kernel", "ts": 1}) + "]")
    _write("trace", "yajl-context-leak.json", '{"traceEvents": [{"ph": "X", "breakglass": "CANARY-91xQ", // rotate\n}]}')
    # nsys exports (S3)
    _small_nsys(CORPUS / "nsys" / "s3-generated-column-bomb.sqlite",
                "ALTER TABLE StringIds ADD COLUMN bomb TEXT GENERATED ALWAYS AS (value || hex(zeroblob(50000000))) "
                "VIRTUAL; ALTER TABLE StringIds RENAME COLUMN value TO v0; ALTER TABLE StringIds RENAME COLUMN bomb "
                "TO value;")
    _small_nsys(CORPUS / "nsys" / "s3-virtual-stringids.sqlite",
                "DROP TABLE StringIds; CREATE VIRTUAL TABLE StringIds USING fts5(id, value); "
                "INSERT INTO StringIds VALUES (1, 'k');")
    _small_nsys(CORPUS / "nsys" / "typed-garbage.sqlite",
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ('x', X'00ff', 1e308, 'a', -9223372036854775808, "
                "'nope', NULL, NULL); INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1e308, -1e308, 0, 7, 1, 99, 99, "
                "NULL); INSERT INTO StringIds VALUES (99, X'41ff42'); INSERT INTO NVTX_EVENTS VALUES "
                "('a', 'b', X'00', 'c', 'd');")
    # transcripts (hostile_transcripts_fuzz, round 3)
    _write("transcript", "tool-data-nested-400.jsonl.gz", _mini_with(
        lambda e: e["type"] == "tool_result" and e.update(data={"x": _nest(400)}) is None))
    _write("transcript", "observations-nested-600.jsonl.gz", _mini_with(
        lambda e: e["type"] == "run_started" and e["inputs"].update(observations={"model": _nest(600)}) is None))
    _write("transcript", "extra-key-in-agent-result.jsonl.gz", _mini_with(
        lambda e: e["type"] == "agent_finished" and e["result"].update(evil=1) is None))
    _write("transcript", "settings-alias-bomb.jsonl.gz", _mini_with(
        lambda e: e["type"] == "tool_result" and e.update(tool="settings_audit", data={
            "kind": "settings_audit", "host": "gpu-box", "processes": [{
                "pid": 7, "engine": "vllm", "version": "0.32.0",
                "argv": ["vllm", "serve", "/m", "--config", "/srv/serve.yaml"],
                "files": {"/srv/serve.yaml": {"text": bomb, "role": "--config"}}}]}) is None))
    _write("transcript", "settings-nested-20k.jsonl.gz", _mini_with(
        lambda e: e["type"] == "tool_result" and e.update(tool="settings_audit", data={
            "kind": "settings_audit", "host": "gpu-box", "processes": [{
                "pid": 7, "engine": "vllm", "version": "0.32.0",
                "argv": ["vllm", "serve", "/m", "--config", "/srv/serve.yaml"],
                "files": {"/srv/serve.yaml": {"text": "a: " + _nest_list(20_000), "role": "--config"}}}]}) is None))
    _write("transcript", "trace-report-infinity.jsonl.gz", _mini_with(
        lambda e: e["type"] == "tool_result" and e.update(tool="trace_analysis", data={
            "kind": "trace_report", "files": ["x"], "ranks": [{"step_us": 1e309}]}) is None).replace("1e309", "Infinity"))
    _write("transcript", "bigint-and-floats.jsonl.gz", _mini_with(
        lambda e: e["type"] == "diagnosis_submitted" and e["diagnosis"].update(numbers=[
            {"name": "x", "value": 1e308, "unit": "s", "source": "y"}]) is None).replace(
        '"seq": 2,', '"seq": ' + "9" * 5000 + ","))


if __name__ == "__main__":
    seeds()
    reproductions()
    for d in sorted(CORPUS.iterdir()):
        files = sorted(d.iterdir())
        print(f"{d.name}: {len(files)} files, {sum(f.stat().st_size for f in files):,} bytes")
