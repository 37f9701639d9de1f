#!/usr/bin/env python3
"""`pip install ./python` from a clean source tree builds the module itself: a copy of the
source tree (no build folder), a fresh virtual environment (with the system's site packages,
for numpy and torch), `pip install --no-index --no-build-isolation` without GRAPHSHARD_BUILD_DIR
and without PYTHONPATH: setup.py configures CMake with that venv's Python (no LibTorch, no tests)
and builds the module; then `import graphshard` outside the trees finds the installed copy,
whose answers equal the build tree's module's. Usage: pip_install_source_test.py BIN_DIR
SOURCE_DIR."""
import os
import shutil
import sys

import gs_testlib as t

IGNORED = shutil.ignore_patterns(".git", "build", "build-*", ".devdeps", "*.egg-info",
                                 "__pycache__", "*-out", "Testing")


def main():
    env = t.Env()
    try:
        tree = os.path.join(env.work, "graphshard")
        shutil.copytree(env.src, tree, ignore=IGNORED, symlinks=True)
        venv = os.path.join(env.work, "venv")
        t.run([sys.executable, "-m", "venv", "--system-site-packages", venv], 120)
        pip_env = {k: v for k, v in os.environ.items()
                   if k not in ("PYTHONPATH", "GRAPHSHARD_BUILD_DIR")}
        pip_env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        t.run([os.path.join(venv, "bin", "pip"), "install", "--no-index", "--no-build-isolation",
               os.path.join(tree, "python")], 1500, env=pip_env)
        if not os.path.isdir(os.path.join(tree, "python", "build-module")):
            t.fail("pip install did not build the module (no python/build-module)")
        module = t.expect_installed(env, venv, pip_env)
        t.note(f"ok: built by pip from the source tree, imported from {module}")
    finally:
        env.cleanup()


if __name__ == "__main__":
    sys.exit(main())
