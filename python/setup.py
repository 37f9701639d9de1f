"""pip install ./python: builds the _graphshard extension module with CMake (it links graphshard's
C++ libraries, so CMake builds it, not setuptools) and packages it with graphshard/*.py.

From a clean clone, `pip install --no-build-isolation ./python` configures the source tree one
level up (this folder's parent) in python/build-module with the Python that runs pip, no
LibTorch, no tests, and builds the module alone. pybind11's headers: those of the caller's
PyTorch (torch/include), else the `pybind11` package, else the system's (pybind11-dev); the
module uses no NumPy C API, so any of them works with NumPy 1 and 2. The C++ build needs what
deploy/install-deps.sh installs (gRPC, Protobuf, Abseil, CMake; on the GPU machine the carried
.devdeps: pass GRAPHSHARD_CMAKE_ARGS="$DEVICE_CMAKE_ARGS"). GRAPHSHARD_BUILD_DIR=<build folder>
instead packages the module an existing build made (deploy/build.sh: build/).

Works offline: there is no pyproject.toml, so pip uses the environment's setuptools rather than
downloading one (--no-build-isolation says so explicitly). No install_requires: pip would try to
download PyTorch; numpy and torch must be importable already. Debian's own python3 refuses pip
installs outside a virtual environment (PEP 668): python3 -m venv --system-site-packages VENV
first, or use PYTHONPATH=<build>/python, which needs no install (docs/PYTHON.md).
"""
import glob
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def pybind11_include():
    """The caller's pybind11: PyTorch's copy, else the pybind11 package, else None (CMake then
    looks in the system's include folders)."""
    try:
        import torch  # noqa: F401  (only for its folder)
        inc = os.path.join(os.path.dirname(torch.__file__), "include")
        if os.path.exists(os.path.join(inc, "pybind11", "pybind11.h")):
            return inc
    except ImportError:
        pass
    try:
        import pybind11
        return pybind11.get_include()
    except ImportError:
        return None


def cmake_build():
    """Configures and builds the module alone; returns the build folder."""
    if not os.path.exists(os.path.join(ROOT, "CMakeLists.txt")):
        raise SystemExit(f"graphshard: {ROOT} is not graphshard's source tree: pip install "
                         "./python from a clone (or set GRAPHSHARD_BUILD_DIR to a build)")
    if shutil.which("cmake") is None:
        raise SystemExit("graphshard: building the module needs cmake (deploy/install-deps.sh)")
    build = os.path.join(HERE, "build-module")
    args = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
            "-DGRAPHSHARD_BUILD_TRAINER=OFF", "-DGRAPHSHARD_BUILD_TESTS=OFF",
            "-DGRAPHSHARD_BUILD_BENCH=OFF", "-DGRAPHSHARD_BUILD_PYTHON=ON",
            f"-DGRAPHSHARD_PYTHON={sys.executable}"]
    if shutil.which("ninja") and not os.path.exists(os.path.join(build, "Makefile")):
        args += ["-G", "Ninja"]
    inc = pybind11_include()
    if inc:
        args.append(f"-DGRAPHSHARD_PYBIND11_INCLUDE_DIR={inc}")
    args += shlex.split(os.environ.get("GRAPHSHARD_CMAKE_ARGS", ""))
    print("graphshard:", " ".join(args), flush=True)
    subprocess.check_call(args)
    subprocess.check_call(["cmake", "--build", build, "--target", "graphshard_python_module",
                           "--parallel", str(os.cpu_count() or 2)])
    return build


class BuildPyWithModule(build_py):
    def run(self):
        super().run()
        build_dir = os.environ.get("GRAPHSHARD_BUILD_DIR") or cmake_build()
        found = glob.glob(os.path.join(build_dir, "python", "graphshard", "_graphshard*.so"))
        if not found:
            raise SystemExit(f"graphshard: no _graphshard*.so under {build_dir}/python/graphshard "
                             "(the CMake output above says why)")
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
