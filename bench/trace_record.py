"""Record torch.profiler traces of a small random-weight Llama on one GPU (decode/prefill, graphs off/on, planted problems)."""
import gzip, json, os, shutil, time, traceback
import torch
from torch.profiler import profile, ProfilerActivity, record_function

OUT = os.environ.get("OUT", "/tmp/out")
os.makedirs(OUT, exist_ok=True)
from transformers import LlamaConfig, LlamaForCausalLM

cfg = LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=8, num_attention_heads=16,
                  num_key_value_heads=4, vocab_size=32000, max_position_embeddings=4096)
torch.manual_seed(0)
model = LlamaForCausalLM(cfg).to(device="cuda", dtype=torch.bfloat16).eval()
meta = {"config": cfg.to_dict(), "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "runs": {}}
import transformers; meta["transformers"] = transformers.__version__

NCCL = None
try:
    import torch.distributed as dist
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29533", world_size=1, rank=0)
    x = torch.ones(4, device="cuda"); dist.all_reduce(x); torch.cuda.synchronize(); NCCL = dist
except Exception as e:
    meta["nccl_error"] = repr(e)

def save(prof, name, gt):
    path = os.path.join(OUT, name + ".json")
    prof.export_chrome_trace(path)
    with open(path, "rb") as f, gzip.open(path + ".gz", "wb", compresslevel=6) as g:
        shutil.copyfileobj(f, g)
    meta["runs"][name] = dict(gt, raw_bytes=os.path.getsize(path), gz_bytes=os.path.getsize(path + ".gz"))
    os.remove(path)

B_DEC, CTX = 32, 256
B_PRE, S_PRE = 4, 1024
STEPS = 12

def decode_setup():
    ids = torch.randint(0, 32000, (B_DEC, CTX), device="cuda")
    with torch.no_grad():
        out = model(ids, use_cache=True)
    return out.past_key_values

def run(name, step_fn, steps=STEPS, with_stack=False, record_shapes=True, extra=None):
    try:
        gt = {"step_wall_ms": [], "planted_ms": []}
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=record_shapes,
                     with_stack=with_stack, schedule=torch.profiler.schedule(wait=0, warmup=0, active=steps + 1)) as prof:
            for i in range(steps):
                t0 = time.perf_counter()
                planted = step_fn(i)
                gt["step_wall_ms"].append((time.perf_counter() - t0) * 1e3)
                gt["planted_ms"].append(planted or 0.0)
                prof.step()
            torch.cuda.synchronize()
        if extra: gt.update(extra)
        save(prof, name, gt)
    except Exception:
        meta["runs"][name] = {"error": traceback.format_exc()}

# --- decode eager (with_stack like vLLM's default)
pkv = None
def dec_eager(i, sync=False, sleep_s=0.0, coll=False):
    global pkv
    planted = 0.0
    tok = torch.randint(0, 32000, (B_DEC, 1), device="cuda")
    if sleep_s:
        t = time.perf_counter()
        with record_function("planted_host_sleep"):
            time.sleep(sleep_s)
        planted += (time.perf_counter() - t) * 1e3
    with torch.no_grad():
        model(tok, past_key_values=pkv, use_cache=True)
    if sync:
        t = time.perf_counter(); torch.cuda.synchronize(); planted += (time.perf_counter() - t) * 1e3
    return planted

with torch.no_grad():
    pkv = decode_setup()
run("decode_eager", lambda i: dec_eager(i), with_stack=True)
pkv = decode_setup()
run("decode_eager_sync", lambda i: dec_eager(i, sync=True))
pkv = decode_setup()
run("decode_eager_sleep", lambda i: dec_eager(i, sleep_s=0.004))

# --- prefill eager, with a per-layer serialized "collective" (real NCCL all_reduce world_size=1 + blocking D2H copy)
ids_pre = torch.randint(0, 32000, (B_PRE, S_PRE), device="cuda")
def pre_eager(i):
    with torch.no_grad():
        model(ids_pre, use_cache=False)
run("prefill_eager", pre_eager)

hooks = []
coll_ms = []
def coll_hook(mod, inp, out):
    h = out[0] if isinstance(out, tuple) else out
    with record_function("planted_serialized_collective"):
        if NCCL is not None:
            NCCL.all_reduce(h)
        # blocking device->host copy into pageable memory and back: a sync standing for a serialized exchange
        c = h[:, :64].to("cpu")
        h[:, :64].copy_(c.to("cuda"))
    return out
for layer in model.model.layers:
    hooks.append(layer.self_attn.register_forward_hook(coll_hook))
run("prefill_eager_collective", pre_eager)
for h in hooks: h.remove()

# --- CUDA graphs: decode (static cache) and prefill, captured outside the profiler
def graph_of(fn, warm=3):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warm): fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    return g, out

try:
    from transformers import StaticCache
    try:
        sc = StaticCache(config=cfg, max_batch_size=B_DEC, max_cache_len=CTX + 64, device="cuda", dtype=torch.bfloat16)
    except TypeError:
        sc = StaticCache(config=cfg, max_cache_len=CTX + 64)
    tok = torch.randint(0, 32000, (B_DEC, 1), device="cuda")
    pos = torch.tensor([CTX], device="cuda")
    def dec_fn():
        with torch.no_grad():
            return model(tok, past_key_values=sc, cache_position=pos, use_cache=True).logits
    holder = {}
    def cap_step(i):
        if i == 0:
            holder["g"], _ = graph_of(dec_fn)
        holder["g"].replay()
    run("decode_graph_capture", cap_step)
except Exception:
    meta["runs"]["decode_graph"] = {"error": traceback.format_exc()}
    try:
        tok = torch.randint(0, 32000, (B_DEC, 64), device="cuda")
        def dec_fn2():
            with torch.no_grad():
                return model(tok, use_cache=False).logits
        g_dec, _ = graph_of(dec_fn2)
        run("decode_graph_nocache", lambda i: g_dec.replay())
    except Exception:
        meta["runs"]["decode_graph_nocache"] = {"error": traceback.format_exc()}

try:
    g_pre, _ = graph_of(lambda: model(ids_pre, use_cache=False).logits if torch.no_grad().__enter__() is None else None)
    run("prefill_graph", lambda i: g_pre.replay())
except Exception:
    meta["runs"]["prefill_graph"] = {"error": traceback.format_exc()}

with open(os.path.join(OUT, "meta.json"), "w") as f:
    json.dump(meta, f, indent=1)
print(json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "step_wall_ms"} for k, v in meta["runs"].items()}, indent=1)[:6000])
