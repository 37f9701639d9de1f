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
import subprocess
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
        r = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                            "import graphshard, graphshard._graphshard as m; "
                            "print(graphshard.__file__); print(m.__file__); "
                            "print(graphshard.stream_shuffle_seed(1, 0))"],
                           capture_output=True, text=True, timeout=120, cwd=env.work, env=pip_env)
        if r.returncode != 0:
            t.fail(f"import after pip install: {r.stderr}")
        init, module, seed = r.stdout.split()
        site = os.path.join(venv, "lib")
        if not (init.startswith(site) and module.startswith(site)):
            t.fail(f"graphshard imported from {init}, {module}, not the venv")
        import graphshard  # the build tree's (PYTHONPATH), for the same answer
        if int(seed) != graphshard.stream_shuffle_seed(1, 0):
            t.fail("the module pip built answers differently")
        t.note(f"ok: built by pip from the source tree, imported from {module}")
    finally:
        env.cleanup()


if __name__ == "__main__":
    sys.exit(main())
