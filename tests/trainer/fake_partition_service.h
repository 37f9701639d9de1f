#ifndef GRAPHSHARD_TESTS_TRAINER_FAKE_PARTITION_SERVICE_H_
#define GRAPHSHARD_TESTS_TRAINER_FAKE_PARTITION_SERVICE_H_

// A hand-written fake PartitionService for trainer tests: a small synthetic graph whose labels
// are learnable (node v has label v % 3, a noisy one-hot feature of it, and in-edges from
// nodes of the same label), cut into contiguous parts. Each fake server owns one part and
// samples all in-neighbours per hop (fanouts only bound the number of hops). Runs in process
// on 127.0.0.1:0 with the default gRPC health service. Thread-safe.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>

namespace graphshard::trainer::testing {

struct FakeGraph {
  int64_t num_nodes = 300;
  int num_parts = 2;
  int64_t feat_dim = 4;
  int64_t num_classes = 3;
};

class FakePartitionServer {
 public:
  // Starts serving `part` of `graph`.
  FakePartitionServer(const FakeGraph& graph, int part);
  ~FakePartitionServer();
  const std::string& address() const { return address_; }
  // From now on SampleMinibatch answers UNAVAILABLE.
  void FailSampling();

 private:
  class Service;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

}  // namespace graphshard::trainer::testing

#endif  // GRAPHSHARD_TESTS_TRAINER_FAKE_PARTITION_SERVICE_H_
