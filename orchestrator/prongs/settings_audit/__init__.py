"""Settings audit: what the serving processes were told to do (command lines, config files, known environment
variables) against their version's documented defaults (`knowledge/settings/`), and two runs or logs compared
before and after. Its tools are called by the serving-engine agent; it has no agent of its own."""

from orchestrator.prong import Prong

PRONG = Prong(
    name="settings_audit",
    tools=("orchestrator.prongs.settings_audit.tool:SettingsAuditTool",
           "orchestrator.prongs.settings_audit.tool:SettingDocTool"),
    probe_models=("orchestrator.prongs.settings_audit.models:SettingsReport",),
    rules=("orchestrator.prongs.settings_audit.rules:settings_rule",),
    html="orchestrator.prongs.settings_audit.report:settings_html",
    markdown="orchestrator.prongs.settings_audit.report:settings_markdown",
    terminal="orchestrator.prongs.settings_audit.report:render_settings_terminal",
)
