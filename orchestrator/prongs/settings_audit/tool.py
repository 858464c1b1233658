"""Settings tools: `settings_audit` reads what the serving processes were given and lists every setting
that differs from its version's default; `setting_doc` looks up any setting of the stack by name."""

from __future__ import annotations

from pydantic import BaseModel, Field

from orchestrator.prongs.settings_audit.audit import audit_process
from orchestrator.knowledge import settings as kb
from orchestrator.prongs.settings_audit.probe import settings_report
from orchestrator.tools.base import Tool, ToolContext, ToolFailure, ToolOutput


class SettingsAuditInput(BaseModel):
    pass


class SettingsAuditTool(Tool):
    name = "settings_audit"
    on_host = True
    description = (
        "Read what each serving process on the host (vLLM, SGLang, TensorRT-LLM, TGI, llama.cpp, Ollama) was told to "
        "do: its command line, the environment variables whose names are known settings (nothing else of the "
        "environment is read), NCCL's configuration files (NCCL_CONF_FILE or ~/.nccl.conf, /etc/nccl.conf), the config "
        "files it names and the model's generation_config.json; list every setting "
        "that differs from the default of the detected version, with the default, where the value came from and the "
        "documented performance effect where one is known. Read-only."
    )
    Input = SettingsAuditInput

    async def run(self, args: SettingsAuditInput, ctx: ToolContext) -> ToolOutput:
        host = ctx.host()
        r = await settings_report(host)
        lines = [f"settings audit on {host.name}: {len(r.processes)} serving "
                 f"{'process' if len(r.processes) == 1 else 'processes'}"]
        if not r.available or not r.processes:
            lines.append(r.reason or "nothing found")
        for p in r.processes:
            a = audit_process(p)
            lines.append(f"- {a.label} pid {p.pid}: {len(a.nondefaults)} non-default "
                         f"{'setting' if len(a.nondefaults) == 1 else 'settings'}"
                         + ("" if p.version else " (version not detected: compared with the newest harvested "
                            "defaults)"))
            for nd in a.nondefaults:
                row = nd.row
                lines.append(f"    {row['setting']}={row['value']} (default {row['default']}"
                             f"{' in ' + str(row['default_version']) if row['default_version'] else ''}; "
                             f"{row['origin']})" + (f": {row['direction']}, {', '.join(row['symptoms'])}: "
                                                    f"{row['effect']}" if row["effect"] else ""))
            if a.unknown_flags:
                lines.append(f"    flags not in the knowledge base: {', '.join(a.unknown_flags[:20])}")
        return ToolOutput(text="\n".join(lines), data=r.model_dump(mode="json"), untrusted=True, host=host.name)


class SettingDocInput(BaseModel):
    name: str = Field(description="An environment variable (NCCL_P2P_DISABLE), a flag (--enforce-eager) or a field "
                                  "name (max_num_seqs)")
    project: str | None = Field(None, description="vllm, sglang, tgi, nccl, pytorch, cuda, transformers, ollama, "
                                                  "llamacpp, triton_trtllm; omit to search all")


class SettingDocTool(Tool):
    name = "setting_doc"
    acts = False  # a lookup in the shipped knowledge base
    description = ("Look up any documented setting of the serving stack by name: its project, kind, type, default "
                   "per version (so a changed default shows), help text, the versions it exists in, its source and "
                   "its documented performance effect.")
    Input = SettingDocInput

    async def run(self, args: SettingDocInput, ctx: ToolContext) -> ToolOutput:
        docs = kb.find(args.name, args.project)
        if not docs:
            raise ToolFailure(f"no setting named {args.name!r}" + (f" in {args.project}" if args.project else "")
                              + " in the settings knowledge base")
        lines = []
        for d in docs[:6]:
            eff = kb.effect_of(d)
            defaults = ", ".join(f"{v}: {val!r}" for v, val in d.defaults)
            lines.append(f"{d.label} {d.kind} {d.flag or d.name} ({d.type or 'untyped'}), versions {d.since}-{d.until}; "
                         f"default from version: {defaults}\n  {d.help}\n  source: {d.source} {d.url}"
                         + (f"\n  effect ({eff.direction}; {', '.join(eff.symptoms)}): {eff.effect} "
                            f"[{', '.join(eff.source)}]" if eff else ""))
        return ToolOutput(text="\n".join(lines), data={"settings": [d.model_dump() for d in docs[:6]]})
