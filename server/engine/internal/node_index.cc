#include "server/engine/internal/node_index.h"

#include <algorithm>

namespace graphshard::engine::internal {

void DenseTable::NextGeneration() {
  if (++generation_ == 0) {  // wrapped: stale stamps could match again
    std::fill(slots_.begin(), slots_.end(), Slot{});
    generation_ = 1;
  }
}

std::unique_ptr<DenseTable> DenseTablePool::Acquire(int64_t num_nodes) {
  std::unique_ptr<DenseTable> table;
  {
    absl::MutexLock lock(&mu_);
    auto it = std::find_if(free_.begin(), free_.end(),
                           [&](const auto& t) { return t->size() == num_nodes; });
    if (it != free_.end()) {
      table = std::move(*it);
      free_.erase(it);
    }
  }
  if (table == nullptr) table = std::make_unique<DenseTable>(num_nodes);
  table->NextGeneration();
  return table;
}

void DenseTablePool::Release(std::unique_ptr<DenseTable> table) {
  absl::MutexLock lock(&mu_);
  free_.push_back(std::move(table));
}

NodeIndex::NodeIndex(DenseTablePool* pool, int64_t num_nodes) : pool_(pool) {
  if (pool_ != nullptr) dense_ = pool_->Acquire(num_nodes);
}

NodeIndex::~NodeIndex() {
  if (pool_ != nullptr && dense_ != nullptr) pool_->Release(std::move(dense_));
}

}  // namespace graphshard::engine::internal
