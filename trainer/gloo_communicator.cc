// The Gloo side of communicator.h: the only file of the trainer that includes c10d.
#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

// c10d's headers sit under torch/csrc/distributed/c10d/ from LibTorch 1.12 on (Debian's 1.13 and
// the GPU machine's 2.11 alike); older releases installed them as c10d/.
#if __has_include(<torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>)
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#else
#include <c10d/ProcessGroupGloo.hpp>
#include <c10d/TCPStore.hpp>
#endif

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "trainer/communicator.h"

namespace graphshard::trainer {
namespace {

bool IsLoopback(const std::string& addr) {
  return addr == "localhost" || absl::StartsWith(addr, "127.") || addr == "::1";
}

c10d::ReduceOp ToC10d(ReduceOp op) {
  return op == ReduceOp::kMax ? c10d::ReduceOp::MAX : c10d::ReduceOp::SUM;
}

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(int rank, int world_size, std::chrono::milliseconds timeout,
                   c10::intrusive_ptr<c10d::Store> store,
                   c10::intrusive_ptr<c10d::ProcessGroupGloo> pg)
      : rank_(rank),
        world_size_(world_size),
        timeout_(timeout),
        store_(std::move(store)),
        pg_(std::move(pg)) {}

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  const char* name() const override { return "gloo"; }

  absl::Status AllReduce(absl::Span<float> data, ReduceOp op) override {
    return AllReduceImpl(data.data(), static_cast<int64_t>(data.size()), torch::kFloat32, op);
  }
  absl::Status AllReduce(absl::Span<double> data, ReduceOp op) override {
    return AllReduceImpl(data.data(), static_cast<int64_t>(data.size()), torch::kFloat64, op);
  }
  absl::Status AllReduce(absl::Span<int64_t> data, ReduceOp op) override {
    return AllReduceImpl(data.data(), static_cast<int64_t>(data.size()), torch::kInt64, op);
  }

  absl::Status Broadcast(absl::Span<float> data, int root) override {
    if (data.empty()) return absl::OkStatus();
    return Run("broadcast", [&] {
      std::vector<at::Tensor> t = {
          torch::from_blob(data.data(), {static_cast<int64_t>(data.size())}, torch::kFloat32)};
      c10d::BroadcastOptions opts;
      opts.rootRank = root;
      opts.timeout = timeout_;
      pg_->broadcast(t, opts)->wait(timeout_);
    });
  }

 private:
  absl::Status AllReduceImpl(void* data, int64_t n, torch::Dtype dtype, ReduceOp op) {
    if (n == 0) return absl::OkStatus();
    return Run("all-reduce", [&] {
      std::vector<at::Tensor> t = {torch::from_blob(data, {n}, dtype)};
      c10d::AllreduceOptions opts;
      opts.reduceOp = ToC10d(op);
      opts.timeout = timeout_;
      pg_->allreduce(t, opts)->wait(timeout_);
    });
  }

  // c10::Error and gloo's exceptions (std::runtime_error) end here, as a status.
  template <typename F>
  absl::Status Run(const char* what, F&& f) {
    try {
      f();
      return absl::OkStatus();
    } catch (const c10::Error& e) {
      return absl::UnavailableError(absl::StrCat("Gloo ", what, " on rank ", rank_, " of ",
                                                 world_size_,
                                                 " failed (a peer trainer died or "
                                                 "is late?): ",
                                                 e.what_without_backtrace()));
    } catch (const std::exception& e) {
      return absl::UnavailableError(absl::StrCat("Gloo ", what, " on rank ", rank_, " of ",
                                                 world_size_,
                                                 " failed (a peer trainer died or "
                                                 "is late?): ",
                                                 e.what()));
    }
  }

