// The model registry: every model of the catalog (choices.h) builds through CreateModel for a
// graph of its task and maps a minibatch to [seeds, classes] logits; models refuse graphs they
// do not fit.
#include "trainer/model_registry.h"

#include <torch/torch.h>

#include <vector>

#include "client/choices.h"
#include "client/options.h"
#include "gtest/gtest.h"
#include "trainer/model.h"

namespace graphshard::trainer {
namespace {

// One node type "node" (3 features, 2 classes), edges 0 -> 2, 1 -> 2, 2 -> 0.
client::ServerMetadata NodeGraph() {
  client::ServerMetadata md;
  md.node_types = {{"node", 4, 3, 2}};
  md.edge_types = {{"node__to__node", 0, 0}};
  md.target_type = "node";
  md.feat_dim = 3;
  md.num_classes = 2;
  return md;
}

BatchTensors NodeBatch() {
  BatchTensors b;
  b.batch_size = 2;
  b.num_nodes = {4};
  b.x = {torch::randn({4, 3})};
  b.y = torch::tensor({0, 1});
  b.edges = {{0, 0, torch::tensor({0, 1, 2}), torch::tensor({2, 2, 0})}};
  return b;
}

// A graph-classification dataset's layout (graph_task.h): 5 nodes in 2 graphs.
client::ServerMetadata GraphDataset() {
  client::ServerMetadata md;
  md.node_types = {{"node", 5, 3, 0}, {"graph", 2, 0, 2}};
  md.edge_types = {{"node__to__node", 0, 0}, {"node__in__graph", 0, 1}};
  md.target = 1;
  md.target_type = "graph";
  md.num_classes = 2;
  return md;
}

BatchTensors GraphBatch() {
  BatchTensors b;
  b.batch_size = 2;
  b.seed_type = 1;
  b.num_nodes = {5, 2};
  b.x = {torch::randn({5, 3}), torch::zeros({2, 0})};
  b.y = torch::tensor({0, 1});
  b.edges = {{0, 0, torch::tensor({0, 1, 3}), torch::tensor({1, 0, 4})},
             {0, 1, torch::tensor({0, 1, 2, 3, 4}), torch::tensor({0, 0, 0, 1, 1})}};
  return b;
}

TEST(ModelRegistry, EveryCatalogModelBuildsForItsTaskAndForwards) {
  for (const client::ModelInfo& info : RegisteredModels()) {
    SCOPED_TRACE(std::string(info.name));
    const bool graph = info.task == client::Task::kGraph;
    torch::manual_seed(0);
    absl::StatusOr<std::shared_ptr<GnnModelImpl>> model =
        CreateModel(graph ? GraphDataset() : NodeGraph(),
                    client::ModelOptions{
                        .name = std::string(info.name), .hidden_channels = 8, .num_layers = 2});
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_FALSE((*model)->parameters().empty());
    (*model)->eval();
    torch::Tensor logits = (*model)->Forward(graph ? GraphBatch() : NodeBatch());
    EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{2, 2}));
  }
}

TEST(ModelRegistry, RefusesGcnOnHeterogeneousGraphs) {
  client::ServerMetadata md;
  md.node_types = {{"a", 1, 2, 2}, {"b", 1, 2, 0}};
  md.edge_types = {{"b__to__a", 1, 0}};
  md.num_classes = 2;
  absl::StatusOr<std::shared_ptr<GnnModelImpl>> gcn =
      CreateModel(md, client::ModelOptions{.name = "gcn"});
  EXPECT_EQ(gcn.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(gcn.status().message().find("--model gcn"), absl::string_view::npos);
  EXPECT_TRUE(CreateModel(md, client::ModelOptions{.name = "sage"}).ok());
}

TEST(ModelRegistry, EveryRegisteredNameParsesWithItsTaskAndDefaultsAreSageAndGin) {
  auto parse = [](std::vector<const char*> args) {
    args.insert(args.begin(), "graphshard-trainer");
    args.push_back("--servers");
    args.push_back("127.0.0.1:1");
    return client::ParseTrainerOptions(static_cast<int>(args.size()), args.data(),
                                       RegisteredModels());
  };
  for (const client::ModelInfo& info : RegisteredModels()) {
    SCOPED_TRACE(std::string(info.name));
    const std::string name(info.name);
    absl::StatusOr<client::TrainerOptions> o =
        info.task == client::Task::kGraph ? parse({"--model", name.c_str(), "--task", "graph"})
                                          : parse({"--model", name.c_str()});
    ASSERT_TRUE(o.ok()) << o.status();
    EXPECT_EQ(o->model, name);
  }
  absl::StatusOr<client::TrainerOptions> node = parse({});
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->model, "sage");
  absl::StatusOr<client::TrainerOptions> graph = parse({"--task", "graph"});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->model, "gin");
  EXPECT_EQ(parse({"--model", "mlp"}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateModel(NodeGraph(), client::ModelOptions{.name = "mlp"}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ModelRegistry, RefusesGinOnANodeClassificationGraph) {
  EXPECT_EQ(CreateModel(NodeGraph(), client::ModelOptions{.name = "gin"}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace graphshard::trainer
