"""What the request probe returns: the served model's files that decide what a request becomes inside the engine.

- `config.json`: the architecture (layers, heads, experts and how many each token uses), for the floors;
- `generation_config.json`: the stop tokens (`eos_token_id`) and defaults the engine applies to every request;
- `tokenizer_config.json`: the chat template and its special tokens (which token ends a turn), `eos_token`;
- `preprocessor_config.json`: how a multimodal model turns an image into tokens (`max_pixels`, patch and merge
  sizes).

Facts (`RequestFiles.facts()`): `model_files.count`, and for the first model found `model_files.path`,
`model_files.architecture`, `model_files.multimodal` (a vision config or a preprocessor config), `model_files.moe`
(experts), `model_files.eos_ids` (comma-separated, generation_config.json's, else config.json's),
`model_files.turn_end_tokens` (special tokens the chat template closes a turn with: `<|eot_id|>`, `<|im_end|>`,
`<end_of_turn>`, ...), `model_files.turn_end_missing` (true when one of them is not among the stop ids: generation runs
past the end of the answer), `model_files.turn_end_missing_tokens`, `model_files.image_max_pixels`,
`model_files.image_patch_size`, `model_files.image_merge_size`, `model_files.image_tokens_max` (tokens of the largest
image the processor keeps: max_pixels / (patch x merge)^2), `model_files.thinking_template` (the template has a
thinking switch: `enable_thinking`, `<think>`), `model_files.max_length` (generation_config.json's).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from orchestrator.probes.results import ProbeModel


class ModelFiles(BaseModel):
    ref: str
    """How the engine names the model (its path or hub id)."""
    path: str = ""
    """The directory the files were read from on the host."""
    config: dict[str, Any] = Field(default_factory=dict)
    """config.json, without large lists."""
    generation: dict[str, Any] = Field(default_factory=dict)
    eos_token: str | None = None
    """tokenizer_config.json's eos_token."""
    special_tokens: dict[str, str] = Field(default_factory=dict)
    """id -> content of the tokenizer's added special tokens (tokenizer_config.json's added_tokens_decoder)."""
    template_tokens: list[str] = Field(default_factory=list)
    """Special tokens the chat template uses."""
    template_thinking: bool = False
    template_chars: int = 0
    preprocessor: dict[str, Any] = Field(default_factory=dict)
    errors: list[str] = Field(default_factory=list)


_TURN_END = ("eot", "im_end", "end_of_turn", "end_of_message", "endoftext", "|end|", "eom", "<|end", "</s>",
             "end_of_text", "return")


def turn_end_tokens(m: ModelFiles) -> dict[str, str]:
    """id -> content of the special tokens the chat template ends a turn with (in the template and named like an end
    marker), other than the beginning-of-text or role-header tokens."""
    out: dict[str, str] = {}
    for tid, content in m.special_tokens.items():
        low = content.lower()
        if content in m.template_tokens and any(k in low for k in _TURN_END) and "header" not in low and \
                "start" not in low:
            out[tid] = content
    return out


def eos_ids(m: ModelFiles) -> list[int]:
    for src in (m.generation, m.config):
        x = src.get("eos_token_id")
        if isinstance(x, int) and not isinstance(x, bool):
            return [x]
        if isinstance(x, list):
            return [i for i in x if isinstance(i, int) and not isinstance(i, bool)]
    return []


class ServerModel(BaseModel):
    """One model of an inference server's per-model counters (Triton's nv_inference_*), per request or execution."""

    name: str
    requests: float = 0.0
    executions: float = 0.0
    request_ms: float | None = None
    """Mean time from a request's arrival to its last response (nv_inference_request_duration_us / success)."""
    queue_ms: float | None = None
    compute_ms: float | None = None
    """Mean compute time per execution (nv_inference_compute_infer_duration_us / exec count)."""
    pending: float | None = None
    llm: bool = False
    """The model that runs the LLM (TensorRT-LLM's or vLLM's backend: it reports nv_trt_llm_* or is named so)."""


