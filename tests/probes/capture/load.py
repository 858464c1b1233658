"""Keep GPU 0 busy with bf16 matmuls for argv[1] seconds (so the power sampler sees load)."""
import sys
import time

import torch

a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
