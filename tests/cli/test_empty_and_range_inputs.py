"""Issue 43 items 4 and 9: an empty value (an unset shell variable) is an error naming the option, never "this
machine" or the path "."; an empty observations file says it is empty; a number out of range is refused before the
heavy imports, with the range it really accepts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from orchestrator.errors import InputError
from support.cli import ROOT, cli_env, investigate, one_line

EMPTY = [
    ("why slow", "--host", ""),                     # a script's unset $HOST: it was a silent local run (exit 0)
    ("why slow", "--hosts", ""),                    # was "hosts file . not found"
    ("why slow", "--log", ""),                      # was "--log is a directory"
    ("why slow", "--log="),
    ("why slow", "--observations", ""),
    ("why slow", "--trace", ""),
    ("why slow", "--python", ""),
    ("why slow", "--ssh-config", ""),
    ("replay", ""),
    ("report", "t.jsonl", "-o", ""),
    ("probe", "--host", ""),
]


@pytest.mark.parametrize("args", EMPTY, ids=[" ".join(a) or "empty" for a in EMPTY])
def test_an_empty_value_is_an_error_naming_the_option(args, tmp_path):
    line = one_line(investigate(*args, tmp_path=tmp_path), 2, "is empty", "unset shell variable")
    option = next((a.rstrip("=") for a in args if a.startswith("-")), None)
    assert option is None or option in line, line


def test_an_empty_host_given_to_the_library_is_the_same_error():
    from orchestrator.request import RunRequest

    with pytest.raises(InputError, match="--host is empty"):
        RunRequest.of("why slow", host="")
    with pytest.raises(InputError, match="--log is empty"):
        RunRequest.of("why slow", logs=["a.log", " "])


def test_an_empty_observations_file_says_it_is_empty(tmp_path):
    for text in ("", "\n\n", "# what we measured\n"):
        f = tmp_path / "obs.yaml"
        f.write_text(text)
        one_line(investigate("why slow", "--observations", f, tmp_path=tmp_path), 2, f"observations file {f} is empty")


def test_the_sampling_window_accepts_what_its_message_says():
    from orchestrator.request import RunRequest

    assert RunRequest.of("q", sample_s=60).sample_s == 60
    assert RunRequest.of("q", sample_s=0.1).sample_s == 0.1
    for bad in (0, -1, 60.5):
        with pytest.raises(InputError, match="more than 0 and at most 60 seconds"):
            RunRequest.of("q", sample_s=bad)
    assert RunRequest.of("q", measure=True, measure_wait=0).measure_wait == 0
    with pytest.raises(InputError, match="pass 0 to 3600 seconds"):
        RunRequest.of("q", measure=True, measure_wait=3601)


HEAVY = ("paramiko", "anthropic", "httpx", "orchestrator.hosts", "orchestrator.probes", "orchestrator.run",
         "orchestrator.observations", "orchestrator.settings", "orchestrator.analysis")

_IMPORTS = """
import sys, json
from orchestrator import cli
rc = cli.main(sys.argv[1:])
print(json.dumps({"rc": rc, "heavy": [m for m in %r if m in sys.modules]}))
""" % (HEAVY,)


@pytest.mark.parametrize("args,needle", [
    (("why slow", "--sample-s", "0"), "more than 0 and at most 60 seconds"),
    (("why slow", "--measure", "--measure-wait", "-5"), "pass 0 to 3600 seconds"),
    (("why slow", "--measure-wait", "5"), "goes with --measure"),
    (("why slow", "--offline", "--model", "claude-sonnet-4-5"), "exclude each other"),
    (("why slow", "--host", ""), "--host is empty"),
])
def test_a_bad_option_is_refused_before_the_heavy_imports(args, needle, tmp_path):
    # observations, bench and log files are given too: none of them is read before the bad option is refused
    obs = tmp_path / "obs.yaml"
    obs.write_text("gpu: {name: H100}\n")
    proc = subprocess.run([sys.executable, "-c", _IMPORTS, *args, "--observations", str(obs)], capture_output=True,
                          text=True, env=cli_env(tmp_path), cwd=ROOT, timeout=60)
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["rc"] == 2, proc.stderr
    assert needle in proc.stderr, proc.stderr
    assert got["heavy"] == [], got["heavy"]
