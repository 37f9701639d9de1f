"""pip install ./python (after deploy/build.sh): packages graphshard/*.py with the _graphshard
extension module the CMake build made (it links graphshard's C++ libraries, so CMake builds it,
not setuptools). The build folder: $GRAPHSHARD_BUILD_DIR, default ../build.

Works offline: there is no pyproject.toml, so pip uses the environment's setuptools rather than
downloading one (--no-build-isolation says so explicitly). No install_requires: pip would try to
download PyTorch; numpy and torch must be importable already. Debian's own python3 refuses pip
installs outside a virtual environment (PEP 668): python3 -m venv --system-site-packages VENV
first, or use PYTHONPATH=<build>/python, which needs no install (docs/PYTHON.md).
"""
import glob
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD_DIR = os.environ.get("GRAPHSHARD_BUILD_DIR", os.path.join(HERE, "..", "build"))


class BuildPyWithModule(build_py):
    def run(self):
        super().run()
        found = glob.glob(os.path.join(BUILD_DIR, "python", "graphshard", "_graphshard*.so"))
        if not found:
            raise SystemExit(f"graphshard: no _graphshard*.so under {BUILD_DIR}/python/graphshard: "
                             "run deploy/build.sh first (or set GRAPHSHARD_BUILD_DIR)")
        for module in found:
            shutil.copy(module, os.path.join(self.build_lib, "graphshard"))


class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # the wheel carries a compiled module: tag it for this platform
        return True


setup(
    name="graphshard",
    version="0.1.0",
    description="PyG-style loader over graphshard partition servers",
    packages=["graphshard"],
    python_requires=">=3.9",
    cmdclass={"build_py": BuildPyWithModule},
    distclass=BinaryDistribution,
)
