"""The attention shape of well-known open models by name, for the decode floor's KV reads when neither the model's
config.json nor the observations give it (a repository id on the engine's command line, a GGUF name in Ollama).

Each row: a pattern of the family's names, its sizes in billions of parameters (as the names write them) with the
layer count, KV heads and head dimension of each, and the config.json it is read from. Pure data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from orchestrator.prongs.serving_engine.kv_fit import KvShape


@dataclass(frozen=True)
class Family:
    pattern: str
    sizes: dict[str, tuple[int, int, int]]
    """Size as the name writes it ("8", "70", "1.5") -> (layers, KV heads, head dim)."""
    source: str


FAMILIES: tuple[Family, ...] = (
    Family(r"llama-?3(\.[0-3])?\b|llama3(\.[0-3])?\b", {
        "1": (16, 8, 64), "3": (28, 8, 128), "8": (32, 8, 128), "70": (80, 8, 128), "405": (126, 8, 128)},
        "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/blob/main/config.json"),
    Family(r"llama-?2\b|llama2\b", {"7": (32, 32, 128), "13": (40, 40, 128), "70": (80, 8, 128)},
           "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json"),
    Family(r"mistral-7b", {"7": (32, 8, 128)},
           "https://huggingface.co/mistralai/Mistral-7B-Instruct-v0.3/blob/main/config.json"),
    Family(r"mixtral-8x7b", {"7": (32, 8, 128)},
           "https://huggingface.co/mistralai/Mixtral-8x7B-Instruct-v0.1/blob/main/config.json"),
    Family(r"qwen-?2\.5", {"0.5": (24, 2, 64), "1.5": (28, 2, 128), "3": (36, 2, 128), "7": (28, 4, 128),
                           "14": (48, 8, 128), "32": (64, 8, 128), "72": (80, 8, 128)},
           "https://huggingface.co/Qwen/Qwen2.5-7B-Instruct/blob/main/config.json"),
    Family(r"qwen-?3-30b-a3b", {"30": (48, 4, 128)},
           "https://huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json"),
    Family(r"qwen-?3\b(?!.*-a\d+b)", {"8": (36, 8, 128), "14": (40, 8, 128), "32": (64, 8, 128)},
           "https://huggingface.co/Qwen/Qwen3-8B/blob/main/config.json"),
    Family(r"gemma-?2\b", {"9": (42, 8, 256), "27": (46, 16, 128)},
           "https://huggingface.co/google/gemma-2-9b-it/blob/main/config.json"),
)

_SIZE = re.compile(r"(?<![\d.x])(\d+(?:\.\d+)?)\s*b\b", re.IGNORECASE)


def known_kv(name: str | None) -> KvShape | None:
    """The attention shape of a model named like a well-known one (its family and its size), or None."""
    if not name:
        return None
    low = name.lower().replace("_", "-")
    for fam in FAMILIES:
        if not re.search(fam.pattern, low):
            continue
        for m in _SIZE.finditer(low):
            got = fam.sizes.get(m.group(1))
            if got is not None:
                layers, kv, head_dim = got
                return KvShape(layers, kv, head_dim, 0, f"the attention shape of {name} ({fam.source})")
    return None
