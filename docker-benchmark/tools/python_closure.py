"""Prints, one per line, the absolute paths of the files a Python program needs to run
each REQUIREMENT (e.g. "moto[s3]" flask flask-cors) with this interpreter: the standard library (without
its tests, IDLE, tkinter and the bundled pip wheels) and every file of the named
distribution and of each distribution it requires, transitively, with their extras.

build-offline.sh copies these files into an image at the same paths, so the image's
Python finds them exactly as this one does. Requirements whose markers do not apply
to this interpreter are skipped; a required distribution that is not installed is
reported on stderr and skipped (moto imports most of its optional parts lazily).
"""

import importlib.metadata as metadata
import os
import sys
import sysconfig

try:
    from packaging.requirements import Requirement
except ImportError:  # pip carries its own copy
    from pip._vendor.packaging.requirements import Requirement

# Parts of the standard library no server here imports.
STDLIB_SKIPPED = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "site-packages", "lib2to3"}
# A bound on the walk: moto's S3 server needs about 25 distributions.
DISTRIBUTIONS_MAX = 400


def stdlib_files():
    for key in ("stdlib", "platstdlib"):
        top = sysconfig.get_paths()[key]
        for folder, subfolders, files in os.walk(top):
            if folder == top:
                subfolders[:] = [d for d in subfolders if d not in STDLIB_SKIPPED]
            for name in files:
                yield os.path.join(folder, name)


def normalized(name):
    return name.lower().replace("_", "-").replace(".", "-")


def closure(requirements):
    pending = [Requirement(requirement) for requirement in requirements]
    seen = {}
    while pending:
        assert len(seen) <= DISTRIBUTIONS_MAX, "requirement closure too large"
        req = pending.pop()
        key = normalized(req.name)
        extras = set(req.extras)
        if key in seen and extras <= seen[key][1]:
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            print(f"python_closure: {req.name} is not installed, skipped", file=sys.stderr)
            continue
        done_extras = seen.get(key, (dist, set()))[1] | extras
        seen[key] = (dist, done_extras)
        for line in dist.requires or []:
            sub = Requirement(line)
            if sub.marker is not None:
                environments = [{"extra": extra} for extra in done_extras] or [{"extra": ""}]
                if not any(sub.marker.evaluate(env) for env in environments):
                    continue
            pending.append(sub)
    return [dist for dist, _ in seen.values()]


def main():
    paths = set(stdlib_files())
    for dist in closure(sys.argv[1:]):
        for file in dist.files or []:
            path = os.path.realpath(dist.locate_file(file))
            if os.path.isfile(path):
                paths.add(path)
    for path in sorted(paths):
        print(path)


if __name__ == "__main__":
    main()