class ServerMetrics(BaseModel):
    kind: str
    pid: int | None = None
    url: str | None = None
    status: int | None = None
    error: str | None = None
    models: list[ServerModel] = Field(default_factory=list)


class MigDevice(BaseModel):
    profile: str
    """`3g.40gb`: compute slices (of 7) and memory (of the GPU's)."""
    uuid: str = ""


class RequestFiles(ProbeModel):
    kind: Literal["request_files"] = "request_files"
    models: list[ModelFiles] = Field(default_factory=list)
    looked: list[str] = Field(default_factory=list)
    """Model references looked up, found or not."""
    refused: dict[str, str] = Field(default_factory=dict)
    """Model references whose files were not read, and why (no process that names them could read them, or none
    runs to name them and the probe is root's)."""
    servers: list[ServerMetrics] = Field(default_factory=list)
    """Inference servers' per-model counters (Triton), parsed from their /metrics."""
    mig: list[MigDevice] = Field(default_factory=list)
    """The host's MIG devices (`nvidia-smi -L`), read where an engine runs on one."""

    def facts(self) -> dict[str, str | int | float | bool]:
        out: dict[str, str | int | float | bool] = {"model_files.count": len(self.models)}
        for srv in self.servers[:1]:
            for sm in srv.models:
                key = f"server.{srv.kind}.model.{sm.name}"
                for attr in ("requests", "executions", "request_ms", "queue_ms", "compute_ms", "pending"):
                    val = getattr(sm, attr)
                    if val is not None:
                        out[f"{key}.{attr}"] = val
        if not self.models:
            return out
        m = self.models[0]
        out["model_files.path"] = m.path
        c = m.config
        arch = c.get("architectures")
        if isinstance(arch, list) and arch:
            out["model_files.architecture"] = str(arch[0])
        out["model_files.multimodal"] = bool(m.preprocessor) or any(
            k in c for k in ("vision_config", "visual", "vision_tower", "mm_vision_tower"))
        tc = c.get("text_config")
        text: dict[str, Any] = tc if isinstance(tc, dict) else c
        experts = next((text.get(k) for k in ("num_local_experts", "num_experts", "n_routed_experts")
                        if isinstance(text.get(k), int)), None)
        out["model_files.moe"] = bool(experts and experts > 1)
        ids = eos_ids(m)
        if ids:
            out["model_files.eos_ids"] = ",".join(str(i) for i in ids)
        ends = turn_end_tokens(m)
        if ends:
            out["model_files.turn_end_tokens"] = ",".join(f"{v} ({k})" for k, v in sorted(ends.items()))
            missing = {k: v for k, v in ends.items() if k.isdigit() and int(k) not in ids}
            if ids:
                out["model_files.turn_end_missing"] = bool(missing)
                if missing:
                    out["model_files.turn_end_missing_tokens"] = ",".join(f"{v} ({k})" for k, v in
                                                                          sorted(missing.items()))
        if m.eos_token:
            out["model_files.eos_token"] = m.eos_token
        out["model_files.thinking_template"] = m.template_thinking
        ml = m.generation.get("max_length")
        if isinstance(ml, int):
            out["model_files.max_length"] = ml
        p = m.preprocessor
        mp = p.get("max_pixels")
        if mp is None and isinstance(p.get("size"), dict):
            mp = p["size"].get("max_pixels")
        patch = p.get("patch_size")
        merge = p.get("merge_size")
        if isinstance(mp, (int, float)):
            out["model_files.image_max_pixels"] = mp
            if isinstance(patch, int) and patch > 0:
                side = patch * (merge if isinstance(merge, int) and merge > 0 else 1)
                out["model_files.image_tokens_max"] = int(mp // (side * side))
        if isinstance(patch, int):
            out["model_files.image_patch_size"] = patch
        if isinstance(merge, int):
            out["model_files.image_merge_size"] = merge
        return out
