"""One masker of command lines and values on the host (the prelude's mask_argv, SECRET_VALUE), used by every probe
that returns a process's command line or environment (engine, settings, discover, node): argparse abbreviations of
secret options (`--api-k`), other programs' password options (`redis-cli -a`, openssl's `pass:`, `mysql -pX`), and a
URL whose userinfo is a bare token (`https://TOKEN@proxy`) are masked before anything leaves the host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from orchestrator.hosts.ssh import SshHost
from orchestrator.probes import scripts
from orchestrator.prongs.serving_engine.probe import collect_engine_report
from orchestrator.probes.interpreter import discover
from orchestrator.prongs.node_health.probe import collect_node_health
from orchestrator.prongs.settings_audit.probe import collect_settings
from orchestrator.settings import Settings
from security_corpus import HOST_ARGV_SAMPLES, HOST_ENV_SAMPLES

M = "<redacted on host>"


def _ns(*parts: str) -> dict:
    ns: dict = {"__name__": "probe"}
    exec(compile("\n".join(parts), "<prelude>", "exec"), ns)
    return ns


PRELUDE = _ns(scripts.prelude(), scripts.environ())


@pytest.mark.parametrize("argv, want", [
    (["vllm", "serve", "m", "--api-k", "S1"], ["vllm", "serve", "m", "--api-k", M]),  # argparse takes a prefix
    (["vllm", "serve", "m", "--api-ke=S2"], ["vllm", "serve", "m", "--api-ke=" + M]),
    (["x", "--hf-tok", "S3", "--admin-api-k", "S4"], ["x", "--hf-tok", M, "--admin-api-k", M]),
    (["x", "--api-key", "S5", "--db-password=S6"], ["x", "--api-key", M, "--db-password=" + M]),
    (["openssl", "rsa", "-in", "k.pem", "-passin", "pass:S7"], ["openssl", "rsa", "-in", "k.pem", "-passin", "pass:" + M]),
    (["redis-cli", "-h", "cache", "-a", "S8", "ping"], ["redis-cli", "-h", "cache", "-a", M, "ping"]),
    (["/usr/bin/mysql", "-u", "root", "-pS9", "db"], ["/usr/bin/mysql", "-u", "root", "-p" + M, "db"]),
    (["sshpass", "-p", "S10", "ssh", "h"], ["sshpass", "-p", M, "ssh", "h"]),
    (["env", "HF_TOKEN=S11", "DB_PASS=S12", "vllm"], ["env", "HF_TOKEN=" + M, "DB_PASS=" + M, "vllm"]),
    (["x", "--endpoint", "https://BareTok13@api.internal/v1"], ["x", "--endpoint", M]),
    (["x", "--endpoint=https://BareTok14@api.internal/v1"], ["x", "--endpoint=" + M]),
    (["x", "--proxy", "http://u:S15@proxy:3128"], ["x", "--proxy", M]),
])
def test_secrets_in_a_command_line_are_masked_on_the_host(argv, want):
    assert PRELUDE["mask_argv"](argv) == want


@pytest.mark.parametrize("shape, argv, secret", HOST_ARGV_SAMPLES, ids=[s[0] for s in HOST_ARGV_SAMPLES])
def test_the_corpus_command_lines_leave_no_secret(shape, argv, secret):
    masked = PRELUDE["mask_argv"](argv)
    assert secret not in " ".join(masked) and len(masked) == len(argv), masked


@pytest.mark.parametrize("shape, name, value, secret", HOST_ENV_SAMPLES, ids=[s[1] for s in HOST_ENV_SAMPLES])
def test_the_corpus_environment_values_stay_on_the_host(shape, name, value, secret):
    settings = _ns(scripts.load("settings").rsplit("\nmain()", 1)[0])
    assert not PRELUDE["keep_env"](name, value) and not settings["keep"](name, value, {name})


def test_ordinary_settings_keep_their_values():
    argv = ["vllm", "serve", "m", "--top-k", "50", "--min-p", "0.1", "--typical-p", "0.9", "--cache-type-k", "q8_0",
            "--tokenizer", "t", "--port", "8000", "--max-num-batched-tokens", "8192", "--kv-cache-dtype", "fp8",
            "-a", "x", "-p", "8000", "git+https://github.com/org/repo@v1.0", "--model=/models/x", "--tp", "8"]
    assert PRELUDE["mask_argv"](argv) == argv


@pytest.mark.parametrize("value", ["http://ProxyTok@proxy:3128", "https://RteamBareToken0007@api.internal/v1",
                                   "s3://AKEY:SKEY@bucket", "https://u:p@h/x"])
def test_any_userinfo_in_a_url_value_keeps_the_variable_on_the_host(value):
    assert not PRELUDE["keep_env"]("VLLM_ENDPOINT", value)
    assert PRELUDE["keep_env"]("VLLM_ENDPOINT", "https://api.internal/v1")


def test_only_the_prelude_holds_the_secret_patterns_and_the_masker():
    for name in ("engine", "settings", "discover", "node", "account", "_environ"):
        own = scripts._read(name)
        for needle in ("SECRET_FLAG = ", "SECRET_VALUE = ", "SECRET_NAME = ", "MASK = ", "def mask"):
            assert needle not in own, (name, needle)


SECRETS = ["RteamBareToken0007", "ProxyTok99", "ApiAbbrevSecret42", "EqAbbrevSecret43", "ArgvBareToken44"]


@pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")
async def test_no_probe_returns_a_masked_secret_over_ssh(sshd_factory):
    tag = uuid.uuid4().hex
    env = {"PATH": "/usr/bin:/bin", "INVESTIGATE_STAGED_TAG": tag,
           "SGLANG_ENDPOINT": "https://RteamBareToken0007@api.internal/v1", "HTTPS_PROXY": "http://ProxyTok99@proxy:3128",
           "NCCL_DEBUG": "INFO"}
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "-m",
                             "vllm.entrypoints.openai.api_server", "--model", "m", "--api-k", "ApiAbbrevSecret42",
                             "--admin-api-ke=EqAbbrevSecret43", "--endpoint", "https://ArgvBareToken44@api.internal/v1"],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        host = await SshHost(sshd_factory(env={"INVESTIGATE_STAGED_TAG": tag}).target(), Settings()).connect()
        try:
            dumps = {"engine": (await collect_engine_report(host, [], metrics=False)).model_dump_json(),
                     "settings": (await collect_settings(host)).model_dump_json(),
                     "node": (await collect_node_health(host)).model_dump_json(),
                     "discover": json.dumps(await discover(host))}
        finally:
            await host.aclose()
    finally:
        proc.kill()
        proc.wait()
    assert "--api-k" in dumps["engine"] and "--api-k" in dumps["settings"]  # the process was seen
    assert "--api-k" in dumps["discover"]
    for probe, text in dumps.items():
        assert not [s for s in SECRETS if s in text], (probe, [s for s in SECRETS if s in text])


PATH_NS = _ns(scripts.load("path").rsplit("\nmain()", 1)[0])

# A secret whose value sits on the lines below its name, in the formats the path probe reads (each program's own
# syntax: nginx directives continue over lines until `;`, YAML block and folded scalars, Envoy's SDS generic secret and
# inline PEM key, a systemd line continued by `\`).
MULTILINE = [
    ("nginx-continued", "location /v1/ {\n  proxy_set_header X-Api-Key\n                   \"NginxPlainKey5521\";\n"
                        "  proxy_pass http://127.0.0.1:8000;\n}\n", "NginxPlainKey5521", "proxy_pass http://127.0.0.1:8000;"),
    ("yaml-folded", "general_settings:\n  master_key: >-\n    team-master-key-7731\n  max_parallel_requests: 8\n",
     "team-master-key-7731", "  max_parallel_requests: 8"),
    ("envoy-sds", "resources:\n- name: token\n  generic_secret:\n    secret:\n      inline_string: \"EnvoyHmacSecret\"\n"
                  "- name: other\n", "EnvoyHmacSecret", "- name: other"),
    ("envoy-pem", "tls_certificates:\n- private_key:\n    inline_string: |\n      -----BEGIN PRIVATE KEY-----\n"
                  "      MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n      -----END PRIVATE KEY-----\n  certificate_chain: {filename: c}\n",
     "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "  certificate_chain: {filename: c}"),
    ("systemd-continued", "[Service]\nExecStart=/opt/venv/bin/vllm serve m --api-key \\\n    SystemdPlainKey \\\n"
                          "    --port 8000\nNice=5\n", "SystemdPlainKey", "Nice=5"),
]


@pytest.mark.parametrize("shape, text, secret, kept", MULTILINE, ids=[m[0] for m in MULTILINE])
def test_a_secret_on_the_lines_below_its_name_is_masked_on_the_host(shape, text, secret, kept):
    masked = PATH_NS["mask_text"](text)
    assert secret not in masked, masked
    assert kept in masked, masked  # the configuration after the secret is still read


def test_a_setting_named_as_a_secret_never_leaves_in_clear():
    """The path report's backstop: a parsed setting whose name says secret (a value the host's masker missed) is
    redacted; paths, numbers and the host's own marker stay."""
    from orchestrator.prongs.path.probe import report_from

    files = [{"path": "/etc/nginx/nginx.conf", "layer": "nginx", "role": "config",
              "text": "http { server { location /v1/ { proxy_pass http://127.0.0.1:8000;\n"
                      "proxy_set_header X-Api-Key NginxPlainKey5521; proxy_set_header Authorization \"" + M + "\";\n"
                      "proxy_ssl_certificate_key /etc/nginx/k.pem; } } }\n"},
             {"path": "/etc/litellm/config.yaml", "layer": "litellm", "role": "config",
              "text": "model_list: []\ngeneral_settings:\n  master_key: team-master-key-7731\n  max_parallel_requests: 8\n"}]
    report = report_from("h", {"files": files})
    nginx, litellm = report.layer("nginx"), report.layer("litellm")
    assert "NginxPlainKey5521" not in report.model_dump_json() and "team-master-key" not in report.model_dump_json()
    assert nginx.settings["proxy_set_header.x-api-key"].value == "[REDACTED]"
    assert nginx.settings["proxy_set_header.authorization"].value == M
    assert nginx.settings["proxy_ssl_certificate_key"].value == "/etc/nginx/k.pem"
    assert litellm.settings["master_key"].value == "[REDACTED]" and litellm.settings["max_parallel_requests"].value == 8


