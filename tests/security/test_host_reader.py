"""The prelude's one way to read a host file (open_host_file / read_host_file), and the settings probe's reading of a
served config on the host (parsed there; only known settings leave), as pure functions on real files here."""

from __future__ import annotations

import json
import os
import time

import pytest
import yaml

from orchestrator.hosts.policy import credential_rules, secret_path
from orchestrator.probes import scripts
from orchestrator.prongs.settings_audit.probe import config_keys


def _ns(name: str | None = None) -> dict:
    """The prelude (and a script's functions, without running its main) as the host runs them."""
    src = scripts.load(name) if name else scripts.prelude()
    if name:
        src = src.rsplit("\nmain()", 1)[0]
    ns: dict = {"__name__": "probe"}
    exec(compile(src, f"<{name or 'prelude'}>", "exec"), ns)
    return ns


PRELUDE = _ns()
SETTINGS = _ns("settings")


def test_the_host_refuses_every_credential_location_the_policy_refuses():
    where = PRELUDE["credential_location"]
    examples = [e for r in credential_rules() for e in r.examples]
    assert len(examples) > 80
    for path in examples:
        assert where(path), path
    for path in ("/etc/vllm/serve.yaml", "/models/llama/config.json", "/var/log/vllm.log", "/srv/app/environment"):
        assert where(path) is None and secret_path(path) is None, path


def test_a_fifo_a_directory_and_a_link_to_another_owners_file_are_not_opened(tmp_path):
    read = PRELUDE["read_host_file"]
    (tmp_path / "f.yaml").write_text("a: 1\n")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError, match="regular"):
        read(str(tmp_path / "fifo"), 100)  # returns at once: O_PATH never opens the FIFO for reading
    with pytest.raises(OSError, match="regular"):
        read(str(tmp_path), 100)
    assert read(str(tmp_path / "f.yaml"), 100) == (b"a: 1\n", False)
    assert read(str(tmp_path / "f.yaml"), 2) == (b"a:", True)
    os.symlink(tmp_path / "f.yaml", tmp_path / "own-link")
    assert read(str(tmp_path / "own-link"), 100)[0] == b"a: 1\n"  # a link to its owner's own file (HF snapshots)
    if os.geteuid() == 0:
        os.symlink(tmp_path / "f.yaml", tmp_path / "their-link")
        os.lchown(tmp_path / "their-link", 4242, 4242)
        with pytest.raises(OSError, match="another user's file"):
            read(str(tmp_path / "their-link"), 100)
    os.makedirs(tmp_path / "home" / ".ssh")
    (tmp_path / "home" / ".ssh" / "id_ed25519").write_text("key")
    os.symlink(tmp_path / "home" / ".ssh" / "id_ed25519", tmp_path / "innocent.yaml")
    with pytest.raises(OSError, match="credential"):
        read(str(tmp_path / "innocent.yaml"), 100)
    with pytest.raises(OSError, match="credential"):
        read(str(tmp_path / "home" / ".ssh" / "id_ed25519"), 100)


def test_a_process_reads_only_what_its_uid_and_groups_may(tmp_path):
    may = PRELUDE["may_access"]
    f = tmp_path / "f"
    f.write_text("x")
    for mode, creds, ok in [(0o600, (1000, frozenset({1000})), False), (0o604, (1000, frozenset({1000})), True),
                            (0o640, (1000, frozenset({os.getegid()})), True), (0o640, (1000, frozenset()), False),
                            (0o000, (0, frozenset()), True)]:
        os.chmod(f, mode)
        assert may(os.stat(f), creds, 4, str(f)) is ok, (oct(mode), creds)
    os.chmod(f, 0o600)
    assert may(os.stat(f), (os.stat(f).st_uid, frozenset()), 4, str(f))
    search = PRELUDE["search_refused"]
    d = tmp_path / "closed"
    d.mkdir()
    os.chmod(d, 0o700)
    assert search(str(d / "x"), (4242, frozenset())) and search(str(d / "x"), (os.stat(d).st_uid, frozenset())) is None
    assert search(str(d / "x"), (0, frozenset())) is None


def _set_acl(path, entries) -> bool:
    import struct

    raw = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)
    try:
        os.setxattr(path, "system.posix_acl_access", raw)
    except OSError:
        return False
    return True


def test_a_posix_acl_decides_as_the_kernel_does(tmp_path):
    """`user:4242:---` on a world-readable file (or directory) refuses that user although the others' bits let every
    other user in; a named-user or named-group entry lets a user in that the mode bits would not; the owning group's
    bits, when they do not allow, are not made up for by the others'."""
    may = PRELUDE["may_access"]
    nobody = 0xFFFFFFFF
    user_obj, user, group_obj, group, mask, other = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
    f = tmp_path / "f"
    f.write_text("x")
    os.chmod(f, 0o644)
    if not _set_acl(f, [(user_obj, 6, nobody), (user, 0, 4242), (group_obj, 4, nobody), (mask, 4, nobody),
                        (other, 4, nobody)]):
        pytest.skip("no POSIX ACLs on this file system")
    st = os.stat(f)
    assert not may(st, (4242, frozenset({4242})), 4, str(f))  # the named entry refuses 4242
    assert may(st, (4343, frozenset({4343})), 4, str(f))  # every other user reads it
    os.chmod(f, 0o600)  # (chmod sets the ACL's owner, mask and other entries)
    assert _set_acl(f, [(user_obj, 6, nobody), (user, 4, 4242), (group_obj, 0, nobody), (group, 4, 777),
                        (mask, 4, nobody), (other, 0, nobody)])
    st = os.stat(f)
    assert may(st, (4242, frozenset()), 4, str(f)) and may(st, (5000, frozenset({777})), 4, str(f))
    assert not may(st, (5000, frozenset({778})), 4, str(f))
    assert _set_acl(f, [(user_obj, 6, nobody), (user, 4, 4242), (group_obj, 0, nobody), (mask, 0, nobody),
                        (other, 0, nobody)])
    assert not may(os.stat(f), (4242, frozenset()), 4, str(f))  # the mask takes what the named entry gave
    g = tmp_path / "g"
    g.write_text("x")
    os.chmod(g, 0o604)
    assert not may(os.stat(g), (4242, frozenset({os.stat(g).st_gid})), 4, str(g))  # its group may not: others' r moot
    d = tmp_path / "open"
    d.mkdir()
    os.chmod(d, 0o755)
    assert _set_acl(d, [(user_obj, 7, nobody), (user, 0, 4242), (group_obj, 5, nobody), (mask, 5, nobody),
                        (other, 5, nobody)])
    assert not may(os.stat(d), (4242, frozenset()), 1, str(d)) and may(os.stat(d), (4343, frozenset()), 1, str(d))


