"""NCCL's configuration files as NCCL reads them (src/misc/param.cc at NVIDIA/nccl: initEnvFunc reads
$NCCL_CONF_FILE, else ~/.nccl.conf of getpwuid(getuid()), then /etc/nccl.conf; setEnvFile sets each `KEY=VALUE` line
with setenv(key, value, 0), src/os/linux.cc): the environment wins over every file, the first file over the later
one, a `#` line or a line without `=` is skipped, nothing is trimmed. The settings probe's reading of them on real
files, and the audit's origin of each setting."""

from __future__ import annotations

import json
import os
import pwd

from orchestrator.knowledge import settings as kb
from orchestrator.probes import scripts
from orchestrator.prongs.settings_audit.audit import audit_process
from orchestrator.prongs.settings_audit.models import ProcessSettings, SettingsFile


def _probe(root) -> dict:
    src = scripts.load("settings").rsplit("\nmain()", 1)[0]
    ns: dict = {"__name__": "probe"}
    exec(compile(src, "<settings>", "exec"), ns)
    ns["ROOT"] = str(root)
    return ns


def test_the_files_are_read_in_nccls_order_and_the_environment_wins(tmp_path):
    home = pwd.getpwuid(os.getuid()).pw_dir  # the passwd entry's home, not $HOME
    (tmp_path / home.lstrip("/")).mkdir(parents=True)
    (tmp_path / home.lstrip("/") / ".nccl.conf").write_text(
        "NCCL_ALGO=Tree\nNCCL_P2P_DISABLE=1\n#NCCL_IB_DISABLE=1\nNCCL_PROTO=LL\n")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "nccl.conf").write_bytes(
        b"NCCL_P2P_DISABLE=0\nNCCL_SHM_DISABLE=1\nnot a setting\n NCCL_P2P_LEVEL = NVL\nNCCL_IB_HCA=mlx5_0=x\n"
        b"NCCL_SOCKET_IFNAME=hf_abcdefghijklmnop\nNCCL_DEBUG=\n")
    ns = _probe(tmp_path)
    creds = ns["proc_creds"](os.getpid())
    got = ns["nccl_conf_files"](os.getpid(), {"NCCL_ALGO": "Ring", "PATH": "/bin"}, str(tmp_path), creds, 65536,
                                set(kb.env_names()))
    home_conf = os.path.join(home, ".nccl.conf")
    assert list(got) == [home_conf, "/etc/nccl.conf"]
    assert json.loads(got[home_conf]["text"]) == {"NCCL_P2P_DISABLE": "1", "NCCL_PROTO": "LL"}
    assert got[home_conf]["overridden"] == ["NCCL_ALGO"]
    # " NCCL_P2P_LEVEL " (spaces kept, as NCCL keeps them) is no variable NCCL reads; a secret-looking value, and an
    # empty one (NCCL's default), stay on the host
    assert json.loads(got["/etc/nccl.conf"]["text"]) == {"NCCL_SHM_DISABLE": "1", "NCCL_IB_HCA": "mlx5_0=x"}
    assert got["/etc/nccl.conf"]["overridden"] == ["NCCL_P2P_DISABLE"] and got["/etc/nccl.conf"]["dropped"] == 3
    assert "hf_abcdefghijklmnop" not in json.dumps(got)


def test_nccl_conf_file_replaces_the_home_file_and_is_relative_to_the_process(tmp_path):
    (tmp_path / "mine.conf").write_text("NCCL_MIN_NCHANNELS=4\n")
    ns = _probe(tmp_path)
    got = ns["nccl_conf_files"](os.getpid(), {"NCCL_CONF_FILE": "mine.conf"}, str(tmp_path),
                                ns["proc_creds"](os.getpid()), 65536, set(kb.env_names()))
    assert list(got) == ["mine.conf"]  # no ~/.nccl.conf, no /etc/nccl.conf under this root
    assert json.loads(got["mine.conf"]["text"]) == {"NCCL_MIN_NCHANNELS": "4"}


def test_the_system_file_named_as_nccl_conf_file_is_one_file_and_a_relative_name_needs_the_cwd(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "nccl.conf").write_text("NCCL_P2P_DISABLE=1\n")
    ns = _probe(tmp_path)
    creds = ns["proc_creds"](os.getpid())
    got = ns["nccl_conf_files"](os.getpid(), {"NCCL_CONF_FILE": str(tmp_path / "etc" / "nccl.conf")}, None, creds,
                                65536, set(kb.env_names()))
    assert [json.loads(f["text"]) for f in got.values()] == [{"NCCL_P2P_DISABLE": "1"}]  # not overridden by itself
    got = ns["nccl_conf_files"](os.getpid(), {"NCCL_CONF_FILE": "rel.conf"}, None, creds, 65536, set(kb.env_names()))
    assert "working directory" in got["rel.conf"]["error"]


def test_the_audit_names_the_file_a_setting_came_from():
    p = ProcessSettings(pid=7, engine="vllm", version="0.11.0", env={"NCCL_ALGO": "Ring"}, files={
        "/etc/nccl.conf": SettingsFile(text=json.dumps({"NCCL_P2P_DISABLE": "1"}), role="nccl.conf")})
    rows = {nd.name: nd for nd in audit_process(p).nondefaults}
    assert rows["NCCL_P2P_DISABLE"].origin == "NCCL config file /etc/nccl.conf"
    assert rows["NCCL_P2P_DISABLE"].effect is not None and rows["NCCL_ALGO"].origin == "env"


def test_a_variable_an_nccl_conf_sets_is_a_fact_of_the_environment_for_the_catalog():
    """NCCL puts a file's values into its process's environment (setenv without overwrite): a catalog entry on
    `env.NCCL_P2P_DISABLE` holds for /etc/nccl.conf's too, and the first process's value is the one kept."""
    from orchestrator.prongs.settings_audit.models import SettingsReport

    conf = SettingsFile(role="nccl.conf", text=json.dumps({"NCCL_P2P_DISABLE": "1"}))
    other = SettingsFile(role="nccl.conf", text=json.dumps({"NCCL_P2P_DISABLE": "0", "NCCL_IB_DISABLE": "1"}))
    cfg = SettingsFile(role="--config", text=json.dumps({"max_num_seqs": 8}))
    report = SettingsReport(host="h", processes=[
        ProcessSettings(pid=1, engine="vllm", files={"/etc/nccl.conf": conf, "/x.yaml": cfg}),
        ProcessSettings(pid=2, engine="vllm", files={"/home/u/.nccl.conf": other})])
    assert report.facts() == {"env.NCCL_P2P_DISABLE": "1", "env.NCCL_IB_DISABLE": "1"}
