"""graphshard.LinkLoader: PyG's LinkNeighborLoader interface over the servers' link batches."""
from graphshard import pyg_args
from graphshard.loader import Loader


class LinkLoader(Loader):
    """Link-prediction minibatches of one edge split, sampled by the graphshard servers, as
    PyG's LinkNeighborLoader gives them: each batch holds batch_size positive edges of the
    split, neg_sampling's negatives per positive (same source, a drawn destination), and the
    sampled neighbourhood of every endpoint, the batch's positive edges (and their reverse)
    left out of message passing.

    edge_label_index: the edge type predicted, ('src', 'rel', 'dst') or graphshard's
        'src__rel__dst', or (edge type, None); None on a graph with one edge type. The
        supervision edges are the partition's edge split of that type (graphshard-partition
        --edge-split), chosen with split ("train", "val" or "test"); explicit edges (a tensor)
        raise ValueError, as does edge_label (the labels are 1 for the split's edges, 0 for
        negatives).
    neg_sampling: None, "binary", "triplet", {"mode": ..., "amount": k} or a PyG
        NegativeSampling (whole amounts, no weight); neg_sampling_ratio=k is "binary" with k.
    negatives: "uniform" (destinations drawn uniformly over the destination type) or "degree"
        (in proportion to training in-degree), graphshard-trainer's --neg-sampling.
    shuffle and equal_steps default to split == "train"; every other argument is
    graphshard.Loader's (registry / servers, num_neighbors, batch_size, seed, epoch, ranks,
    device, feature_store, ...), and PyG arguments it does not do raise ValueError naming them.

    Batches (Data, or HeteroData with these on the edge type / node types): "binary" or no
    negatives: edge_label_index [2, M] (rows of the batch's nodes, positives first, then
    negative j of positive i at P * (1 + j) + i) and edge_label [M] float (1, then 0); "triplet":
    src_index [P], dst_pos_index [P], dst_neg_index [P] or [P, amount]. Plus x, y, n_id,
    edge_index, num_sampled_nodes / num_sampled_edges as graphshard.Loader's. With several
    ranks each reads host-local servers' edges, as graphshard-trainer --task link.
    """

    _name = "graphshard.LinkLoader"

    def __init__(self, registry=None, servers=None, num_neighbors=(10, 5), edge_label_index=None,
                 edge_label=None, split="train", neg_sampling=None, neg_sampling_ratio=None,
                 negatives="uniform", batch_size=256, shuffle=None, **options):
        if "input_nodes" in options:
            raise TypeError(f"{self._name}() got an unexpected keyword argument 'input_nodes' "
                            f"(the seeds are edge_label_index's edges)")
        if edge_label is not None:
            raise ValueError("edge_label: not supported; the servers label the split's edges 1 "
                             "and negatives 0")
        if negatives not in ("uniform", "degree"):
            raise ValueError(f"negatives={negatives!r}: expected 'uniform' or 'degree'")
        if split not in ("train", "val", "test"):
            raise ValueError(f"split={split!r}: expected 'train', 'val' or 'test'")
        self._link_mode, self._neg_amount = pyg_args.negatives(neg_sampling, neg_sampling_ratio)
        self._edge_label_index = edge_label_index
        self._degree_negatives = negatives == "degree"
        self.neg_sampling = (self._link_mode, self._neg_amount) if self._link_mode else None
        super().__init__(registry, servers, split=split, num_neighbors=num_neighbors,
                         batch_size=batch_size, shuffle=shuffle, **options)

    def _choose_seeds(self):
        name = pyg_args.link_edge_type(self._edge_label_index, self.metadata)
        e = next(e for e in self.metadata["edge_types"] if e["name"] == name)
        self.edge_type = pyg_args.edge_key(name, e["src"], e["dst"])
        self.seed_type = None
        self._client.set_link(name, self._neg_amount, self._degree_negatives)
        return f"{self.split!r} edges of {name!r}"


__all__ = ["LinkLoader"]
