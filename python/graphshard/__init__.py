"""graphshard for Python: a PyG-style loader over graphshard partition servers.

    import graphshard
    loader = graphshard.Loader(registry="/path/to/registry", split="train",
                               num_neighbors=[15, 10, 5], batch_size=1024)
    for batch in loader:          # torch_geometric.data.Data / HeteroData when PyG is installed
        out = model(batch.x, batch.edge_index)[:batch.batch_size]

See docs/PYTHON.md. Errors from the servers raise graphshard.Error (a RuntimeError) with the
server's message.
"""
# torch first: loaded after our module (gRPC, protobuf, Abseil from the system), pip's PyTorch
# 2.11 aborted in its own import ("free(): invalid pointer"); in this order both load.
try:
    import torch  # noqa: F401
except ImportError:  # the loader's tensors need torch; host_id etc. do not
    pass
from graphshard._graphshard import Error, host_id, rendezvous, stream_shuffle_seed  # noqa: E402
from graphshard.loader import Loader
from graphshard.link_loader import LinkLoader
from graphshard.static_shapes import PadToStatic

__all__ = ["Error", "LinkLoader", "Loader", "PadToStatic", "host_id", "rendezvous", "stream_shuffle_seed"]
