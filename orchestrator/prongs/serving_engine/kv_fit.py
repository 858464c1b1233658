"""KV-cache arithmetic: bytes per token from the model's attention shape, and how many sequences a KV pool holds.

Per token and layer the cache keeps a K and a V vector for each KV head: 2 x num_key_value_heads x head_dim elements
(GQA/MQA share KV heads between query heads; without `num_key_value_heads` every attention head has its own). MLA
models (DeepSeek-V2/V3, Kimi-K2) keep one compressed latent instead: kv_lora_rank + qk_rope_head_dim elements per token
and layer (vLLM's MLA backends cache exactly this, vllm/attention/backends/mla/common.py; SGLang's MLATokenToKVPool,
python/sglang/srt/mem_cache/memory_pool.py). Under tensor parallelism each GPU keeps its share of the KV heads, at
least one (heads are replicated when TP exceeds them: vllm/config/model.py get_num_kv_heads); MLA's latent is not split
over heads, so every TP rank keeps all of it. Pipeline parallelism splits the layers. Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

FP8_KV = ("fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla")
"""vLLM --kv-cache-dtype / SGLang --kv-cache-dtype values that store one byte per element."""


@dataclass(frozen=True)
class KvShape:
    layers: int
    kv_heads: int
    """KV heads (0 for MLA)."""
    head_dim: int
    latent: int = 0
    """MLA: kv_lora_rank + qk_rope_head_dim elements per token and layer (0 otherwise)."""
    source: str = ""

    def elements_per_token(self, tp: int = 1, pp: int = 1) -> float:
        """KV elements one token keeps on one GPU at TP x PP."""
        layers = self.layers / max(pp, 1)
        if self.latent:
            return layers * self.latent
        heads = max(1, math.ceil(self.kv_heads / max(tp, 1)))
        return 2 * layers * heads * self.head_dim

    def bytes_per_token(self, bpe: float, tp: int = 1, pp: int = 1) -> float:
        return self.elements_per_token(tp, pp) * bpe

    def formula(self, bpe: float, tp: int = 1, pp: int = 1) -> str:
        """The arithmetic, in words, for one token on one GPU."""
        layers = f"{self.layers} layers" + (f" / PP{pp}" if pp > 1 else "")
        if self.latent:
            return (f"{layers} x {self.latent} (MLA latent: kv_lora_rank + qk_rope_head_dim) x {bpe:g} bytes"
                    + (f", the same on each of TP{tp}'s GPUs" if tp > 1 else ""))
        heads = max(1, math.ceil(self.kv_heads / max(tp, 1)))
        per = f"{heads} of {self.kv_heads} KV heads" if tp > 1 else f"{self.kv_heads} KV heads"
        return f"2 (K and V) x {layers} x {per} x head_dim {self.head_dim} x {bpe:g} bytes"


def text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """The language model's part of a Hugging Face config.json: its `text_config` for a multimodal model, else itself."""
    t = cfg.get("text_config")
    return t if isinstance(t, dict) else cfg


def config_int(c: dict[str, Any], *keys: str) -> int | None:
    """The first of `keys` that holds a positive integer (not a bool), or None."""
    for k in keys:
        x = c.get(k)
        if isinstance(x, int) and not isinstance(x, bool) and x > 0:
            return x
    return None


def kv_shape(cfg: dict[str, Any], source: str) -> KvShape | None:
    """From a Hugging Face config.json (its `text_config` for multimodal models) or the observations' model block.
    None when the layer count or the attention shape is missing."""
    c = text_config(cfg)

    def num(*keys: str) -> int | None:
        return config_int(c, *keys)

    layers = num("num_hidden_layers", "num_layers", "n_layer")
    if not layers:
        return None
    rank, rope = num("kv_lora_rank"), num("qk_rope_head_dim")
    if rank:
        return KvShape(layers, 0, 0, rank + (rope or 0), source)
    heads = num("num_attention_heads", "n_head")
    kv = num("num_key_value_heads", "num_kv_heads") or heads
    hidden = num("hidden_size")
    head_dim = num("head_dim") or (hidden // heads if heads and hidden else None)
    if not kv or not head_dim:
        return None
    return KvShape(layers, kv, head_dim, 0, source)


def kv_bytes_per_element(kv_dtype: str | None, model_dtype_bytes: float = 2.0) -> tuple[float, str]:
    """(bytes, dtype named) of one cached element: FP8 caches one byte; `auto`, absent or BF16/FP16: the model's
    activation dtype (two bytes; FP32 four)."""
    d = (kv_dtype or "auto").strip().lower()
    if d in FP8_KV or d.startswith("fp8"):
        return 1.0, d
    if d in ("float32", "fp32"):
        return 4.0, d
    if d in ("auto", ""):
        return model_dtype_bytes, "auto (the model's dtype)"
    return 2.0, d


def sequences(kv_tokens: float, tokens_per_sequence: float) -> float:
    """How many sequences of that many tokens a pool of kv_tokens holds at once."""
    return kv_tokens / tokens_per_sequence if tokens_per_sequence > 0 else float("inf")