def test_nginx_pass_directives_are_not_taken_for_secrets():
    from orchestrator.prongs.path.probe import report_from

    text = ("http { server { location /v1/ { proxy_pass http://127.0.0.1:8000; proxy_pass_header Server;\n"
            "grpc_pass grpc://127.0.0.1:9000; auth_delay 2s; } } }\n")
    nginx = report_from("h", {"files": [{"path": "/etc/nginx/nginx.conf", "layer": "nginx", "role": "config",
                                         "text": text}]}).layer("nginx")
    got = {k: nginx.settings[k].value for k in ("proxy_pass", "pass_to", "proxy_pass_header", "grpc_pass", "auth_delay")}
    assert got == {"proxy_pass": "http://127.0.0.1:8000", "pass_to": "http://127.0.0.1:8000",
                   "proxy_pass_header": "Server", "grpc_pass": "grpc://127.0.0.1:9000", "auth_delay": "2s"}, got


def test_a_directory_swapped_after_its_check_is_not_listed(tmp_path):
    """names_in checks the directory it then lists: a tenant's link that points at the tenant's own directory when
    checked and at root's when listed (a race) lists the tenant's."""
    mine, roots = tmp_path / "mine", tmp_path / "roots"
    mine.mkdir()
    roots.mkdir()
    (mine / "a.conf").write_text("")
    (roots / "ROOT-NAME.conf").write_text("")
    link = tmp_path / "link"
    link.symlink_to(mine)
    ns = _ns(scripts.load("path").rsplit("\nmain()", 1)[0])  # its own: the check is replaced below
    checked = ns["unreachable"]

    def swap_after_check(path, creds):
        why = checked(path, creds)
        link.unlink()
        link.symlink_to(roots)
        return why

    ns["unreachable"] = swap_after_check
    files = ns["Files"](1000, 10)
    got = ns["names_in"](files, str(link), "nginx", (os.getuid(), frozenset()), 1)
    assert got == ["a.conf"], got


