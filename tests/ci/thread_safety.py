#!/usr/bin/env python3
"""Checks the lock annotations (ABSL_GUARDED_BY & co., docs/STYLE.md) with clang's -Wthread-safety.

Compile only (-fsyntax-only): every C++ file of graphshard's own sources in a build's
compile_commands.json (generated protobuf code left out) that uses a lock or an annotation in
itself or in a graphshard header it includes (per Ninja's dependency log of that build; all
files if there is none) is parsed again by clang++ with the same flags plus -Wthread-safety
-Werror=thread-safety. absl::Mutex is the only lock type with annotations here (libstdc++'s
std::mutex has none) and Abseil's own headers are system headers, so the other files cannot
warn. The build must be complete (its generated headers and dependency log). Other warnings are
not errors here (gcc's build owns them).

  tests/ci/thread_safety.py BUILD_DIR [-j N] [--clang clang++] [--checked-by OTHER_BUILD]

--checked-by: a complete clang build whose compile commands carry -Wthread-safety and -Werror
(the `asan-ubsan` preset under CI): a file that build compiled so has passed the analysis
already and is not parsed again here (the summary counts them).
Exit status 0 when every file passes, 1 otherwise (the diagnostics are printed), 2 on bad use.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import time

# Files clang 14 cannot parse, for reasons that are not ours, and why. They are listed (not
# silently passed) in the summary; one that parses again is reported so that it comes off.
CANNOT_PARSE = {
    # Debian's LibTorch 1.13 headers under clang 14 + libstdc++ 12 in C++20: std::vector of the
    # incomplete c10::IValue is instantiated eagerly (constexpr vector), "arithmetic on a
    # pointer to an incomplete type". gcc accepts them.
    "trainer/input_pipeline.cc": "LibTorch headers do not compile with clang 14 in C++20",
    "trainer/inference.cc": "LibTorch headers do not compile with clang 14 in C++20",
    "tests/trainer/trim_test.cc": "LibTorch headers do not compile with clang 14 in C++20",
    "trainer/feature_store.cc": "LibTorch headers do not compile with clang 14 in C++20",
    # No lock of its own: it reaches one through input_pipeline.h (TensorSource) and the client.
    "trainer/gpu_sampler.cc": "LibTorch headers do not compile with clang 14 in C++20",
    "tests/trainer/feature_store_test.cc": "LibTorch headers do not compile with clang 14 in C++20",
}

# Flags of gcc that clang does not know or that do not matter for a syntax check.
DROP_PREFIXES = ("-fsanitize", "-fno-sanitize", "-flto", "-fno-fat-lto", "-Werror")


def clang_command(entry, clang, source_root):
    args = entry.get("arguments") or shlex.split(entry["command"])
    out = [clang]
    skip = False
    for i, a in enumerate(args):
        if i == 0:
            continue
        if skip:
            skip = False
            continue
        if a == "-o":
            skip = True
            continue
        if a == "-include" and i + 1 < len(args) and args[i + 1].endswith("cmake_pch.hxx"):
            skip = True  # gcc's precompiled <torch/torch.h> (trainer/CMakeLists.txt): not clang's
            continue
        if a == "-Winvalid-pch":
            continue
        if a in ("-c", "-MD") or a.startswith(DROP_PREFIXES):
            continue
        if a in ("-MF", "-MT", "-MQ"):
            skip = True
            continue
        out.append(a)
    out += ["-fsyntax-only", "-Wno-everything", "-Wthread-safety", "-Werror=thread-safety",
            # Warnings about the annotations themselves (a GUARDED_BY on the wrong kind of member).
            "-Wthread-safety-attributes"]
    return out


USES_LOCKS = re.compile(r"absl::Mutex|MutexLock|absl::CondVar|ABSL_[A-Z_]*(GUARDED|LOCK|ACQUIRE"
                        r"|RELEASE|CAPABILITY|ASSERT_)")


def objects_using_locks(build_dir, source_root):
    """Object files (relative to build_dir) whose source or graphshard headers use a lock or an
    annotation, from `ninja -t deps`; None if Ninja has no dependency log there."""
    try:
        r = subprocess.run(["ninja", "-C", build_dir, "-t", "deps"], capture_output=True,
                           text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    uses = {}  # project file -> whether it uses locks

    def file_uses(path):
        path = os.path.realpath(os.path.join(build_dir, path))
        if not path.startswith(source_root + os.sep) or path.startswith(build_dir + os.sep):
            return False
        if path not in uses:
            try:
                with open(path, errors="replace") as f:
                    uses[path] = bool(USES_LOCKS.search(f.read()))
            except OSError:
                uses[path] = False
        return uses[path]

    found, current = set(), None
    for line in r.stdout.splitlines():
        if line and not line[0].isspace():
            current = line.split(":", 1)[0]
        elif current and current not in found and file_uses(line.strip()):
            found.add(current)
    return found if r.stdout else None


def output_of(entry):
    args = entry.get("arguments") or shlex.split(entry["command"])
    return args[args.index("-o") + 1] if "-o" in args else None


def read_compile_commands(path):
    """The entries of a compile_commands.json; None (said on stderr) if it cannot be read."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"thread_safety: cannot read {path}: {e}", file=sys.stderr)
        return None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("build_dir")
    p.add_argument("-j", type=int, default=os.cpu_count() or 2)
    p.add_argument("--clang", default="clang++")
    p.add_argument("--checked-by", default=None)
    a = p.parse_args()
    source_root = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
    build_dir = os.path.realpath(a.build_dir)
    db_path = os.path.join(build_dir, "compile_commands.json")
    db = read_compile_commands(db_path)
    if db is None:
        return 2
    checked_elsewhere = set()
    if a.checked_by:
        other_db = read_compile_commands(
            os.path.join(os.path.realpath(a.checked_by), "compile_commands.json"))
        if other_db is None:
            return 2
        for e in other_db:
            args = e.get("arguments") or shlex.split(e["command"])
            clang = "clang" in os.path.basename(args[0])
            if clang and "-Wthread-safety" in args and "-Werror" in args:
                checked_elsewhere.add(os.path.realpath(os.path.join(e["directory"], e["file"])))
    with_mutex = objects_using_locks(build_dir, source_root)
    entries = {}  # one check per file (a file compiled for two targets is checked once)
    skipped = 0
    already = set()  # files the --checked-by build compiled with the analysis as errors
    for e in db:
        path = os.path.realpath(os.path.join(e["directory"], e["file"]))
        if not path.startswith(source_root + os.sep) or path.startswith(build_dir + os.sep):
            continue  # generated code (proto/*.pb.cc) and anything outside the tree
        if not path.endswith(".cc"):
            continue
        if with_mutex is not None and output_of(e) not in with_mutex:
            skipped += 1
            continue
        if path in checked_elsewhere:
            already.add(os.path.relpath(path, source_root))
            continue
        entries.setdefault(os.path.relpath(path, source_root), e)
    if not entries and not already:
        print(f"thread_safety: no graphshard sources in {db_path}", file=sys.stderr)
        return 2

    def check(item):
        rel, e = item
        r = subprocess.run(clang_command(e, a.clang, source_root), cwd=e["directory"],
                           capture_output=True, text=True)
        return rel, r.returncode, r.stderr

    start = time.time()
    failed, unparsed = [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.j)) as pool:
        for rel, rc, err in pool.map(check, sorted(entries.items())):
            if rel in CANNOT_PARSE:
                if rc == 0 or "-Wthread-safety" in err:
                    print(f"thread_safety: {rel} parses now: take it off CANNOT_PARSE",
                          file=sys.stderr)
                    if rc != 0:
                        failed.append(rel)
                        sys.stderr.write(err)
                else:
                    unparsed.append(rel)
                continue
            if rc != 0:
                failed.append(rel)
                sys.stderr.write(err)
    for rel in unparsed:
        print(f"thread_safety: NOT CHECKED: {rel}: {CANNOT_PARSE[rel]}", file=sys.stderr)
    print(f"thread_safety: {len(entries) - len(failed) - len(unparsed)}/{len(entries)} files "
          f"that use locks pass -Wthread-safety, {len(unparsed)} not checked "
          f"({skipped} compile commands without any; "
          + (f"{len(already)} more passed it in {a.checked_by}'s build; " if a.checked_by else "")
          + f"{time.time() - start:.0f} s)", file=sys.stderr)
    if failed:
        print("thread_safety: FAILED: " + " ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