  int rank_;
  int world_size_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
};

class TcpKeyValueStore final : public KeyValueStore {
 public:
  explicit TcpKeyValueStore(c10::intrusive_ptr<c10d::TCPStore> store) : store_(std::move(store)) {}
  absl::Status Set(const std::string& key, const std::string& value) override {
    try {
      store_->set(key, std::vector<uint8_t>(value.begin(), value.end()));
      return absl::OkStatus();
    } catch (const std::exception& e) {
      return absl::UnavailableError(absl::StrCat("rendezvous store set '", key, "': ", e.what()));
    }
  }
  absl::StatusOr<bool> Contains(const std::string& key) override {
    try {
      return store_->check({key});
    } catch (const std::exception& e) {
      return absl::UnavailableError(
          absl::StrCat("rendezvous store check '", key, "': ", e.what()));
    }
  }
  absl::StatusOr<std::string> Get(const std::string& key) override {
    try {
      std::vector<uint8_t> v = store_->get(key);
      return std::string(v.begin(), v.end());
    } catch (const std::exception& e) {
      return absl::DeadlineExceededError(
          absl::StrCat("rendezvous store get '", key, "': ", e.what()));
    }
  }

 private:
  c10::intrusive_ptr<c10d::TCPStore> store_;
};

c10::intrusive_ptr<c10d::TCPStore> MakeStore(const RendezvousConfig& config,
                                             std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions store_opts;
  store_opts.port = config.master_port;
  store_opts.isServer = config.rank == 0;
  store_opts.numWorkers = static_cast<size_t>(config.world_size);
  store_opts.waitWorkers = true;
  store_opts.timeout = timeout;
  return c10::make_intrusive<c10d::TCPStore>(config.master_addr, store_opts);
}

}  // namespace

absl::StatusOr<std::unique_ptr<KeyValueStore>> CreateTcpStore(const RendezvousConfig& config,
                                                              double timeout_s) {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0));
  try {
    return std::unique_ptr<KeyValueStore>(new TcpKeyValueStore(MakeStore(config, timeout)));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(
        "rendezvous of rank ", config.rank, " of ", config.world_size, " at ", config.master_addr,
        ":", config.master_port, " (MASTER_ADDR:MASTER_PORT) failed within ", timeout_s,
        "s: ", e.what()));
  }
}

absl::StatusOr<std::unique_ptr<KeyValueStore>> ConnectTcpStore(const RendezvousConfig& config,
                                                               double timeout_s) {
  c10d::TCPStoreOptions opts;
  opts.port = config.master_port;
  opts.isServer = false;
  opts.waitWorkers = false;
  opts.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0));
  try {
    return std::unique_ptr<KeyValueStore>(
        new TcpKeyValueStore(c10::make_intrusive<c10d::TCPStore>(config.master_addr, opts)));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("connecting to the rendezvous store at ",
                                               config.master_addr, ":", config.master_port,
                                               ": ", e.what()));
  }
}

absl::StatusOr<std::unique_ptr<Communicator>> CreateGlooCommunicator(const RendezvousConfig& config,
                                                                     const GlooOptions& options) {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000.0));
  const std::string where = absl::StrCat(config.master_addr, ":", config.master_port);
  try {
    auto store = MakeStore(config, timeout);

    auto pg_opts = c10d::ProcessGroupGloo::Options::create(timeout);
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname != nullptr && *ifname) {
      pg_opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    } else if (IsLoopback(config.master_addr)) {
      pg_opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      pg_opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    pg_opts->threads = 1;
    auto pg =
        c10::make_intrusive<c10d::ProcessGroupGloo>(store, config.rank, config.world_size, pg_opts);
    return std::unique_ptr<Communicator>(
        new GlooCommunicator(config.rank, config.world_size, timeout, store, pg));
  } catch (const c10::Error& e) {
    return absl::UnavailableError(
        absl::StrCat("rendezvous of rank ", config.rank, " of ", config.world_size, " at ", where,
                     " (MASTER_ADDR:MASTER_PORT) failed within ", options.timeout_s,
                     "s: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(
        "rendezvous of rank ", config.rank, " of ", config.world_size, " at ", where,
        " (MASTER_ADDR:MASTER_PORT) failed within ", options.timeout_s, "s: ", e.what()));
  }
}

}  // namespace graphshard::trainer
