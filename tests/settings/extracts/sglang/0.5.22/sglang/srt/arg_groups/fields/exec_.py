# Small extract in the format of sglang/srt/arg_groups/fields/exec_.py
import msgspec
from sglang.srt.arg_groups.arg_utils import A, Arg


class Exec(msgspec.Struct):
    disable_cuda_graph: A[bool, "Disable cuda graph."] = False
    tp_size: A[int, Arg(help="The tensor parallelism size.", aliases=["--tp", "--tensor-parallel-size"])] = 1
    enable_deterministic_inference: A[bool, "Enable deterministic inference mode with batch invariant ops."] = False
