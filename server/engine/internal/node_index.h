#ifndef GRAPHSHARD_SERVER_ENGINE_INTERNAL_NODE_INDEX_H_
#define GRAPHSHARD_SERVER_ENGINE_INTERNAL_NODE_INDEX_H_

// The relabelling of one node type while a minibatch is built: (tree, global id) -> local index,
// in order of first meeting. tree is 0 outside disjoint mode.
//
// Relabelling is the sampling engine's hottest lookup (every sampled edge does one). Outside
// disjoint mode it is keyed by the id alone, in a table taken from a per-part pool and reused
// across batches (a new generation invalidates the last batch's entries without clearing, and a
// reused table neither allocates nor grows):
//  - node types of at most RelabelTablePool::kMaxDenseNodes nodes: a direct-mapped table indexed
//    by the global id (8 bytes per node of the type), no hashing or probing;
//  - larger types (ogbn-papers100M: 111 M nodes, 888 MB per batch as a dense table): an
//    open-addressing hash table of 16 bytes per slot, sized from the batch's bound on its nodes
//    (request_cost.h) and kept at most half full: its memory follows the batch (32 MiB for
//    1024 seeds and fanouts 15,10,5), not the graph. The (tree, id) hash map this replaced grew
//    from empty in every batch; rehashing and probing it were half a papers batch's CPU
//    (tests/bench/RESULTS.md, "Sampling CPU per batch at papers scale").
// Disjoint mode keys by (tree, id) in a hash map of its own per batch.

