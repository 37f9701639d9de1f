// Rows of any part's ids through one server's engine (GatherRowsOfAnyPart), over in-process
// parts: each item's rows and labels are its owners', in order, whatever the mix of parts and
// however many items share a type; one request per other owner; bad input named.

#include "server/engine/any_part_rows.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/server/engine/in_process_parts.h"

namespace graphshard::engine {
namespace {

class AnyPartRowsTest : public testing::InProcessTwoPartsTest {
 protected:
  // The owner's own answer for `ids` (LocalPart::GatherFeatures of the part holding each id).
  FeatureBlock OwnersRows(const std::vector<int64_t>& ids) const {
    FeatureBlock out;
    for (int64_t id : ids) {
      for (const auto& part : parts_.parts) {
        const common::NodeShard& shard = *part->part().FindNodes("node");
        if (id < shard.begin || id >= shard.end) continue;
        absl::StatusOr<std::vector<FeatureBlock>> one =
            part->GatherFeatures({TypedIds{"node", {id}}}, FeatureDtype::kFloat32);
        EXPECT_TRUE(one.ok()) << one.status();
        out.feat_dim = (*one)[0].feat_dim;
        out.features.insert(out.features.end(), (*one)[0].features.begin(),
                            (*one)[0].features.end());
        out.labels.push_back((*one)[0].labels[0]);
      }
    }
    return out;
  }
};

TEST_F(AnyPartRowsTest, EveryItemGetsItsOwnersRowsInOrderWithOneRequestPerOtherOwner) {
  const common::NodeShard& own = *local().part().FindNodes("node");
  const common::NodeShard& other = *parts_.parts[1]->part().FindNodes("node");
  const std::vector<TypedIds> items = {
      {"node", {other.begin, own.begin, other.end - 1, own.begin}},
      {"node", {}},
      {"node", {own.end - 1, other.begin + 1}},
  };
  absl::StatusOr<std::vector<FeatureBlock>> rows =
      GatherRowsOfAnyPart(local(), *counting_, items, FeatureDtype::kFloat32, {});
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const FeatureBlock want = OwnersRows(items[i].ids);
    ASSERT_GT(own.feat_dim, 0);
    EXPECT_EQ((*rows)[i].feat_dim, own.feat_dim) << "item " << i;
    EXPECT_EQ(std::ssize((*rows)[i].features), std::ssize(items[i].ids) * own.feat_dim * 4)
        << "item " << i;
    EXPECT_EQ((*rows)[i].labels, want.labels) << "item " << i;
    EXPECT_TRUE((*rows)[i].features == want.features) << "item " << i;
  }
  EXPECT_EQ(counting_->gathers(1), 1);  // the other part once, for every item
  EXPECT_EQ(counting_->gathers(0), 0);  // the local part read in-process
}

TEST_F(AnyPartRowsTest, UnknownTypesAndIdsOutsideTheTypeAreRefusedNamingThem) {
  const int64_t n = local().node_types()[0].book->num_nodes();
  for (const TypedIds& bad : {TypedIds{"nope", {0}}, TypedIds{"node", {0, n}},
                              TypedIds{"node", {-1}}}) {
    absl::StatusOr<std::vector<FeatureBlock>> rows =
        GatherRowsOfAnyPart(local(), *counting_, {bad}, FeatureDtype::kFloat32, {});
    EXPECT_TRUE(absl::IsInvalidArgument(rows.status())) << rows.status();
    EXPECT_NE(rows.status().message().find(bad.node_type == "nope" ? "nope"
                                           : bad.ids.back() < 0 ? "-1"
                                                                : std::to_string(n)),
              std::string::npos)
        << rows.status();
  }
  EXPECT_EQ(counting_->gathers(1), 0);  // refused before any peer was asked
}

// A dead owner: its error comes back with its code, naming its part; nothing half-filled.
TEST_F(AnyPartRowsTest, ADeadOwnersErrorNamesItsPartAndKeepsItsCode) {
  const common::NodeShard& other = *parts_.parts[1]->part().FindNodes("node");
  counting_->FailPart(1, absl::UnavailableError("peer down"));
  absl::StatusOr<std::vector<FeatureBlock>> rows = GatherRowsOfAnyPart(
      local(), *counting_, {TypedIds{"node", {other.begin}}}, FeatureDtype::kFloat32, {});
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kUnavailable) << rows.status();
  EXPECT_NE(rows.status().message().find("part 1: peer down"), std::string::npos)
      << rows.status();
}

}  // namespace
}  // namespace graphshard::engine
