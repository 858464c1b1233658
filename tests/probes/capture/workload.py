"""Make real Triton, Inductor and TunableOp autotune results on a GPU (run by capture.sh, not by pytest).

Environment (set by capture.sh): TRITON_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR, PYTORCH_TUNABLEOP_ENABLED=1,
PYTORCH_TUNABLEOP_FILENAME.
"""
import json
import sys
import time

import torch
import triton
import triton.language as tl

report = {"torch": torch.__version__, "triton": triton.__version__, "steps": {}}


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (128, 256, 512) for w in (2, 4)],
    key=["n"],
    cache_results=True,
)
@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def step(name, fn):
    t = time.time()
    try:
        fn()
        report["steps"][name] = {"ok": True, "s": round(time.time() - t, 2)}
    except Exception as exc:  # keep going: every other capture is still worth having
        report["steps"][name] = {"ok": False, "error": "%s: %s" % (type(exc).__name__, str(exc)[:300])}


def triton_add():
    n = 1 << 20
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    add[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    torch.cuda.synchronize()
    assert torch.allclose(out, x + y)


def inductor():
    def f(x, w):
        return torch.softmax(x @ w, dim=-1) * torch.sigmoid(x.sum(-1, keepdim=True))

    g = torch.compile(f)
    x = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(1024, 4096, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        g(x, w)
    torch.cuda.synchronize()


def tunableop():
    torch.cuda.tunable.enable(True)
    a = torch.randn(1024, 2048, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(2048, 4096, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    torch.cuda.tunable.write_file()
    report["tunableop_filename"] = torch.cuda.tunable.get_filename()


step("triton_autotune", triton_add)
step("inductor", inductor)
step("tunableop", tunableop)
json.dump(report, sys.stdout)
