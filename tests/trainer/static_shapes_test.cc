// StaticShapes::Pad on hand-made batches: the layout (each hop's nodes and edges at the start of
// their segment, padding nodes repeating the first, padding edges only between padding nodes,
// ignored labels), capacities that only grow, and the property users rely on: GraphSAGE's
// outputs, loss and gradients for the real seeds are the unpadded batch's.
#include "trainer/static_shapes.h"

#include <gtest/gtest.h>

#include <vector>

#include "trainer/sage_model.h"

namespace graphshard::trainer {
namespace {

std::vector<int64_t> Values(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kLong).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

// Seeds 0-1; hop 1: nodes 2-4; hop 2: nodes 5-6. Hop 1's edges run into the seeds (one from a
// seed), hop 2's into hop 1's nodes (one from a seed).
BatchTensors Batch(torch::Tensor x) {
  BatchTensors b;
  b.batch_size = 2;
  b.seeds = 2;
  b.num_nodes = {7};
  b.x = {std::move(x)};
  b.y = torch::tensor({1, 2}, torch::kLong);
  b.edges = {{0, 0, torch::tensor({2, 3, 4, 1, 5, 6, 0}, torch::kLong),
              torch::tensor({0, 0, 1, 0, 2, 3, 4}, torch::kLong)}};
  b.nodes_before_hop = {{0, 2, 5, 7}};
  b.edges_before_hop = {{0, 4, 7}};
  return b;
}

TEST(StaticShapesTest, PadsEachHopAtTheStartOfItsSegment) {
  StaticShapes shapes(/*headroom=*/0.0, /*align=*/4);
  BatchTensors ids = Batch(torch::arange(100, 107, torch::kLong));
  ids.x_are_ids = true;
  absl::StatusOr<BatchTensors> p = shapes.Pad(ids);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->x_are_ids);
  EXPECT_EQ(p->batch_size, 4);
  EXPECT_EQ(p->seeds, 2);
  EXPECT_EQ(p->num_nodes, (std::vector<int64_t>{12}));
  EXPECT_EQ(p->nodes_before_hop[0], (std::vector<int64_t>{0, 4, 8, 12}));
  EXPECT_EQ(p->edges_before_hop[0], (std::vector<int64_t>{0, 4, 8}));
  EXPECT_EQ(Values(p->x[0]),
            (std::vector<int64_t>{100, 101, 100, 100, 102, 103, 104, 100, 105, 106, 100, 100}));
  EXPECT_EQ(Values(p->y), (std::vector<int64_t>{1, 2, -100, -100}));
  // Old node -> new: 0 1 | 2 3 4 -> 4 5 6 | 5 6 -> 8 9. Hop 2's padding edge runs from its last
  // padding node (11) into hop 1's (7).
  EXPECT_EQ(Values(p->edges[0].src), (std::vector<int64_t>{4, 5, 6, 1, 8, 9, 0, 11}));
  EXPECT_EQ(Values(p->edges[0].dst), (std::vector<int64_t>{0, 0, 1, 0, 4, 5, 6, 7}));
  EXPECT_EQ(shapes.node_capacities(), (std::vector<int64_t>{4, 4, 4}));
  EXPECT_EQ(shapes.edge_capacities(), (std::vector<int64_t>{4, 4}));
}

TEST(StaticShapesTest, CapacitiesOnlyGrow) {
  StaticShapes shapes(0.0, 4);
  ASSERT_TRUE(shapes.Pad(Batch(torch::randn({7, 3}))).ok());
  // Smaller: the same shapes.
  BatchTensors small = Batch(torch::randn({5, 3}));
  small.edges = {{0, 0, torch::tensor({2, 3, 4}, torch::kLong), torch::tensor({0, 1, 2})}};
  small.nodes_before_hop = {{0, 2, 4, 5}};
  small.edges_before_hop = {{0, 2, 3}};
  absl::StatusOr<BatchTensors> p = shapes.Pad(small);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->nodes_before_hop[0], (std::vector<int64_t>{0, 4, 8, 12}));
  EXPECT_EQ(p->edges_before_hop[0], (std::vector<int64_t>{0, 4, 8}));
  EXPECT_EQ(shapes.grew(), 0);
  // Hop 2 with 4 nodes (+1 padding) no longer fits its 4: raised to 8, once.
  BatchTensors big = Batch(torch::randn({9, 3}));
  big.num_nodes = {9};
  big.nodes_before_hop = {{0, 2, 5, 9}};
  p = shapes.Pad(big);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(shapes.node_capacities(), (std::vector<int64_t>{4, 4, 8}));
  EXPECT_EQ(shapes.grew(), 1);
  // What padding cost: rows 7 + 5 + 9 real against 12 + 12 + 16, edges 7 + 3 + 7 against 8 x 3.
  const StaticShapes::Totals t = shapes.totals();
  EXPECT_EQ(t.batches, 3);
  EXPECT_EQ(t.real_nodes, 21);
  EXPECT_EQ(t.padded_nodes, 40);
  EXPECT_EQ(t.real_edges, 17);
  EXPECT_EQ(t.padded_edges, 24);
}

