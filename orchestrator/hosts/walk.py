"""The one file walk both hosts use: `LocalHost.find` calls it, `SshHost.find` sends this file to `python3 -`.

Stdlib-only and Python >= 3.8 because it runs as-is on the investigated machine. The code goes to `python3 -` on
stdin; its parameters go in as one JSON argument (`python3 - '{"root": ...}'`), never into the code.
"""

import fnmatch
import json
import os
import sys


def walk(root, pattern="*", max_results=10000):
    """Sorted paths of non-directories under root whose basename matches pattern, at most max_results.

    Returns (paths, truncated). Directories are descended, not listed; symlinked directories are not followed.
    """
    found = []
    if os.path.isfile(root):
        return ([root] if fnmatch.fnmatchcase(os.path.basename(root), pattern) else []), False
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        # a symlink to a directory sits in dirnames and would otherwise vanish from the listing
        names = sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))])
        for name in names:
            if fnmatch.fnmatchcase(name, pattern):
                if len(found) >= max_results:
                    return sorted(found), True
                found.append(os.path.join(dirpath, name))
    return sorted(found), False


if __name__ == "__main__":
    params = json.loads(sys.argv[1])
    paths, truncated = walk(params["root"], params.get("pattern", "*"), int(params.get("max_results", 10000)))
    sys.stdout.write(json.dumps({"paths": paths, "truncated": truncated}))
