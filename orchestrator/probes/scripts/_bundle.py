# --- bundle driver (probes/runner.py run_bundle): several fixed probe scripts in one interpreter start ---
# Each part is one shipped script (prelude + script, as `load(name)` sends it alone), run in a namespace of its own
# with its parameters on argv[1] and its stdout captured; a part that fails does not stop the others. A part also sees
# BUNDLE_RESULTS (the parts before it) and BUNDLE_SOURCES (every source sent). Prints one JSON object: {name:
# {"stdout": ...} or {"error": "...", "stdout": ...}}. stdlib only, Python >= 3.8.
import io
import json
import sys
import time


def run_parts(parts, sources):
    results = {}
    real_stdout, real_argv = sys.stdout, sys.argv
    for name, params in parts:
        buf = io.StringIO()
        started = time.monotonic()
        sys.stdout, sys.argv = buf, ["-", json.dumps(params)]
        try:
            # a part may read what the parts before it printed and the other scripts sent along (pyenv_chain)
            exec(compile(sources[name], "<probe %s>" % name, "exec"),
                 {"__name__": "__main__", "BUNDLE_RESULTS": results, "BUNDLE_SOURCES": sources})
            results[name] = {"stdout": buf.getvalue()}
        except SystemExit as exc:
            if exc.code in (None, 0):
                results[name] = {"stdout": buf.getvalue()}
            else:
                results[name] = {"error": "exit %s" % (exc.code,), "stdout": buf.getvalue()}
        except Exception as exc:
            results[name] = {"error": "%s: %s" % (type(exc).__name__, str(exc)[:300]), "stdout": buf.getvalue()}
        finally:
            sys.stdout, sys.argv = real_stdout, real_argv
        results[name]["s"] = round(time.monotonic() - started, 4)
    sys.stdout.write(json.dumps(results) + "\n")
