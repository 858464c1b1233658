"""The path probe reads what a proxy or gateway process names only as that process could (REDTEAM round 3, C1).

Another Unix user (`invtest-tenant`) runs processes that look like LiteLLM, HAProxy and nginx, whose command lines
name: a root-only file (`litellm --config`), a symlink in the tenant's directory to root's file (`haproxy -f`), and
the tenant's own nginx.conf whose `include` names a root-only file. The path probe then runs as root over a real
sshd. None of root's text may come back; the tenant's own configuration does, its secret masked on the host.
"""

from __future__ import annotations

import os
import uuid

import pytest

from orchestrator.hosts.ssh import SshHost
from orchestrator.prongs.path.probe import collect_path
from orchestrator.settings import Settings
from support.tenant import PYTHON, stage

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")

ROOT_CANARY = "ROOT-PATH-CANARY-4c1e"
INCLUDE_CANARY = "ROOT-INCLUDE-CANARY-88aa"
TENANT_SECRET = "sk-tenantSecretDoNotShip42"
SLEEPER = "import time; time.sleep(600)\n"


@pytest.fixture
def tenant_stage():
    s = stage(uuid.uuid4().hex)
    try:
        secret = s.root_only / "litellm.yaml"
        secret.write_text(f"model_list:\n  - model_name: {ROOT_CANARY}\n    litellm_params: {{model: openai/x}}\n")
        os.chmod(secret, 0o600)
        inc = s.root_only / "upstream.conf"
        inc.write_text(f"server {{ location /{INCLUDE_CANARY}/ {{ proxy_pass http://x; }} }}\n")
        os.chmod(inc, 0o600)
        link = s.mine / "haproxy.cfg"
        os.symlink(secret, link)
        s.give(link)
        own = s.mine / "nginx.conf"
        own.write_text(f"events {{}}\nhttp {{\n  include {inc};\n  server {{ location /v1/ {{ proxy_pass "
                       f"http://127.0.0.1:8000; proxy_set_header Authorization \"Bearer {TENANT_SECRET}\"; }} }}\n}}\n")
        s.give(own)
        for name in ("litellm", "haproxy", "nginx"):
            script = s.mine / name
            script.write_text(SLEEPER)
            s.give(script)
        s.start([PYTHON, str(s.mine / "litellm"), "--config", str(secret), "--port", "14000"])
        s.start([PYTHON, str(s.mine / "haproxy"), "-f", str(link)])
        s.start([PYTHON, str(s.mine / "nginx"), "-c", str(own)])
        yield s
    finally:
        s.stop()


async def test_a_local_users_proxy_gets_no_root_file_into_the_path_report(tenant_stage, sshd_factory):
    s = tenant_stage
    sshd = sshd_factory(env={"INVESTIGATE_STAGED_TAG": s.tag})
    host = await SshHost(sshd.target(), Settings()).connect()
    try:
        report = await collect_path(host, timeout_s=60)
    finally:
        await host.aclose()
    assert report.available, report.reason
    dumped = report.model_dump_json()
    for canary in (ROOT_CANARY, INCLUDE_CANARY, TENANT_SECRET):
        assert canary not in dumped, canary
    kinds = sorted(p.kind for p in report.processes)
    assert kinds == ["haproxy", "litellm", "nginx"], kinds
    errors = [e for x in report.layers for e in x.errors]
    # root's file, the tenant's link to it and root's include: each refused as the tenant's process could not read it
    for name in ("litellm.yaml", "haproxy.cfg", "upstream.conf"):
        assert any(name in e and "uid" in e for e in errors), (name, errors)
    nginx = report.layer("nginx")
    assert nginx is not None and nginx.settings["pass_to"].value == "http://127.0.0.1:8000"
    assert nginx.settings["proxy_set_header.authorization"].value == "<redacted on host>"


NAME_CANARY = "ROOT-NAME-CANARY-3d7f"
RAY_CANARY = "ROOT-RAY-CANARY-a05c"