def test_a_name_for_kubectl_or_systemctl_is_one_plain_word():
    """Names from another process (its HOSTNAME, POD_NAME, a cgroup's unit) reach an argv only as plain names: not an
    option, not a word with a trailing newline (`$` matches before one)."""
    rx = PATH_NS["NAME_RX"]
    assert rx.match("vllm-0") and rx.match("vllm.service")
    for bad in ("vllm-0\n", "-n", "--kubeconfig=/tmp/k", "$(id)", "a b", "a\nb", "x" * 300):
        assert not rx.match(bad), bad
    assert not PATH_NS["HEX_RX"].match("ab" * 8 + "\n")


def test_a_pods_name_never_overrides_the_cgroups_uid():
    """A process in a pod (its cgroup names the pod's uid) whose environment names another pod: the fetched pod must
    be the cgroup's (a pod tenant's POD_NAME/POD_NAMESPACE would have root's kubectl read any pod)."""
    reduce_pods = PATH_NS["reduce_pods"]
    other = {"kind": "Pod", "metadata": {"name": "other", "namespace": "kube-system", "uid": "u-other"}, "spec": {}}
    mine = {"kind": "Pod", "metadata": {"name": "mine", "namespace": "llm", "uid": "u-mine"}, "spec": {}}
    assert reduce_pods(other, {"pod_uid": "u-mine", "name": "other"}, set(), ()) is None
    assert reduce_pods({"items": [other]}, {"pod_uid": "u-mine"}, set(), ()) is None
    got = reduce_pods({"items": [other, mine]}, {"pod_uid": "u-mine", "name": "other"}, set(), ())
    assert got["metadata"]["name"] == "mine"
    assert reduce_pods(other, {"name": "other"}, set(), ())["metadata"]["name"] == "other"  # a verified name alone