#include <cassert>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
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
  // A hint only: ids outside the table (not yet range-checked) are ignored. Always inlined, as
  // every Prefetch here: GCC 12 takes a function whose only effect is a prefetch for "pure" and
  // deletes calls to it that were not inlined early (the merge's prefetch was lost that way).
  ABSL_ATTRIBUTE_ALWAYS_INLINE void Prefetch(int64_t id) const {
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

// Open-addressing id -> local index table (linear probing, Fibonacci hashing) of one batch.
// Its capacity is a power of two; FindOrInsert doubles it before the table would be more than
// half full, so a probe ends within a few slots (3/4 full was measured slower). Not thread-safe.
class HashTable {
 public:
  // Room for `entries` ids (at least 16 slots).
  explicit HashTable(int64_t entries);
  int64_t capacity() const { return static_cast<int64_t>(slots_.size()); }
  int64_t size() const { return size_; }
  // Starts a new batch: every id reads as absent.
  void NextGeneration();
  // Grows (rehashing this generation's entries) until `entries` ids fit.
  void Reserve(int64_t entries);
  // The local index of `id` if it was inserted this generation; else inserts it with `index`
  // (>= 0) and returns -1.
  int64_t FindOrInsert(int64_t id, int64_t index) {
    if (2 * (size_ + 1) > capacity()) Reserve(size_ + 1);
    for (size_t i = SlotOf(id);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.generation != generation_) {
        s = {generation_, static_cast<uint32_t>(index), id};
        ++size_;
        return -1;
      }
      if (s.id == id) return static_cast<int64_t>(s.index);
    }
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE void Prefetch(int64_t id) const {
    __builtin_prefetch(slots_.data() + SlotOf(id));
  }

 private:
  struct Slot {
    uint32_t generation = 0;
    uint32_t index = 0;
    int64_t id = 0;
  };
  size_t SlotOf(int64_t id) const {
    return static_cast<size_t>((static_cast<uint64_t>(id) * 0x9e3779b97f4a7c15ULL) >> shift_);
  }
  // An empty table of `capacity` slots (a power of two), generation 1.
  void Allocate(int64_t capacity);

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  uint32_t generation_ = 1;
  int64_t size_ = 0;
};

// Tables of one part, shared by the batches built concurrently (each holds its own while it
// builds). Thread-safe. At most one table per concurrently built batch and node type stays
// allocated: a dense table costs 8 bytes per node of its type, a hash table 16 bytes per slot
// at its largest capacity yet.
class RelabelTablePool {
 public:
  // Node types above this many nodes (64 MiB of dense table per concurrent batch) use a
  // HashTable.
  static constexpr int64_t kMaxDenseNodes = int64_t{1} << 23;
  // A first hash table holds at most this many ids (64 MiB); one that needs more grows.
  static constexpr int64_t kMaxInitialHashEntries = int64_t{1} << 21;

  // A table of exactly num_nodes slots, already at a fresh generation.
  std::unique_ptr<DenseTable> AcquireDense(int64_t num_nodes);
  // An empty table (fresh generation) with room for `entries` ids (capped at
  // kMaxInitialHashEntries for a new one; pooled ones are reused whatever their capacity).
  std::unique_ptr<HashTable> AcquireHash(int64_t entries);
  void Release(std::unique_ptr<DenseTable> table);
  void Release(std::unique_ptr<HashTable> table);

 private:
  absl::Mutex mu_;
  std::vector<std::unique_ptr<DenseTable>> dense_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<HashTable>> hash_ ABSL_GUARDED_BY(mu_);
};

class NodeIndex {
 public:
  // Keyed by id, in a table from `pool`: dense for types of at most kMaxDenseNodes nodes, else
  // hashed with room for `max_nodes` (a bound on the batch's nodes of the type: a hint, taken
  // within [0, num_nodes]; `ids` is reserved for it too). Outside disjoint mode only: every Add
  // must pass tree 0, and `tree` stays empty.
  static NodeIndex ById(RelabelTablePool& pool, int64_t num_nodes, int64_t max_nodes);
  // Keyed by (tree, id) in a hash map of its own (disjoint mode); `tree` is filled.
  static NodeIndex ByTree();
  ~NodeIndex();
  NodeIndex(NodeIndex&&) = default;
  NodeIndex& operator=(NodeIndex&&) = default;

  // Local index of (tree, id), adding it if new. `id` is a valid id of the type.
  int64_t Add(int64_t tree_of_id, int64_t id) {
    assert(tree_of_id == 0 || (dense_ == nullptr && hash_ == nullptr));  // ById: no trees
    const int64_t next = std::ssize(ids);
    if (dense_ != nullptr) {
      const int64_t found = dense_->Find(id);
      if (found >= 0) return found;
      dense_->Set(id, next);
    } else if (hash_ != nullptr) {
      const int64_t found = hash_->FindOrInsert(id, next);
      if (found >= 0) return found;
    } else {
      auto [it, inserted] = index_.emplace(std::make_pair(tree_of_id, id), next);
      if (!inserted) return it->second;
      tree.push_back(tree_of_id);
    }
    ids.push_back(id);
    return next;
  }
  // A hint that Add(_, id) comes soon.
  ABSL_ATTRIBUTE_ALWAYS_INLINE void Prefetch(int64_t id) const {
    if (dense_ != nullptr) dense_->Prefetch(id);
    if (hash_ != nullptr) hash_->Prefetch(id);
  }
  // The tree of local index i (0 outside disjoint mode).
  int64_t TreeOf(int64_t i) const { return tree.empty() ? 0 : tree[static_cast<size_t>(i)]; }

  std::vector<int64_t> ids;   // global id per local index
  std::vector<int64_t> tree;  // ByTree: tree per local index; empty otherwise
  int64_t frontier_begin = 0;

 private:
  NodeIndex() = default;

  RelabelTablePool* pool_ = nullptr;
  std::unique_ptr<DenseTable> dense_;
  std::unique_ptr<HashTable> hash_;
  absl::flat_hash_map<std::pair<int64_t, int64_t>, int64_t> index_;
};

}  // namespace graphshard::engine::internal

#endif  // GRAPHSHARD_SERVER_ENGINE_INTERNAL_NODE_INDEX_H_
