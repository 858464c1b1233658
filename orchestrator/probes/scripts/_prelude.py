# --- prelude (orchestrator/probes/scripts/_prelude.py): helpers every probe script shares, sent ahead of each one ---
# stdlib only, Python >= 3.8, read-only. One reviewed copy instead of drifting ones: a script never redefines these
# names (tests/probes/test_probe_scripts.py checks it).
import os

# A server is recognized by its entry point, not by a word anywhere in its command line (grep, editors, tests).
MODULES = (("sglang.launch_server", "sglang"), ("sglang.srt", "sglang"), ("tensorrt_llm", "tensorrt_llm"),
           ("vllm.entrypoints", "vllm"), ("vllm.", "vllm"))
SCRIPTS = {"vllm": "vllm", "sglang": "sglang", "trtllm-serve": "tensorrt_llm", "trtllm-llmapi-launch": "tensorrt_llm"}


def server_kind(argv):
    """vllm / sglang / tensorrt_llm when argv starts one of their servers, else None."""
    for i, arg in enumerate(argv[:-1]):
        if arg == "-m":
            mod = argv[i + 1]
            for prefix, kind in MODULES:
                if mod.startswith(prefix):
                    return kind
    # the program itself, or the script a Python interpreter runs (`python3 /usr/bin/vllm serve`); never an argument
    # of another program (`grep vllm`)
    starts = argv[:2] if argv and os.path.basename(argv[0]).startswith("python") else argv[:1]
    for arg in starts:
        kind = SCRIPTS.get(os.path.basename(arg))
        if kind:
            return kind
    return None


def listdir(path):
    """Sorted names in a directory; [] when it cannot be listed (permissions, vanished)."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def size_of(path):
    """The file's size in bytes; None when it cannot be read (a missing size is not a zero size)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return None


# --- end of prelude ---------------------------------------------------------------------------------------------------
