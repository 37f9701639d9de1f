"""graphshard for Python: a PyG-style loader over graphshard partition servers.

    import graphshard
    loader = graphshard.Loader(registry="/path/to/registry", split="train",
                               num_neighbors=[15, 10, 5], batch_size=1024)
    for batch in loader:          # torch_geometric.data.Data / HeteroData when PyG is installed
        out = model(batch.x, batch.edge_index)[:batch.batch_size]

See docs/PYTHON.md. Errors from the servers raise graphshard.Error (a RuntimeError) with the
server's message.
"""
from graphshard._graphshard import Error, host_id, rendezvous, stream_shuffle_seed
from graphshard.loader import Loader

__all__ = ["Error", "Loader", "host_id", "rendezvous", "stream_shuffle_seed"]
