#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/), checked in.

  tests/fuzz/make_seeds.py BIN_DIR
BIN_DIR has graphshard-partition (a default build's bin/); it generates a 16-node products-like
graph (OGB layout), a 10-graph TU dataset and partitions of the first, and packs them into
inputs in each target's format (see the target's header comment). Requests and bulk frames are
encoded here by hand, after proto/graphshard.proto and transport/frame.h.
"""
import os
import struct
import subprocess
import sys
import tempfile

MARK = b"|GSFILE|"
HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def run(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)


# --- protobuf wire format (enough for the three requests) ---
def varint(v):
    v &= (1 << 64) - 1
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field_varint(n, v):
    return varint(n << 3) + varint(v)


def field_bytes(n, b):
    return varint((n << 3) | 2) + varint(len(b)) + b


def i64s(values):
    return b"".join(struct.pack("<q", v) for v in values)


def hop_item(edge_type, seeds, fanout, seed):
    return (field_bytes(1, edge_type.encode()) + field_bytes(2, i64s(seeds)) +
            field_varint(3, fanout) + field_varint(4, seed))


def sampling(fanouts, replace=False, disjoint=False, dtype=0, edge_fanouts=None):
    s = field_bytes(1, b"".join(varint(f) for f in fanouts))
    for etype, fs in (edge_fanouts or {}).items():
        lst = field_bytes(1, b"".join(varint(f) for f in fs))
        s += field_bytes(2, field_bytes(1, etype.encode()) + field_bytes(2, lst))
    if replace:
        s += field_varint(3, 1)
    if disjoint:
        s += field_varint(4, 1)
    if dtype:
        s += field_varint(5, dtype)
    return s


# --- bulk frames (transport/frame.h) ---
def frame(kind, arrays, request_id=7, answer=False, message=b"", status=0):
    table = b"".join(struct.pack("<Q", len(a)) for a in arrays)
    payload = message + table + b"".join(arrays)
    header = struct.pack("<IHHQIIIIQ", 0x54425347, 1, kind, request_id, status, len(message),
                         len(arrays), 1 if answer else 0, len(payload))
    assert len(header) == 40
    return header + payload


def name(s):
    return struct.pack("<I", len(s)) + s.encode()


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    part_bin = os.path.join(sys.argv[1], "graphshard-partition")
    tmp = tempfile.mkdtemp()
    ogb, tu = os.path.join(tmp, "ogb"), os.path.join(tmp, "tu")
    run(part_bin, "generate", "--kind", "products", "--seed", "1", "--out", ogb, "--num-nodes",
        "16", "--num-edges", "20", "--num-features", "2", "--num-classes", "3")
    run(part_bin, "generate", "--kind", "graphs", "--seed", "1", "--out", tu, "--format", "tu",
        "--num-graphs", "10", "--min-nodes", "4", "--max-nodes", "6")

    # ogb_reader: the eight files as plain text.
    import gzip
    files = ["raw/num-node-list", "raw/num-edge-list", "raw/edge", "raw/node-feat",
             "raw/node-label", "split/random/train", "split/random/valid", "split/random/test"]
    texts = [gzip.open(os.path.join(ogb, f + ".csv.gz")).read() for f in files]
    put("ogb_reader", "generated16", MARK.join(texts))
    put("ogb_reader", "nan_labels", MARK.join(texts[:4] + [b"nan\n" * 16] + texts[5:]))

    # tu_reader: A, graph_indicator, graph_labels, node_labels, node_attributes.
    def tu_file(suffix):
        with open(os.path.join(tu, "GRAPHS_" + suffix + ".txt"), "rb") as f:
            return f.read()
    a, ind, lab = tu_file("A"), tu_file("graph_indicator"), tu_file("graph_labels")
    n = ind.count(b"\n")
    put("tu_reader", "generated10", MARK.join([a, ind, lab, b"", b""]))
    put("tu_reader", "with_node_labels_attrs",
        MARK.join([a, ind, lab, b"".join(b"%d, 1\n" % (i % 3) for i in range(n)),
                   b"".join(b"%d.5, -1e3\n" % i for i in range(n))]))
    put("tu_reader", "tiny", MARK.join([b"1, 2\n2, 1\n", b"1\n1\n", b"0\n", b"", b""]))

    # partition_folder and npy_manifest: partitions of the OGB graph into 1 and 2 parts.
    for parts in (1, 2):
        out = os.path.join(tmp, "p%d" % parts)
        run(part_bin, "partition", "--input", ogb, "--parts", str(parts), "--method", "random",
            "--seed", "1", "--out", out)
        with open(os.path.join(out, "graphshard.json"), "rb") as f:
            manifest = f.read()
        sections = [manifest]
        for root, _, names in sorted(os.walk(out)):
            for fname in sorted(names):
                if fname.endswith(".npy"):
                    path = os.path.join(root, fname)
                    rel = os.path.relpath(path, out)
                    with open(path, "rb") as f:
                        body = f.read()
                    sections.append(rel.encode() + b"\n" + body)
                    if parts == 1:
                        put("npy_manifest", rel.replace("/", "_"), b"\x00" + body)
        put("partition_folder", "parts%d" % parts, MARK.join(sections))
        put("npy_manifest", "manifest%d" % parts, b"\x01" + manifest)

    # requests: first byte = part + 2 * message (0 one hop, 1 gather, 2 minibatch).
    et = "node__to__node"
    for part in (0, 1):
        put("requests", "onehop%d" % part, bytes([part]) +
            field_bytes(1, hop_item(et, [0, 1, 2, 9], 2, 5)))
        put("requests", "onehop_all_replace%d" % part, bytes([part]) +
            field_bytes(1, hop_item(et, [3, 4], -1, 1)) + field_varint(2, 1))
        put("requests", "gather%d" % part, bytes([2 + part]) +
            field_bytes(1, field_bytes(1, b"node") + field_bytes(2, i64s([0, 1, 5]))) +
            field_varint(2, 1))
        put("requests", "minibatch%d" % part, bytes([4 + part]) + field_bytes(2, i64s([0, 1])) +
            field_bytes(3, sampling([2, -1])) + field_varint(4, 3))
        put("requests", "minibatch_disjoint%d" % part, bytes([4 + part]) +
            field_bytes(2, i64s([1, 2, 3])) +
            field_bytes(3, sampling([3], replace=True, disjoint=True, dtype=2,
                                    edge_fanouts={et: [1]})))

    # bulk_frame: first byte = feature dtype of a FeatureBlocks answer, then the frame.
    meta = struct.pack("<BI", 0, 2) + struct.pack("<iQ", 2, 5) + name(et) + \
        struct.pack("<iQ", -1, 6) + name(et)
    put("bulk_frame", "onehop_request", b"\x00" + frame(1, [meta, i64s([0, 1]), i64s([2])]))
    gmeta = struct.pack("<II", 1, 1) + name("node")
    put("bulk_frame", "gather_request", b"\x00" + frame(2, [gmeta, i64s([0, 3, 4])]))
    put("bulk_frame", "hop_results", b"\x00" + frame(1, [i64s([1, 2]), i64s([4, 5, 6])],
                                                      request_id=1, answer=True))
    rows = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)
    put("bulk_frame", "feature_blocks", b"\x00" + frame(2, [i64s([2]), rows, i64s([1, -1])],
                                                         request_id=2, answer=True))
    put("bulk_frame", "error_answer", b"\x00" + frame(1, [], answer=True, message=b"no part",
                                                       status=3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