async def test_a_local_users_layers_get_no_root_directory_listed_or_read(sshd_factory):
    """A Ray Serve actor (argv[0] `ray::ServeReplica...`, any process may say so) whose working directory is root's
    (searchable, its files root's alone): its config and deployment module were read as root. An nginx.conf of the
    tenant's including `<root-only dir>/*.conf`, a Triton whose model repository is root's 0700 directory: the names
    in root's directory were listed into the report. Now each is read, or listed, only as the tenant could."""
    s = stage(uuid.uuid4().hex)
    try:
        srv = s.base / "srv"
        srv.mkdir(mode=0o755)
        (srv / "serve.yaml").write_text(f"applications:\n- name: app\n  import_path: prod_app:app\n  deployments:\n"
                                        f"  - name: {RAY_CANARY}\n    max_ongoing_requests: 5\n")
        (srv / "prod_app.py").write_text(f"@serve.deployment(name='{RAY_CANARY}', max_ongoing_requests=3)\n"
                                         f"class A: pass\n")
        for f in ("serve.yaml", "prod_app.py"):
            os.chmod(srv / f, 0o600)
        (s.root_only / f"{NAME_CANARY}.conf").write_text("events {}\n")
        (s.root_only / NAME_CANARY).mkdir()
        (s.root_only / NAME_CANARY / "config.pbtxt").write_text('name: "m"\nbackend: "python"\n')
        own = s.mine / "nginx.conf"
        own.write_text(f"events {{}}\nhttp {{\n  include {s.root_only}/*.conf;\n  server {{ location /v1/ {{ "
                       f"proxy_pass http://127.0.0.1:8000; }} }}\n}}\n")
        s.give(own)
        for name in ("nginx", "tritonserver"):
            script = s.mine / name
            script.write_text(SLEEPER)
            s.give(script)
        s.start([PYTHON, str(s.mine / "nginx"), "-c", str(own)])
        s.start([PYTHON, str(s.mine / "tritonserver"), "--model-repository", str(s.root_only)])
        s.start([PYTHON, "-c", "import os; os.execv('/usr/bin/sleep', ['ray::ServeReplica:app:A', '600'])"], cwd=srv)
        sshd = sshd_factory(env={"INVESTIGATE_STAGED_TAG": s.tag})
        host = await SshHost(sshd.target(), Settings()).connect()
        try:
            report = await collect_path(host, timeout_s=60)
        finally:
            await host.aclose()
    finally:
        s.stop()
    assert report.available, report.reason
    assert {"nginx", "triton", "ray_serve"} <= {p.kind for p in report.processes}, report.processes
    dumped = report.model_dump_json()
    for canary in (NAME_CANARY, RAY_CANARY):
        assert canary not in dumped, canary
    errors = [e for x in report.layers for e in x.errors]
    assert any("serve.yaml" in e and "uid" in e for e in errors), errors
    assert sum(str(s.root_only) in e and "not listed" in e for e in errors) == 2, errors
    assert report.layer("nginx").settings["pass_to"].value == "http://127.0.0.1:8000"


UNIT_CANARY = "ROOT-UNIT-CANARY-6b2e"


