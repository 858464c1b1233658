# Small extract in the format of tensorrt_llm/commands/serve.py
import gc
import os

import click


@click.command("serve")
@click.option("--max_batch_size", type=int, default=2048, help="Maximum number of requests that the engine can schedule.")
@click.option("--kv_cache_free_gpu_memory_fraction", type=float, default=0.9, help="Free GPU memory fraction reserved for KV Cache.")
@click.option("--enable_chunked_prefill", is_flag=True, help="Enable chunked prefill")
def serve(max_batch_size, kv_cache_free_gpu_memory_fraction, enable_chunked_prefill):
    pass


def launch_server():
    # Optionally disable GC (default: not disabled)
    if os.getenv("TRTLLM_SERVER_DISABLE_GC", "0") == "1":
        gc.disable()
