"""The module's arrays do not depend on NumPy's C API (the buffer protocol instead), so one build
works with NumPy 1 and 2: (1) the extension module loads and hands out its arrays in a process
where numpy cannot be imported at all; (2) the import-time check refuses a NumPy that reads them
wrongly, naming the versions. Usage: numpy_abi_test.py BIN_DIR SOURCE_DIR (PYTHONPATH=<build>/python).
"""
import glob
import os
import subprocess
import sys

import gs_testlib as t

# (1) No numpy in the process: load the .so directly (the package's __init__ imports numpy).
NO_NUMPY = r"""
import importlib.machinery, importlib.util, sys
sys.modules["numpy"] = None  # any `import numpy` now raises ImportError
path = sys.argv[1]
loader = importlib.machinery.ExtensionFileLoader("graphshard._graphshard", path)
spec = importlib.util.spec_from_file_location("graphshard._graphshard", path, loader=loader)
m = importlib.util.module_from_spec(spec)
loader.exec_module(m)
v = memoryview(m._probe_array())
assert (v.format, v.itemsize, v.nbytes, v.readonly, v.tolist()) == ("q", 8, 24, True, [1, 2, 3]), \
    (v.format, v.itemsize, v.nbytes, v.readonly, v.tolist())
print("ok", m.PYBIND11_VERSION)
"""


def module_path():
    for d in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        found = glob.glob(os.path.join(d, "graphshard", "_graphshard*.so"))
        if found:
            return found[0]
    t.fail("graphshard/_graphshard*.so not found on PYTHONPATH")


def main():
    t.Env().cleanup()  # the argument check every Python test makes; no work folder needed
    r = subprocess.run([sys.executable, "-c", NO_NUMPY, module_path()], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0 or not r.stdout.startswith("ok"):
        t.fail(f"the module needs numpy (or its arrays are wrong) without numpy:\n{r.stderr}")
    t.note(f"module without numpy: {r.stdout.strip()}")

    # (2) The import-time check: passes here, and refuses a probe read wrongly.
    import numpy as np
    import graphshard
    from graphshard import data
    probe = np.asarray(graphshard._graphshard._probe_array())
    if probe.tolist() != [1, 2, 3] or probe.flags.writeable:
        t.fail(f"probe read as {probe.tolist()}, writeable={probe.flags.writeable}")
    real = data._graphshard._probe_array
    data._graphshard._probe_array = lambda: memoryview(b"")
    try:
        data._check_numpy()
        t.fail("_check_numpy accepted a 0-byte probe")
    except ImportError as e:
        if np.__version__ not in str(e) or "pybind11" not in str(e):
            t.fail(f"the error does not name the versions: {e}")
        t.note(f"refused as expected: {e}")
    finally:
        data._graphshard._probe_array = real
    print("numpy_abi_test: ok")


if __name__ == "__main__":
    main()
