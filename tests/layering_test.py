#!/usr/bin/env python3
"""Checks the layering rules of docs/STYLE.md on the source tree, from the #include lines.

Each top-level source folder (and server/engine) has the project folders it may include from
and the third-party families it must not include: common/ and server/engine/ are transport- and
Torch-free, nothing outside trainer/ sees Torch, CUDA or NCCL (client/, the trainer's
Torch-free half that python/ shares, included), and layers include only the layers below them:
client/ never includes trainer/, python/ never includes trainer/. A folder with sources but no rule fails the check, so that a new folder gets
its rule when it is made. Usage: layering_test.py SOURCE_DIR, or --self-test (the checker
finds a planted violation and passes a clean tree: a checker that cannot fail is no check).
"""
import pathlib
import re
import sys
import tempfile

GRPC = ("grpcpp/", "grpc/", "grpc++/")
PROTOBUF = ("google/protobuf/",)
GENERATED = ("proto/",)  # "proto/graphshard.pb.h", "proto/graphshard.grpc.pb.h"
TORCH = ("torch/", "ATen/", "c10/", "caffe2/", "gloo/")
CUDA = ("cuda", "nccl.h", "cuda_runtime")

# folder -> (project folders it may include, forbidden include prefixes)
RULES = {
    "common": (("common/",), GRPC + PROTOBUF + GENERATED + TORCH + CUDA),
    "shm": (("common/", "shm/"), GRPC + PROTOBUF + GENERATED + TORCH + CUDA),
    "partitioner": (("common/", "partitioner/"), GRPC + PROTOBUF + GENERATED + TORCH + CUDA),
    "server/engine": (("common/", "shm/", "server/engine/"),
                      GRPC + PROTOBUF + GENERATED + TORCH + CUDA),
    "rpc": (("common/", "proto/", "rpc/"), TORCH + CUDA),
    "transport": (("common/", "transport/"), GRPC + PROTOBUF + GENERATED + TORCH + CUDA),
    "server": (("common/", "shm/", "proto/", "rpc/", "transport/", "server/"), TORCH + CUDA),
    # The trainer's Torch-free half: the servers' client, plans, options, reports. No Torch,
    # CUDA or NCCL, and nothing of the LibTorch trainer above it.
    "client": (("common/", "shm/", "proto/", "rpc/", "client/"), TORCH + CUDA),
    # The LibTorch trainer: the only folder that may include Torch, CUDA and NCCL.
    "trainer": (("common/", "shm/", "proto/", "rpc/", "client/", "trainer/"), ()),
    # The Python module: the Torch-free client only (Python makes the tensors).
    "python": (("common/", "shm/", "rpc/", "client/", "python/"),
               GRPC + PROTOBUF + GENERATED + TORCH + CUDA),
}
# Folders that are not layers of the product (generated code, tests, docs, scripts).
UNCHECKED = {"proto", "tests", "deploy", "docs", "cmake", "build", "build-asan", ".git",
             ".devdeps", "out"}
SOURCE_SUFFIXES = {".h", ".cc", ".cu", ".cuh"}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
PROJECT_ROOTS = ("common/", "shm/", "partitioner/", "server/", "rpc/", "transport/", "client/",
                 "trainer/", "proto/", "python/", "tests/")


def rule_for(rel: pathlib.PurePosixPath):
    parts = rel.parts
    if len(parts) >= 3 and parts[0] == "server" and parts[1] == "engine":
        return "server/engine"
    return parts[0] if len(parts) >= 2 else None


def check(root: pathlib.Path) -> list[str]:
    problems = []
    seen_folders = set()
    for path in sorted(root.rglob("*")):
        rel = pathlib.PurePosixPath(path.relative_to(root).as_posix())
        if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        if rel.parts[0] in UNCHECKED or rel.parts[0].startswith("build"):
            continue
        folder = rule_for(rel)
        if folder is None:
            continue
        seen_folders.add(folder)
        if folder not in RULES:
            problems.append(f"{rel}: folder '{folder}/' has no layering rule in "
                            f"tests/layering_test.py (add one)")
            continue
        allowed, forbidden = RULES[folder]
        for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            if inc.startswith("../") or "/../" in inc:
                problems.append(f"{rel}:{lineno}: relative include '{inc}' (include from the "
                                f"repository root)")
            bad = next((p for p in forbidden if inc.startswith(p)), None)
            if bad is not None:
                problems.append(f"{rel}:{lineno}: {folder}/ must not include '{inc}'")
                continue
            if inc.startswith(PROJECT_ROOTS) and not inc.startswith(allowed):
                # proto/ headers are generated: the GENERATED rule above already named them.
                problems.append(f"{rel}:{lineno}: {folder}/ may include only "
                                f"{', '.join(allowed)}; found '{inc}'")
    if not seen_folders:
        problems.append(f"{root}: no source folders found (wrong SOURCE_DIR?)")
    return problems


def self_test() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)

        def write(rel, text):
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)

        write("common/a.h", '#include "common/b.h"\n#include <vector>\n')
        write("server/engine/e.cc", '#include "common/a.h"\n#include "server/engine/e.h"\n')
        write("server/s.cc", '#include <grpcpp/grpcpp.h>\n#include "server/engine/e.h"\n')
        write("trainer/t.cc", '#include <torch/torch.h>\n#include "client/options.h"\n')
        write("client/c.cc", '#include "rpc/channel.h"\n#include "client/options.h"\n')
        write("python/p.cc", '#include "client/options.h"\n')
        if check(root):
            print("self-test: a clean tree was reported:", check(root))
            return 1
        cases = {
            "common/bad.cc": '#include <grpcpp/grpcpp.h>\n',
            "server/engine/bad.cc": '#include "proto/graphshard.pb.h"\n',
            "server/bad.cc": '#include <torch/torch.h>\n',
            "partitioner/bad.cc": '#include "server/engine/e.h"\n',
            "common/bad2.cc": '#include "../server/x.h"\n',
            "transport/bad.cc": '#include <grpcpp/grpcpp.h>\n',
            "transport/bad2.cc": '#include "server/engine/e.h"\n',
            "newfolder/x.cc": '#include <vector>\n',
            "client/bad.cc": '#include <torch/torch.h>\n',
            "client/bad2.cc": '#include "trainer/model.h"\n',
            "client/bad3.cc": '#include <cuda_runtime.h>\n',
            "python/bad.cc": '#include "trainer/train.h"\n',
            "server/bad2.cc": '#include "client/options.h"\n',
        }
        for rel, text in cases.items():
            write(rel, text)
            found = check(root)
            (root / rel).unlink()
            if not any(p.startswith(rel) for p in found):
                print(f"self-test: violation in {rel} not found ({found})")
                return 1
    print("self-test: ok")
    return 0


def main() -> int:
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        return self_test()
    if len(sys.argv) != 2:
        print("usage: layering_test.py SOURCE_DIR | --self-test", file=sys.stderr)
        return 2
    problems = check(pathlib.Path(sys.argv[1]))
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"layering: {len(problems)} violation(s)", file=sys.stderr)
        return 1
    print("layering: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
