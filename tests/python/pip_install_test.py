#!/usr/bin/env python3
"""`pip install ./python` works offline: into a fresh virtual environment (with the system's
site packages, for numpy and torch), --no-index (no package index at all), from a copy of
python/ (pip writes build files next to setup.py) with GRAPHSHARD_BUILD_DIR pointing at this
build; then `import graphshard` outside the source and build trees finds the installed copy,
module included. Usage: pip_install_test.py BIN_DIR SOURCE_DIR."""
import os
import shutil
import sys

import gs_testlib as t


def main():
    env = t.Env()
    try:
        build_dir = os.path.dirname(env.bin)
        venv = os.path.join(env.work, "venv")
        t.run([sys.executable, "-m", "venv", "--system-site-packages", venv], 120)
        src = os.path.join(env.work, "python")
        shutil.copytree(os.path.join(env.src, "python"), src,
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        pip_env = dict(os.environ, GRAPHSHARD_BUILD_DIR=build_dir, PIP_DISABLE_PIP_VERSION_CHECK="1")
        pip_env.pop("PYTHONPATH", None)
        t.run([os.path.join(venv, "bin", "pip"), "install", "--no-index", src], 300, env=pip_env)
        module = t.expect_installed(env, venv, pip_env)
        t.note(f"ok: installed offline, imported from {module}")
    finally:
        env.cleanup()


if __name__ == "__main__":
    sys.exit(main())