def test_a_pod_is_found_by_its_cgroups_container_id_where_no_pod_has_its_uid():
    """The cgroup names the pod's uid and the container's id; a static pod's mirror on the API server has a uid of
    its own (the kubelet's is in `kubernetes.io/config.mirror`): the pod whose container status holds the cgroup's
    container id, or whose mirror annotation holds its uid, is the process's pod; a name never stands in for them."""
    reduce_pods = PATH_NS["reduce_pods"]
    other = {"kind": "Pod", "metadata": {"name": "other", "uid": "u-other"},
             "status": {"containerStatuses": [{"containerID": "containerd://aaaa1111"}]}}
    mine = {"kind": "Pod", "metadata": {"name": "mine", "uid": "u-api"},
            "status": {"containerStatuses": [{"containerID": "containerd://9f2c4e1a7b3d"}]}}
    mirror = {"kind": "Pod", "metadata": {"name": "static", "uid": "u-api2",
                                          "annotations": {"kubernetes.io/config.mirror": "u-kubelet"}}}
    pods = {"items": [other, mine, mirror]}
    assert reduce_pods(pods, {"pod_uid": "u-cgroup", "container_id": "9f2c4e1a7b3d"}, set(), ())["metadata"][
        "name"] == "mine"
    assert reduce_pods(pods, {"pod_uid": "u-kubelet"}, set(), ())["metadata"]["name"] == "static"
    assert reduce_pods(pods, {"pod_uid": "u-other", "container_id": "9f2c4e1a7b3d"}, set(), ())["metadata"][
        "name"] == "other"  # the uid, when a pod has it, first
    assert reduce_pods(pods, {"pod_uid": "u-cgroup", "container_id": "ffff", "name": "mine"}, set(), ()) is None


def test_the_only_pod_listed_is_taken_when_it_carries_nothing_the_cgroup_could_contradict():
    """A pod object without a uid or container ids (a manifest's, not the API server's) is taken when it is the only
    one; one whose uid differs from the cgroup's is not."""
    reduce_pods = PATH_NS["reduce_pods"]
    bare = {"kind": "Pod", "metadata": {"name": "llm-0"}, "status": {"containerStatuses": [{"name": "vllm"}]}}
    assert reduce_pods(bare, {"pod_uid": "u-cgroup", "container_id": "abcd"}, set(), ())["metadata"]["name"] == "llm-0"
    other = {"kind": "Pod", "metadata": {"name": "other", "uid": "u-other"}}
    assert reduce_pods(other, {"pod_uid": "u-cgroup"}, set(), ()) is None
    assert reduce_pods({"items": [bare, other]}, {"pod_uid": "u-cgroup"}, set(), ()) is None