async def test_a_unit_or_container_named_by_a_users_cgroup_is_not_roots(sshd_factory):
    """A user names its own cgroups (`systemd-run --user --unit=NAME.service`, or any delegated subtree): a tenant's
    process in `user.slice/user-UID.slice/user@UID.service/app.slice/<root's unit>.service` made root read that unit
    and its drop-ins (root's 0600 file here) and run `systemctl show` of it; `docker-<id>.scope` named another's
    container for `docker inspect`."""
    base = "/sys/fs/cgroup/systemd"
    if not os.access(base, os.W_OK):
        pytest.skip("needs a writable cgroup v1 name=systemd hierarchy")
    s = stage(uuid.uuid4().hex)
    unit_dir = "/run/systemd/system"
    unit = f"invtest-{s.tag[:12]}.service"
    uid = s.pw.pw_uid
    made: list[str] = []
    try:
        os.makedirs(unit_dir, exist_ok=True)
        with open(os.path.join(unit_dir, unit), "w") as f:
            f.write(f"[Service]\nEnvironment=MARK={UNIT_CANARY}\nCPUQuota=50%\n")
        os.chmod(os.path.join(unit_dir, unit), 0o600)
        cgs = [f"user.slice/user-{uid}.slice/user@{uid}.service/app.slice/{unit}",
               f"user.slice/user-{uid}.slice/user@{uid}.service/app.slice/docker-{'ab' * 32}.scope"]
        for i, cg in enumerate(cgs):
            proc = s.start([PYTHON, "-c", f"import time; time.sleep(600)  # {i}"])
            path = base
            for part in cg.split("/"):
                path = os.path.join(path, part)
                if not os.path.isdir(path):
                    os.mkdir(path)
                    made.append(path)
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(proc.pid))
        script = s.mine / "nginx"
        script.write_text(SLEEPER)
        s.give(script)
        # the two sleepers above are not layers: an nginx and a vllm in the same cgroups are
        for i, cg in enumerate(cgs):
            name = ["nginx", "vllm"][i]
            argv = [PYTHON, str(script)] if name == "nginx" else [PYTHON, "-c", "import time; time.sleep(600)", "-m",
                                                                  "vllm.entrypoints.openai.api_server"]
            proc = s.start(argv)
            with open(os.path.join(base, cg, "cgroup.procs"), "w") as f:
                f.write(str(proc.pid))
        bindir = s.base / "bin"  # systemd answers `show` for any unit (here without a running systemd)
        bindir.mkdir()
        (bindir / "systemctl").write_text("#!/bin/sh\n[ \"$1\" = show ] && printf 'LoadState=loaded\\nNRestarts=0\\n'\n"
                                          "exit 0\n")
        os.chmod(bindir / "systemctl", 0o755)
        sshd = sshd_factory(env={"INVESTIGATE_STAGED_TAG": s.tag, "PATH": f"{bindir}:/usr/bin:/bin"})
        host = await SshHost(sshd.target(), Settings()).connect()
        try:
            report = await collect_path(host, timeout_s=60)
        finally:
            await host.aclose()
    finally:
        s.stop()
        os.unlink(os.path.join(unit_dir, unit))
        for path in reversed(made):
            try:
                with open(os.path.join(path, "cgroup.procs")) as f:
                    for pid in f.read().split():  # anything left (the processes above are gone)
                        with open(os.path.join(base, "cgroup.procs"), "w") as g:
                            g.write(pid)
                os.rmdir(path)
            except OSError:
                pass
    assert report.available, report.reason
    assert {"nginx", "vllm"} <= {p.kind for p in report.processes}, report.processes
    assert UNIT_CANARY not in report.model_dump_json()
    assert all(p.unit is None and p.container_id is None for p in report.processes), report.processes
    assert not any(unit in c for c in report.commands), report.commands


POD_CANARY = "victim-pod-canary-0d4e"


async def test_a_pod_named_by_a_users_environment_is_not_fetched(sshd_factory):
    """A local user's process (in no pod) whose environment says POD_NAME=<any pod> POD_NAMESPACE=kube-system made
    root's kubectl fetch that pod (root's kubeconfig: any namespace), and the report carried its settings as this
    engine's. A name from a process's environment is taken only for a process the kernel placed in a pod, or one
    whose name is the hostname of the UTS namespace it shares with the probe."""
    import json

    s = stage(uuid.uuid4().hex)
    try:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": POD_CANARY, "namespace": "kube-system",
                                                              "uid": "0a0a0a0a-0000-0000-0000-000000000000"},
               "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                                        "resources": {"limits": {"cpu": "3"}}}]},
               "status": {"containerStatuses": [{"name": "vllm", "restartCount": 7, "ready": True}]}}
        bindir = s.base / "bin"
        bindir.mkdir()
        (bindir / "pod.json").write_text(json.dumps(pod))
        (bindir / "kubectl").write_text(f"#!/bin/sh\ncase \"$*\" in *{POD_CANARY}*) cat {bindir}/pod.json;; "
                                        "*) echo '{\"kind\": \"List\", \"items\": []}';; esac\n")
        os.chmod(bindir / "kubectl", 0o755)
        s.fake_server("--port", "18041", env={"POD_NAME": POD_CANARY, "POD_NAMESPACE": "kube-system",
                                              "KUBERNETES_SERVICE_HOST": "10.96.0.1"})
        sshd = sshd_factory(env={"INVESTIGATE_STAGED_TAG": s.tag, "PATH": f"{bindir}:/usr/bin:/bin"})
        host = await SshHost(sshd.target(), Settings()).connect()
        try:
            report = await collect_path(host, timeout_s=60)
        finally:
            await host.aclose()
    finally:
        s.stop()
    assert report.available, report.reason
    assert "vllm" in {p.kind for p in report.processes}, report.processes
    assert report.layer("k8s") is None, report.layer("k8s")  # (its own env, POD_NAME included, is shown as such)
    # no pod is fetched on the process's word; the cluster's autoscalers are listed whatever any process says (an
    # engine runs here), and name nothing of the process
    assert not any(c.startswith("kubectl get pod") or POD_CANARY in c for c in report.commands), report.commands
