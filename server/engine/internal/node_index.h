#ifndef GRAPHSHARD_SERVER_ENGINE_INTERNAL_NODE_INDEX_H_
#define GRAPHSHARD_SERVER_ENGINE_INTERNAL_NODE_INDEX_H_

// The relabelling of one node type while a minibatch is built: (tree, global id) -> local index,
// in order of first meeting. tree is 0 outside disjoint mode.
//
// Relabelling is the sampling engine's hottest lookup (every sampled edge does one; perf showed
// the hash map at 15% of a batch's CPU). Outside disjoint mode, for node types of at most
// DenseTablePool::kMaxNodes nodes, the lookup is a direct-mapped table indexed by the global id
// (8 bytes per node of the type: a generation stamp and the local index), so no hashing or
// probing; tables are reused across batches through a pool (a new generation invalidates the
// last batch's entries without clearing). Disjoint mode and larger types use a hash map.

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace graphshard::engine::internal {

// Direct-mapped id -> local index table of one node type (size = the type's node count).
class DenseTable {
 public:
  explicit DenseTable(int64_t num_nodes) : slots_(static_cast<size_t>(num_nodes)) {}
  int64_t size() const { return static_cast<int64_t>(slots_.size()); }
  // Starts a new batch: every id reads as absent.
  void NextGeneration();
  // The local index of `id` if it was set this generation, else -1.
  int64_t Find(int64_t id) const {
    const Slot& s = slots_[static_cast<size_t>(id)];
    return s.generation == generation_ ? static_cast<int64_t>(s.index) : int64_t{-1};
  }
  void Set(int64_t id, int64_t index) {
    slots_[static_cast<size_t>(id)] = {generation_, static_cast<uint32_t>(index)};
  }
  // A hint only: ids outside the table (not yet range-checked) are ignored.
  void Prefetch(int64_t id) const {
    if (static_cast<uint64_t>(id) < slots_.size()) __builtin_prefetch(slots_.data() + id);
  }

 private:
  struct Slot {
    uint32_t generation = 0;
    uint32_t index = 0;
  };
  std::vector<Slot> slots_;
  uint32_t generation_ = 0;
};

// Tables of one part, shared by the batches built concurrently (each holds its own while it
// builds). Thread-safe. At most one table per concurrently built batch and node type stays
// allocated.
class DenseTablePool {
 public:
  // Node types above this many nodes (64 MiB of table per concurrent batch) use a hash map.
  static constexpr int64_t kMaxNodes = int64_t{1} << 23;

  // A table of exactly num_nodes slots, already at a fresh generation.
  std::unique_ptr<DenseTable> Acquire(int64_t num_nodes);
  void Release(std::unique_ptr<DenseTable> table);

 private:
  absl::Mutex mu_;
  std::vector<std::unique_ptr<DenseTable>> free_ ABSL_GUARDED_BY(mu_);
};

class NodeIndex {
 public:
  // Dense when `pool` is given (the caller checked disjoint and kMaxNodes), else a hash map.
  NodeIndex(DenseTablePool* pool, int64_t num_nodes);
  ~NodeIndex();
  NodeIndex(NodeIndex&&) = default;
  NodeIndex& operator=(NodeIndex&&) = default;

  // Local index of (tree, id), adding it if new. `id` is a valid id of the type.
  int64_t Add(int64_t tree_of_id, int64_t id) {
    if (dense_ != nullptr) {
      const int64_t found = dense_->Find(id);
      if (found >= 0) return found;
      dense_->Set(id, std::ssize(ids));
    } else {
      auto [it, inserted] = index_.emplace(std::make_pair(tree_of_id, id), std::ssize(ids));
      if (!inserted) return it->second;
    }
    ids.push_back(id);
    tree.push_back(tree_of_id);
    return std::ssize(ids) - 1;
  }
  // A hint that Add(_, id) comes soon.
  void Prefetch(int64_t id) const {
    if (dense_ != nullptr) dense_->Prefetch(id);
  }

  std::vector<int64_t> ids;   // global id per local index
  std::vector<int64_t> tree;  // tree per local index
  int64_t frontier_begin = 0;

 private:
  DenseTablePool* pool_ = nullptr;
  std::unique_ptr<DenseTable> dense_;
  absl::flat_hash_map<std::pair<int64_t, int64_t>, int64_t> index_;
};

}  // namespace graphshard::engine::internal

#endif  // GRAPHSHARD_SERVER_ENGINE_INTERNAL_NODE_INDEX_H_
