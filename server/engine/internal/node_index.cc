#include "server/engine/internal/node_index.h"

#include <algorithm>
#include <bit>

namespace graphshard::engine::internal {

void DenseTable::NextGeneration() {
  if (++generation_ == 0) {  // wrapped: stale stamps could match again
    std::fill(slots_.begin(), slots_.end(), Slot{});
    generation_ = 1;
  }
}

HashTable::HashTable(int64_t entries) {
  Allocate(16);
  Reserve(entries);
}

void HashTable::Allocate(int64_t capacity) {
  // Slots of generation 0 read as empty (generations start at 1).
  slots_.assign(static_cast<size_t>(capacity), Slot{});
  mask_ = static_cast<size_t>(capacity) - 1;
  shift_ = 64 - std::countr_zero(static_cast<uint64_t>(capacity));
  generation_ = 1;
  size_ = 0;
}

void HashTable::NextGeneration() {
  size_ = 0;
  if (++generation_ == 0) {  // wrapped: stale stamps could match again
    std::fill(slots_.begin(), slots_.end(), Slot{});
    generation_ = 1;
  }
}

void HashTable::Reserve(int64_t entries) {
  int64_t capacity = this->capacity();
  while (2 * entries > capacity) capacity *= 2;
  if (capacity == this->capacity()) return;
  std::vector<Slot> old;
  old.swap(slots_);
  const uint32_t live = generation_;
  Allocate(capacity);
  for (const Slot& s : old) {
    if (s.generation == live) FindOrInsert(s.id, s.index);
  }
}

std::unique_ptr<DenseTable> RelabelTablePool::AcquireDense(int64_t num_nodes) {
  std::unique_ptr<DenseTable> table;
  {
    absl::MutexLock lock(&mu_);
    auto it = std::find_if(dense_.begin(), dense_.end(),
                           [&](const auto& t) { return t->size() == num_nodes; });
    if (it != dense_.end()) {
      table = std::move(*it);
      dense_.erase(it);
    }
  }
  if (table == nullptr) table = std::make_unique<DenseTable>(num_nodes);
  table->NextGeneration();
  return table;
}

std::unique_ptr<HashTable> RelabelTablePool::AcquireHash(int64_t entries) {
  std::unique_ptr<HashTable> table;
  {
    absl::MutexLock lock(&mu_);
    if (!hash_.empty()) {
      table = std::move(hash_.back());
      hash_.pop_back();
    }
  }
  if (table == nullptr) {
    return std::make_unique<HashTable>(std::min(entries, kMaxInitialHashEntries));
  }
  // A pooled table keeps its capacity (it grew to what an earlier batch needed); growing it to
  // the new bound now would only spread the same entries thinner.
  table->NextGeneration();
  return table;
}

void RelabelTablePool::Release(std::unique_ptr<DenseTable> table) {
  absl::MutexLock lock(&mu_);
  dense_.push_back(std::move(table));
}

void RelabelTablePool::Release(std::unique_ptr<HashTable> table) {
  absl::MutexLock lock(&mu_);
  hash_.push_back(std::move(table));
}

NodeIndex NodeIndex::ById(RelabelTablePool& pool, int64_t num_nodes, int64_t max_nodes) {
  NodeIndex index;
  index.pool_ = &pool;
  const int64_t bound = std::clamp<int64_t>(max_nodes, 0, num_nodes);
  if (num_nodes <= RelabelTablePool::kMaxDenseNodes) {
    index.dense_ = pool.AcquireDense(num_nodes);
  } else {
    index.hash_ = pool.AcquireHash(bound);
  }
  // Growing `ids` by doubling copied it about once over (memmove was 3% of a papers batch).
  index.ids.reserve(static_cast<size_t>(std::min(bound, RelabelTablePool::kMaxInitialHashEntries)));
  return index;
}

NodeIndex NodeIndex::ByTree() { return NodeIndex(); }

NodeIndex::~NodeIndex() {
  if (pool_ == nullptr) return;
  if (dense_ != nullptr) pool_->Release(std::move(dense_));
  if (hash_ != nullptr) pool_->Release(std::move(hash_));
}

}  // namespace graphshard::engine::internal
