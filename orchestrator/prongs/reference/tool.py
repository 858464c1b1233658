"""Tool `reference_throughput`: the published figures nearest to the user's setup (a lookup in the shipped dataset)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from orchestrator import knowledge
from orchestrator.prongs.reference.rules import Setup, match, precision_of, rows_table
from orchestrator.tools.base import Tool, ToolContext, ToolFailure, ToolOutput


class ReferenceInput(BaseModel):
    gpu: str = Field(description="GPU name (nvidia-smi's or a short one: H200, B200)")
    model: str = Field(description="model name or Hugging Face id, e.g. meta-llama/Llama-3.3-70B-Instruct")
    dtype: str | None = Field(None, description="precision: fp4, nvfp4, fp8, bf16")
    isl: int | None = Field(None, ge=1, description="input tokens per request")
    osl: int | None = Field(None, ge=1, description="output tokens per request")
    concurrency: int | None = Field(None, ge=1, description="client concurrency of the user's run")


class ReferenceThroughput(Tool):
    name = "reference_throughput"
    acts = False  # a lookup in the shipped dataset
    description = ("Published output tok/s per GPU (TensorRT-LLM perf overview, MLPerf Inference) nearest to a GPU, "
                   "model and precision, each row with its differences from the setup, its method and its source.")
    Input = ReferenceInput

    async def run(self, args: ReferenceInput, ctx: ToolContext) -> ToolOutput:
        spec = knowledge.gpu_spec(args.gpu)
        if spec is None:
            raise ToolFailure(f"unknown GPU {args.gpu!r}; closest: {', '.join(knowledge.closest_gpu_names(args.gpu))}")
        lookup = match(Setup(gpu=spec.name, model=args.model, precision=precision_of(args.dtype), isl=args.isl,
                             osl=args.osl, concurrency=args.concurrency), n=5)
        rows = rows_table(lookup)
        if not rows:
            text = f"{spec.name} / {args.model}: {lookup.why_none}."
        else:
            text = "\n".join(f"{r['output_tok_s_per_gpu']:,.0f} tok/s/GPU, {r.get('precision') or 'precision unstated'}, "
                             f"{r.get('parallel') or r['gpu_count']}, ISL/OSL {r.get('isl') or '?'}/{r.get('osl') or '?'}"
                             f", {r['scenario']}, {r['engine']}; differs: {'; '.join(r['differences']) or 'nothing'}; "
                             f"source {r['source_url']}" for r in rows)
        return ToolOutput(text=text, data={"kind": "reference_throughput", "gpu": spec.name, "model_id": lookup.model_id,
                                           "rows": rows, "why_none": lookup.why_none})