CONFIGS = [
    "tensor-parallel-size: 8\ncpu-offload-gb: 16\nmax-model-len: 65536\n",
    "# vLLM serve config\nmodel: meta-llama/Llama-3.1-8B  # comment\nenable-prefix-caching: true\ngpu-memory-utilization: 0.92\n"
    "served-model-name: 'llama #1'\nmax-num-seqs: 256\nkv-cache-dtype: \"fp8\"\nswap-space: 1_0\nseed: ~\n",
    "compilation-config:\n  level: 3\n  cudagraph_capture_sizes: [1, 2, 4, 8]\nenforce-eager: no\n",
    "backend: pytorch\nkv_cache_config:\n  enable_block_reuse: false\n  free_gpu_memory_fraction: 0.85\n"
    "cuda_graph_config:\n  batch_sizes:\n    - 1\n    - 2\n  enable_padding: true\nspeculative_config:\n"
    "  decoding_type: Eagle\n  max_draft_len: 3\n",
    "---\nlist-of-maps:\n- name: a\n  value: 1\n- name: b\n  value: 2.5\nempty:\nflag: On\n",
    # TensorRT-LLM's extra_llm_api_options as its deployment guides write them
    "cuda_graph_config:\n  enable_padding: true\n  max_batch_size: 720\nmoe_config:\n  backend: DEEPGEMM\n"
    "kv_cache_config:\n  dtype: fp8\n  free_gpu_memory_fraction: 0.8\nstream_interval: 10\nenable_attention_dp: true\n"
    "speculative_config:\n  decoding_type: MTP\n  num_nextn_predict_layers: 3\nprint_iter_log: true\n",
    "served-model-name: [a, b]\nspeculative-config: '{\"method\": \"ngram\", \"num_speculative_tokens\": 5}'\n"
    "\"quoted key\": 1\nhttp://x: 2\n",
    "quoted: \"a: b # not a comment\"\nesc: 'it''s'\nneg: -3\nexp: 1.0e+3\nnotfloat: 1e3\noctalish: 0755\nhex: 0x1F\nbin: 0b101\n",
]


@pytest.mark.parametrize("text", CONFIGS)
def test_the_host_parses_plain_config_yaml_as_pyyaml_does(text):
    assert SETTINGS["parse_yaml"](text) == yaml.safe_load(text)


@pytest.mark.parametrize("text", [
    "a: &x [1, 2]\nb: *x\n",  # an alias: never expanded on the host (a 917-byte bomb expands to 10^9 keys)
    "a: !!python/object:os.system x\n",
    "a: |\n  multi\n  line\n",
    "a: [1,\n  2]\n",
    "a: 1\n  b: 2\n",
    "".join("  " * i + f"k{i}:\n" for i in range(40)) + "  " * 40 + "v: 1\n",
])
def test_yaml_beyond_plain_mappings_is_refused_with_its_reason(text):
    with pytest.raises(SETTINGS["NotPlain"]):
        SETTINGS["parse_yaml"](text)


@pytest.mark.parametrize("text", ["a" + " " * 60000 + "x", "k" * 60000 + ":", '"' + "x" * 60000, "a: " + "[" * 30000,
                                  "- " * 30000 + "x", "a:" + " b:" * 20000, "a: 1 " + "#" * 60000, "x:\n" + " " * 60000])
def test_the_host_config_reader_takes_time_linear_in_a_hostile_line(text):
    started = time.perf_counter()
    try:
        SETTINGS["parse_config"](text)
    except ValueError:
        pass
    assert time.perf_counter() - started < 0.5


def test_only_known_settings_leave_and_secret_looking_values_are_masked(tmp_path):
    known = set(config_keys())
    f = tmp_path / "serve.yaml"
    f.write_text("max-num-seqs: 64\napi-key: K3y\nhf_token: x\nnote: private text\ncompilation-config: "
                 '{"level": 3, "password": "p"}\nserved-model-name: https://u:pw@h/x\n')
    got = SETTINGS["read_config"](str(f), 65536, None, known)
    assert got["dropped"] == 1 and not got["truncated"], got
    assert json.loads(got["text"]) == {"max-num-seqs": 64, "api-key": "<redacted on host>", "hf_token": "<redacted on host>",
                                       "compilation-config": {"level": 3, "password": "<redacted on host>"},
                                       "served-model-name": "<redacted on host>"}
    f.write_text("a: &x 1\n")
    assert "not parsed on the host" in SETTINGS["read_config"](str(f), 65536, None, known)["error"]
    f.write_text("[" * 100000)
    assert "not parsed" in SETTINGS["read_config"](str(f), 1 << 20, None, known)["error"]
    f.write_text("max-num-seqs: 64\n" * 10)
    assert "larger than" in SETTINGS["read_config"](str(f), 50, None, known)["error"]
