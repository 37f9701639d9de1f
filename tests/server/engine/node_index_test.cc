// The relabelling tables of a minibatch (server/engine/internal/node_index.h): the hash table
// of large node types, the pool that reuses tables across batches, and NodeIndex, whose three
// kinds must relabel any sequence of ids the same way (the batches may not depend on which
// table a node type gets).

#include "server/engine/internal/node_index.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/rng.h"

namespace graphshard::engine::internal {
namespace {

TEST(HashTableTest, FindsWhatItInsertedAndNothingElse) {
  HashTable table(100);
  EXPECT_EQ(table.FindOrInsert(7, 0), -1);
  EXPECT_EQ(table.FindOrInsert(int64_t{1} << 40, 1), -1);
  EXPECT_EQ(table.FindOrInsert(0, 2), -1);
  EXPECT_EQ(table.FindOrInsert(7, 99), 0);  // found: the index given now is ignored
  EXPECT_EQ(table.FindOrInsert(int64_t{1} << 40, 99), 1);
  EXPECT_EQ(table.FindOrInsert(0, 99), 2);
  EXPECT_EQ(table.size(), 3);
  EXPECT_GE(table.capacity(), 200);
}

TEST(HashTableTest, GrowsPastHalfFullKeepingEveryEntry) {
  HashTable table(1);
  const int64_t first_capacity = table.capacity();
  constexpr int64_t kIds = 100000;
  // Ids with a stride: sequential ids would hide a hash that keeps only low bits.
  for (int64_t i = 0; i < kIds; ++i) ASSERT_EQ(table.FindOrInsert(i * 4096, i), -1);
  EXPECT_GT(table.capacity(), first_capacity);
  EXPECT_GE(table.capacity(), 2 * kIds);
  for (int64_t i = 0; i < kIds; ++i) ASSERT_EQ(table.FindOrInsert(i * 4096, -5), i);
  EXPECT_EQ(table.size(), kIds);
}

TEST(HashTableTest, NextGenerationForgetsEveryEntryAndKeepsTheCapacity) {
  HashTable table(1000);
  for (int64_t i = 0; i < 1000; ++i) table.FindOrInsert(i, i);
  const int64_t capacity = table.capacity();
  table.NextGeneration();
  EXPECT_EQ(table.size(), 0);
  EXPECT_EQ(table.capacity(), capacity);
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(table.FindOrInsert(i, 1000 - i), -1);
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(table.FindOrInsert(i, 0), 1000 - i);
}

TEST(RelabelTablePoolTest, AReleasedHashTableComesBackEmptyWithItsGrownCapacity) {
  RelabelTablePool pool;
  auto table = pool.AcquireHash(16);
  for (int64_t i = 0; i < 50000; ++i) table->FindOrInsert(i, i);
  const int64_t grown = table->capacity();
  const HashTable* address = table.get();
  pool.Release(std::move(table));
  auto again = pool.AcquireHash(16);
  EXPECT_EQ(again.get(), address);
  EXPECT_EQ(again->capacity(), grown);
  EXPECT_EQ(again->size(), 0);
  EXPECT_EQ(again->FindOrInsert(5, 0), -1);
}

TEST(RelabelTablePoolTest, ANewHashTableIsSizedForItsBoundUpToTheInitialCap) {
  RelabelTablePool pool;
  EXPECT_GE(pool.AcquireHash(300000)->capacity(), 600000);
  EXPECT_LE(pool.AcquireHash(int64_t{1} << 40)->capacity(),
            4 * RelabelTablePool::kMaxInitialHashEntries);
}

// The ids a batch meets: many repeats (a skewed draw) among fresh ones.
std::vector<int64_t> SkewedIds(int64_t num_ids, int64_t range) {
  common::SplitMix64 rng(3);
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < num_ids; ++i) {
    const auto r = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(range)));
    ids.push_back(i % 3 == 0 ? r % 64 : r);
  }
  return ids;
}

TEST(NodeIndexTest, DenseHashedAndByTreeRelabelAnySequenceTheSameWay) {
  RelabelTablePool pool;
  constexpr int64_t kRange = 200000;
  const std::vector<int64_t> ids = SkewedIds(500000, kRange);
  NodeIndex dense = NodeIndex::ById(pool, kRange, /*max_nodes=*/16);
  // Above kMaxDenseNodes: a hash table, sized far too small here so that it grows mid-batch.
  NodeIndex hashed = NodeIndex::ById(pool, RelabelTablePool::kMaxDenseNodes + 1, /*max_nodes=*/16);
  NodeIndex by_tree = NodeIndex::ByTree();
  for (size_t i = 0; i < ids.size(); ++i) {
    hashed.Prefetch(ids[i]);
    const int64_t want = dense.Add(0, ids[i]);
    ASSERT_EQ(hashed.Add(0, ids[i]), want) << "at " << i;
    ASSERT_EQ(by_tree.Add(0, ids[i]), want) << "at " << i;
  }
  EXPECT_EQ(hashed.ids, dense.ids);
  EXPECT_EQ(by_tree.ids, dense.ids);
  EXPECT_TRUE(dense.tree.empty());
  EXPECT_TRUE(hashed.tree.empty());
  EXPECT_EQ(by_tree.tree, std::vector<int64_t>(by_tree.ids.size(), 0));
}

TEST(NodeIndexTest, AnyBoundIsOnlyAHint) {
  RelabelTablePool pool;
  for (int64_t num_nodes : {int64_t{1000}, RelabelTablePool::kMaxDenseNodes + 1}) {
    for (int64_t max_nodes : {int64_t{-5}, int64_t{0}, int64_t{1} << 40}) {
      NodeIndex index = NodeIndex::ById(pool, num_nodes, max_nodes);
      for (int64_t id = 0; id < 1000; ++id) ASSERT_EQ(index.Add(0, id), id);
      EXPECT_EQ(index.Add(0, 999), 999);
    }
  }
}

TEST(NodeIndexTest, ByTreeKeepsOneEntryPerTreeAndId) {
  NodeIndex index = NodeIndex::ByTree();
  EXPECT_EQ(index.Add(0, 5), 0);
  EXPECT_EQ(index.Add(1, 5), 1);
  EXPECT_EQ(index.Add(0, 5), 0);
  EXPECT_EQ(index.ids, (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(index.tree, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(index.TreeOf(1), 1);
}

TEST(NodeIndexTest, ANextBatchStartsEmptyOnTheTablesTheLastOneReleased) {
  RelabelTablePool pool;
  for (int64_t num_nodes : {int64_t{1000}, RelabelTablePool::kMaxDenseNodes + 1}) {
    {
      NodeIndex first = NodeIndex::ById(pool, num_nodes, 100);
      first.Add(0, 3);
      first.Add(0, 9);
    }
    NodeIndex second = NodeIndex::ById(pool, num_nodes, 100);
    EXPECT_EQ(second.Add(0, 9), 0) << num_nodes;
    EXPECT_EQ(second.Add(0, 3), 1) << num_nodes;
    EXPECT_EQ(second.TreeOf(1), 0);
  }
}

}  // namespace
}  // namespace graphshard::engine::internal
