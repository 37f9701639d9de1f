"""graphshard.Loader: PyG's NeighborLoader interface over graphshard's partition servers."""
import os
import queue
import threading
import time

import hashlib

from graphshard import _graphshard
from graphshard import data as _data
from graphshard import tiers as _tiers
from graphshard import pyg_args


def _dist():
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - a PyTorch without distributed
        return None
    return dist if dist.is_available() and dist.is_initialized() else None


class Loader:
    """Minibatches of one split, sampled by the graphshard servers.

    registry / servers: where the servers are (a --registry folder, or ["host:port", ...] with
        index = part), as for graphshard-trainer.
    split: "train", "val" or "test" (the seeds of the partition's split); default "train"
        unless input_nodes is given.
    input_nodes: the seeds instead of a split, as NeighborLoader's: node ids (tensor, array or
        list of graphshard's global ids, a batch's n_id), a boolean mask over a type's nodes,
        ("type", ids or mask), ("type", None) or "type" (every node of the type); any node type
        may seed (batch_size and y are then on that type). Ids must be distinct. With several
        ranks, give every rank the same input_nodes: the loader splits them host-locally as it
        splits a split (each server gets the ones its part owns). shuffle then defaults to False
        and equal_steps to shuffle, as NeighborLoader's shuffle does.
    num_neighbors: fanout per hop (-1 = every neighbor), as PyG's NeighborLoader.
    batch_size, shuffle (default: split == "train"), replace: as NeighborLoader.
    seed, epoch: batches are a function of (seed, epoch, batch index), the same as
        graphshard-trainer --seed SEED gives in that epoch. `epoch` is the first epoch's number;
        each complete pass over the loader moves to the next epoch (a new shuffle, as
        NeighborLoader reshuffles every pass); set_epoch(e) sets it, as DistributedSampler.
    equal_steps (default: split == "train"): every rank gets the all-ranks maximum of steps (the
        server wraps around its shuffled seeds with full batches), so that DDP-style collectives
        per step never hang. Off: each rank has its own count (evaluation counts every seed once).
    rank, world_size: default torch.distributed's when it is initialized (mp.spawn), else
        RANK / WORLD_SIZE (SLURM_PROCID / SLURM_NTASKS) as graphshard-trainer reads them; RANK and
        WORLD_SIZE, where set, must agree (unless process_group is a subgroup). With world_size > 1, torch.distributed must be
        initialized (the ranks all-gather their host ids and step counts through it, in the
        constructor).
    server_wait_s, rpc_timeout_s, stall_timeout_s: as graphshard-trainer's --server-wait-s (how
        long to wait for a live server of a part, at the start and after a failure),
        --rpc-timeout-s (every call's deadline) and --stall-timeout-s (a stream that waits longer
        for its next batch is stalled: a hung server raises graphshard.Error naming it after
        stall_timeout_s, not after rpc_timeout_s).
    feature_dtype: "float32", "float16" or "bfloat16" on the wire (and in the batch's x).
    assignment: which servers of its host this rank reads, as graphshard-trainer's --assignment:
        "part" (rank i of a host reads its part i mod P) or "spread" (every server of the host,
        1/T of each part's seeds for T ranks there).
    feature_store: "server" (each batch carries its rows, as NeighborLoader's x) or "device":
        the loader reads every node's feature rows from the servers once, at construction, onto
        `device` (the CPU without one), in feature_dtype, and the servers send batches without
        rows; x is gathered there by n_id (as graphshard-trainer --feature-store device, and as
        PyG with data.x on the GPU). The whole graph's features then live on the device; the
        servers only sample. y holds the seeds' labels (the first batch_size rows) and -1 for
        the other nodes (NeighborLoader's y has every node's label; training uses the seeds').
        "auto": "device" when `device` is a GPU with at least twice the rows' bytes free, else
        "server" (graphshard-trainer's default, --feature-store auto); the choice is in
        loader.feature_store. The default stays "server": batches then look like
        NeighborLoader's (x and y of every node).
    device_cache_mib: with feature_store="device" (or auto's choice of it), the tiered store of
        graphshard-trainer --device-cache-mib: where every row does not fit this many MiB (they
        include the tier's map, 4 bytes a node), only the rows this rank's batches visit most
        (counted in a pre-sampling pass over its own first-epoch batches, ids only, at construction)
        are put on `device`; every row stays in host memory (page-locked on a GPU) and the rest of
        each batch's x is gathered there and copied. x is the same as with every row on the device.
        loader.feature_tiers reports the device hit rate and the MiB read from host memory. None
        (default): every row on the device.
    max_held_batches: batches of this loader alive at once (each is a shared-memory segment of
        the server's ring; keep more and the server waits up to 1 s per batch for one back).
    output: "auto" (PyG's Data / HeteroData when torch_geometric imports, else graphshard's
        plain Batch / HeteroBatch with the same field names), "pyg" or "plain".
    device, prefetch: with a device, background threads read `prefetch` steps ahead; on a CUDA
        device they also copy each batch there on a side stream, by DMA straight out of the
        shared memory (the ring segments are page-locked with PyTorch's CUDA runtime, as
        graphshard-trainer --h2d registered), and the training stream waits for that copy on the
        GPU. Without a device (the default), batches are read when asked and stay in shared
        memory: batch.to(device) is then the user's copy, as with NeighborLoader.
        Two threads read ahead: one takes batches from the servers (the module's next(): reading
        and checking each batch, the GIL released), the other builds them on the device (copy,
        transform; Python). loader.read_ahead_cpu_s: the CPU seconds both have spent so far;
        loader.build_cpu_s: those spent assembling batches in Python (the GIL held).

    transform: as NeighborLoader's, a callable applied to each batch (it returns the batch);
        with a device it runs in the read-ahead builder thread, on the copy's side stream, after the
        copy (its GPU work is then off the training loop's thread and stream), else when the
        batch is asked for. graphshard.PadToStatic pads batches to fixed shapes (CUDA graphs).

    Other NeighborLoader / DataLoader arguments (num_workers, time_attr, ...) are
    accepted only with their PyG default values (they change nothing then); any other value
    raises ValueError naming the argument (graphshard/pyg_args.py says why for each).

    Iterating yields one batch per step; a rank with no seeds at all gets None steps (it must
    still join the step's collectives). Errors raise graphshard.Error naming the server.
    """

    _name = "graphshard.Loader"
    _link_mode = None  # LinkLoader: its batches' layout (data.build)

    def __init__(self, registry=None, servers=None, split=None, num_neighbors=(10, 5),
                 batch_size=256, shuffle=None, replace=False, seed=0, epoch=1,
                 equal_steps=None, rank=None, world_size=None, process_group=None,
                 feature_dtype="float32", max_held_batches=8, server_wait_s=60.0,
                 rpc_timeout_s=60.0, stall_timeout_s=30.0, output="auto", device=None, prefetch=2,
                 assignment="part", feature_store="server", input_nodes=None,
                 device_cache_mib=None, transform=None, **pyg_kwargs):
        pyg_args.refuse_unsupported(pyg_kwargs, self._name)
        if transform is not None and not callable(transform):
            raise ValueError(f"transform={transform!r}: expected a callable taking and returning "
                             f"a batch")
        self.transform = transform
        if input_nodes is not None and split is not None:
            raise ValueError(f"input_nodes and split={split!r}: give one (input_nodes are the "
                             f"seeds instead of a split)")
        self._input_nodes = input_nodes
        training = input_nodes is None and split in (None, "train")
        if input_nodes is not None:  # NeighborLoader's default; equal steps when training
            training = bool(shuffle)
            split = "train"  # unused: the seeds are input_nodes
        split = "train" if split is None else split
        if (registry is None) == (servers is None):
            raise ValueError("give exactly one of registry=DIR and servers=[host:port, ...]")
        if output not in ("auto", "pyg", "plain"):
            raise ValueError(f"output={output!r}: expected 'auto', 'pyg' or 'plain'")
        if output == "pyg" and not _data.pyg_available():
            raise ImportError("output='pyg' but torch_geometric is not importable")
        self._pyg = _data.pyg_available() if output == "auto" else output == "pyg"
        self._group = process_group
        dist = _dist()
        if rank is None or world_size is None:
            if dist is not None:  # e.g. mp.spawn + init_process_group(rank=r, world_size=w)
                found = {"rank": dist.get_rank(process_group),
                         "world_size": dist.get_world_size(process_group)}
            else:
                found = _graphshard.rendezvous()  # as graphshard-trainer reads the environment
            rank = found["rank"] if rank is None else rank
            world_size = found["world_size"] if world_size is None else world_size
        self.rank, self.world_size = int(rank), int(world_size)
        self.split = split if input_nodes is None else None
        self.batch_size = int(batch_size)
        self.shuffle = training if shuffle is None else bool(shuffle)
        self.equal_steps = training if equal_steps is None else bool(equal_steps)
        self.epoch = int(epoch)
        if self.world_size > 1:
            if dist is None:
                raise RuntimeError(
                    f"graphshard.Loader: world_size {self.world_size} but torch.distributed is "
                    "not initialized (call torch.distributed.init_process_group first: the "
                    "ranks exchange host ids and step counts through it)")
            if dist.get_world_size(process_group) != self.world_size or \
                    dist.get_rank(process_group) != self.rank:
                raise RuntimeError(
                    f"graphshard.Loader: rank {self.rank} of {self.world_size} (from the "
                    f"arguments) but torch.distributed says rank "
                    f"{dist.get_rank(process_group)} of {dist.get_world_size(process_group)}")
        for var, value in (("RANK", self.rank), ("WORLD_SIZE", self.world_size)):
            if process_group is None and os.environ.get(var, str(value)) != str(value):
                raise RuntimeError(f"graphshard.Loader: {var}={os.environ[var]} in the environment "
                                   f"but the loader is rank {self.rank} of {self.world_size}")
        self._client = _graphshard.Client(
            registry=os.fspath(registry) if registry is not None else "",
            servers=list(servers) if servers is not None else [], split=split,
            fanouts=[int(f) for f in num_neighbors], batch_size=self.batch_size,
            shuffle=self.shuffle, replace=bool(replace), seed=int(seed),
            feature_dtype=feature_dtype, rank=self.rank, world_size=self.world_size,
            server_wait_s=float(server_wait_s), rpc_timeout_s=float(rpc_timeout_s),
            max_held_batches=int(max_held_batches), assignment=str(assignment),
            feature_store=str(feature_store), stall_timeout_s=float(stall_timeout_s))
        self.metadata = self._client.metadata()
        self.seed_type = self.metadata["target_type"]
        what = self._choose_seeds()  # bad seeds are refused before any rows are read
        self.device = None
        self.read_ahead_cpu_s = 0.0  # CPU seconds of the read-ahead threads, all epochs
        self.build_cpu_s = 0.0  # CPU seconds spent assembling batches, all epochs
        self.prefetch = int(prefetch)
        self.cuda_host_registered = False
        if device is not None:
            import torch
            self.device = torch.device(device)
            if self.prefetch < 1:
                raise ValueError(f"prefetch={prefetch}: must be >= 1 with a device")
            if self.device.type == "cuda":
                if self.device.index is None:
                    self.device = torch.device("cuda", torch.cuda.current_device())
                torch.cuda.init()  # loads the CUDA runtime the ring segments are registered with
                self.cuda_host_registered = self._client.register_cuda_host()
        self.feature_store = self._resolve_feature_store(str(feature_store))
        if self.feature_store == "device" and str(feature_store) == "auto":
            self._client.set_without_features(True)
        cache_rows = self._device_cache_rows(device_cache_mib, feature_dtype)
        self._rows = self._load_rows(feature_dtype, cache_rows is not None) \
            if self.feature_store == "device" else None
        hosts = self._all_gather(_graphshard.host_id())
        self.server_hosts = self._client.server_hosts()
        self._client.assign(hosts)
        natural = self._client.natural_steps()
        self._steps = max(self._all_gather(natural)) if self.equal_steps else natural
        if self._steps == 0 and self.equal_steps:
            raise RuntimeError(f"{self._name}: no rank has any seed ({what})")
        if cache_rows is not None:
            self._tier_rows(cache_rows)

    def _choose_seeds(self):
        """Tells the client which seeds to stream (before assign); returns them in words."""
        if self._input_nodes is None:
            return f"split {self.split!r}"
        try:
            node_type, ids = pyg_args.input_node_seeds(self._input_nodes, self.metadata)
            digest = hashlib.sha1(node_type.encode() + b"\0" + ids.tobytes()).hexdigest()
            error = None
        except ValueError as e:
            digest, error = f"refused: {e}", e
        # Every rank must name the same nodes (the loader splits them among the ranks); compared
        # before raising, so that no rank waits in a collective another one left.
        if len(set(self._all_gather(digest))) > 1:
            raise ValueError(f"{self._name}: input_nodes differ between ranks; give every rank "
                             f"the same nodes (the loader splits them among the ranks, "
                             f"host-locally)")
        if error is not None:
            raise error
        self._client.set_input_nodes(node_type, ids)
        self.seed_type = node_type
        return f"{ids.size} input_nodes of {node_type!r}"

    def _resolve_feature_store(self, requested):
        """feature_store="auto": "device" on a CUDA device whose free memory is at least twice
        the rows' bytes (graphshard-trainer's --feature-store auto), else "server"."""
        if requested != "auto":
            return requested
        if self.device is None or self.device.type != "cuda":
            return self._client.resolve_auto_feature_store(False, 0)
        import torch
        free, _ = torch.cuda.mem_get_info(self.device)
        return self._client.resolve_auto_feature_store(True, int(free))

    def _device_cache_rows(self, device_cache_mib, feature_dtype):
        """device_cache_mib: None (every row on the device), or the device tier's budget: rows per
        node type it holds, or None when every row fits it anyway."""
        if device_cache_mib is None:
            return None
        try:
            budget = float(device_cache_mib)
        except (TypeError, ValueError):
            budget = -1.0
        if not budget >= 0:
            raise ValueError(f"device_cache_mib={device_cache_mib!r}: expected a number >= 0")
        if self.feature_store != "device":
            raise ValueError(f"device_cache_mib is for feature_store='device' (this loader's "
                             f"store is {self.feature_store!r})")
        types = self.metadata["node_types"]
        elem = 4 if feature_dtype == "float32" else 2
        row_bytes = [t["feat_dim"] * elem for t in types]
        if budget * 2**20 >= sum(t["num_nodes"] * b for t, b in zip(types, row_bytes)):
            return None
        return _tiers.split_budget(types, row_bytes, budget * 2**20)

    def _tier_rows(self, cache_rows):
        """The tiered store: a pre-sampling pass over this rank's first-epoch batches (ids only)
        ranks each type's rows; the hottest go to the device tier, the rest stay in host memory."""
        import torch
        epoch = self.epoch
        counts = _tiers.visit_counts(self._raw_steps(), self.metadata["node_types"])
        self.epoch = epoch
        where = self.device if self.device is not None else torch.device("cpu")
        self._presampled = [(int(c.sum()), int(c[_tiers.hottest(c, k)].sum()))
                            for c, k in zip(counts, cache_rows)]
        self._rows = [None if table is None else _tiers.TieredRows(
            table, _tiers.hottest(c, k), where) for table, c, k in zip(self._rows, counts,
                                                                        cache_rows)]

    @property
    def feature_tiers(self):
        """The tiered store's figures so far (None without one): device_hit_rate (rows gathered
        from the device tier over all), host_mib (read from host memory: over PCIe on a GPU),
        device_rows and host_rows, expected_device_hit_rate (the pre-sampling pass's)."""
        tiered = [r for r in (self._rows or []) if isinstance(r, _tiers.TieredRows)]
        if not tiered:
            return None
        dev = sum(r.device_rows for r in tiered)
        host = sum(r.host_rows for r in tiered)
        visits = sum(v for v, _ in self._presampled)
        return {"device_hit_rate": dev / max(dev + host, 1),
                "host_mib": sum(r.host_rows * r.row_bytes for r in tiered) / 2**20,
                "device_rows": dev, "host_rows": host,
                "expected_device_hit_rate": sum(h for _, h in self._presampled) / max(visits, 1)}

    def _load_rows(self, feature_dtype, keep_on_host=False):
        """Every node type's feature rows on the loader's device (None for a type without); with
        keep_on_host, in host memory (the tiered store takes its device tier from there)."""
        import torch
        where = self.device if self.device is not None else torch.device("cpu")
        if keep_on_host:
            where = torch.device("cpu")
        rows = []
        for i, t in enumerate(self.metadata["node_types"]):
            if t["feat_dim"] == 0:
                rows.append(None)
                continue
            table = _data._tensor(self._client.feature_rows(i))
            if feature_dtype == "bfloat16":  # carried as int16 (numpy has no bfloat16)
                table = table.view(torch.bfloat16)
            rows.append(table.to(where))
        return rows

    def _all_gather(self, value):
        if self.world_size == 1:
            return [value]
        out = [None] * self.world_size
        _dist().all_gather_object(out, value, group=self._group)
        return out

    @property
    def num_seeds(self):
        """This rank's seeds of the split."""
        return self._client.num_seeds()

    @property
    def shares(self):
        """(part, chunk, num_chunks) of each server this rank reads (client/assignment.h)."""
        return [tuple(s) for s in self._client.shares()]

    def seed_ids(self):
        """{part: int64 tensor} of this rank's seeds on each server it reads, in the order given
        (before the servers shuffle): node ids of seed_type (LinkLoader: positions in the
        part's edge split). server_hosts[part] is the host id of part's server."""
        import torch
        import numpy as np
        return {part: torch.from_numpy(np.asarray(ids)) for part, ids in self._client.seed_ids()}

    def __len__(self):
        return self._steps

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def _raw_steps(self):
        epoch = self.epoch
        self._client.start_epoch(epoch, self._steps)
        while True:
            raw = self._client.next()
            if raw is None:
                break
            yield raw
        self.epoch = epoch + 1

    def _build(self, raw, move=None):
        batch = _data.build(raw, self.metadata, self._pyg, move, self._rows, self._link_mode)
        return batch if self.transform is None else self.transform(batch)

    def __iter__(self):
        if self.device is None:
            for raw in self._raw_steps():
                yield self._build(raw) if raw else None
            return
        yield from self._prefetched()

    def _move_to_device(self, t):
        import torch
        if t.dim() == 2 and not t.is_contiguous():  # edge_index: two rows apart in the segment
            out = torch.empty(t.shape, dtype=t.dtype, device=self.device)
            for i in range(t.shape[0]):
                out[i].copy_(t[i], non_blocking=True)
            return out
        return t.to(self.device, non_blocking=True)

    def _timed_build(self, raw, move=None):
        started = time.thread_time()
        batch = self._build(raw, move)
        self.build_cpu_s += time.thread_time() - started
        return batch

    def _prefetched(self):
        """Two read-ahead threads: the reader takes each batch from the module (next(): the wire
        checks, the GIL released) and the builder makes it a batch on the device (copy, gather,
        transform: Python, the GIL held), so that neither waits for the other's work."""
        import torch
        cuda = self.device.type == "cuda"
        stream = torch.cuda.Stream(self.device) if cuda else None
        # Each queued raw batch holds a ring segment (max_held_batches) until built; on the CPU
        # the built batches in `ready` hold theirs too, so the reader runs less far ahead there.
        raws = queue.Queue(maxsize=2 if cuda else 1)
        ready = queue.Queue(maxsize=self.prefetch)
        stop = threading.Event()
        end = object()
        cpu_lock = threading.Lock()  # both threads add their CPU seconds when they end

        move = self._move_to_device

        def add_cpu(seconds):
            with cpu_lock:
                self.read_ahead_cpu_s += seconds

        def put(q, item):
            while not stop.is_set():
                try:
                    q.put(item, timeout=0.1)
                    return
                except queue.Full:
                    pass

        def get(q):
            while not stop.is_set():
                try:
                    return q.get(timeout=0.1)
                except queue.Empty:
                    pass
            return end

        def read():
            started = time.thread_time()
            try:
                for raw in self._raw_steps():
                    if stop.is_set():
                        return
                    put(raws, raw)
            except BaseException as e:  # re-raised in the iterating thread
                put(raws, e)
            finally:
                add_cpu(time.thread_time() - started)
            put(raws, end)

        def build():
            started = time.thread_time()
            try:
                if cuda:
                    torch.cuda.set_device(self.device)
                while True:
                    raw = get(raws)
                    if raw is end or isinstance(raw, BaseException):
                        put(ready, raw)
                        return
                    if not raw:
                        put(ready, (None, None))
                        continue
                    if not cuda:
                        put(ready, (self._timed_build(raw), None))
                        continue
                    with torch.cuda.stream(stream):
                        batch = self._timed_build(raw, move)
                        copied = torch.cuda.Event()
                        copied.record(stream)
                    # The segment goes back to the server (raw dropped) only once the copy is done.
                    copied.synchronize()
                    del raw
                    put(ready, (batch, copied))
            except BaseException as e:  # re-raised in the iterating thread
                put(ready, e)
            finally:
                add_cpu(time.thread_time() - started)

        threads = [threading.Thread(target=read, name="graphshard-read", daemon=True),
                   threading.Thread(target=build, name="graphshard-build", daemon=True)]
        for thread in threads:
            thread.start()
        try:
            while True:
                item = ready.get()
                if item is end:
                    break
                if isinstance(item, BaseException):
                    raise item
                batch, copied = item
                if copied is not None:
                    compute = torch.cuda.current_stream(self.device)
                    compute.wait_event(copied)
                    for t in _data.tensors(batch):  # allocated on the side stream, used here
                        t.record_stream(compute)
                yield batch
        finally:
            stop.set()
            for q in (ready, raws):  # drop what is queued: ring segments go back
                while True:
                    try:
                        q.get_nowait()
                    except queue.Empty:
                        break
            for thread in threads:
                thread.join()

    def __repr__(self):
        return (f"{self._name}(split={self.split!r}, batch_size={self.batch_size}, "
                f"steps={self._steps}, epoch={self.epoch}, rank={self.rank}/{self.world_size})")


__all__ = ["Loader"]