TEST(StaticShapesTest, RefusesHeterogeneousAndLinkBatches) {
  StaticShapes shapes;
  BatchTensors hetero = Batch(torch::randn({7, 3}));
  hetero.x.push_back(torch::randn({2, 3}));
  EXPECT_TRUE(absl::IsInvalidArgument(shapes.Pad(hetero).status()));
  BatchTensors link = Batch(torch::randn({7, 3}));
  link.link.present = true;
  absl::StatusOr<BatchTensors> p = shapes.Pad(link);
  EXPECT_TRUE(absl::IsInvalidArgument(p.status()));
  EXPECT_NE(p.status().message().find("supervision edges"), std::string::npos) << p.status();
}

// The real seeds' logits, the mean loss over them and every gradient are the unpadded batch's.
TEST(StaticShapesTest, GraphSageComputesTheSameForTheRealSeeds) {
  torch::manual_seed(7);
  GraphSage model(GraphSageOptions{.in_channels = 3,
                                   .hidden_channels = 8,
                                   .out_channels = 3,
                                   .num_layers = 2,
                                   .dropout = 0.0});
  const BatchTensors plain = Batch(torch::randn({7, 3}));
  StaticShapes shapes(0.3, 4);
  absl::StatusOr<BatchTensors> padded = shapes.Pad(plain);
  ASSERT_TRUE(padded.ok()) << padded.status();

  auto run = [&](const BatchTensors& b, std::vector<torch::Tensor>& grads) {
    model->zero_grad();
    torch::Tensor logits = model->Forward(b);
    torch::Tensor loss = torch::nn::functional::cross_entropy(logits, b.y);
    loss.backward();
    grads.clear();
    for (const torch::Tensor& p : model->parameters()) grads.push_back(p.grad().clone());
    return std::make_pair(logits.detach(), loss.detach());
  };
  std::vector<torch::Tensor> g_plain, g_padded;
  const auto [logits, loss] = run(plain, g_plain);
  const auto [logits_p, loss_p] = run(*padded, g_padded);
  EXPECT_EQ(logits_p.size(0), padded->batch_size);
  EXPECT_TRUE(torch::allclose(logits_p.slice(0, 0, 2), logits, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(loss_p, loss, 1e-5, 1e-6))
      << loss_p.item<float>() << " vs " << loss.item<float>();
  ASSERT_EQ(g_plain.size(), g_padded.size());
  for (size_t i = 0; i < g_plain.size(); ++i) {
    EXPECT_TRUE(torch::allclose(g_padded[i], g_plain[i], 1e-5, 1e-6)) << "parameter " << i;
  }
}

}  // namespace
}  // namespace graphshard::trainer
