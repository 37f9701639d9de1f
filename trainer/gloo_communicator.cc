// The Gloo side of communicator.h: the only file of the trainer that includes c10d. Gloo meets
// its peers through the job's rendezvous store (rendezvous_store.h), seen as a c10d::Store.
#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

// c10d's headers sit under torch/csrc/distributed/c10d/ from LibTorch 1.12 on (Debian's 1.13 and
// the GPU machine's 2.11 alike); older releases installed them as c10d/.
#if __has_include(<torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>)
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#else
#include <c10d/ProcessGroupGloo.hpp>
#include <c10d/Store.hpp>
#endif

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/communicator.h"
#include "trainer/communicators.h"

namespace graphshard::trainer {
namespace {

bool IsLoopback(const std::string& addr) {
  return addr == "localhost" || absl::StartsWith(addr, "127.") || addr == "::1";
}

c10d::ReduceOp ToC10d(client::ReduceOp op) {
  return op == client::ReduceOp::kMax ? c10d::ReduceOp::MAX : c10d::ReduceOp::SUM;
}

class GlooCommunicator final : public client::Communicator {
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

  absl::Status AllReduce(absl::Span<float> data, client::ReduceOp op) override {
    return AllReduceImpl(data.data(), static_cast<int64_t>(data.size()), torch::kFloat32, op);
  }
  absl::Status AllReduce(absl::Span<double> data, client::ReduceOp op) override {
    return AllReduceImpl(data.data(), static_cast<int64_t>(data.size()), torch::kFloat64, op);
  }
  absl::Status AllReduce(absl::Span<int64_t> data, client::ReduceOp op) override {
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
  absl::Status AllReduceImpl(void* data, int64_t n, torch::Dtype dtype, client::ReduceOp op) {
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

// c10d's Store interface over the job's rendezvous store (rendezvous_store.h), for
// ProcessGroupGloo: every call keeps that store's deadlines; a failure is thrown, as c10d's own
// stores do, and CreateGlooCommunicator turns it into a status. c10d's "no timeout" (0) is the
// store's timeout: nothing here waits without end.
class RendezvousC10dStore final : public c10d::Store {
 public:
  explicit RendezvousC10dStore(std::shared_ptr<client::KeyValueStore> store)
      : c10d::Store(std::chrono::milliseconds(absl::ToInt64Milliseconds(store->timeout()))),
        store_(std::move(store)) {}

  // c10d::Store::clone() is pure virtual in newer LibTorch (2.x, the GPU machine's), absent in
  // Debian's 1.13: declared without `override` so that it overrides where it exists.
  c10::intrusive_ptr<c10d::Store> clone() {  // NOLINT(modernize-use-override)
    auto copy = c10::make_intrusive<RendezvousC10dStore>(store_);
    copy->setTimeout(timeout_);
    return copy;
  }

  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    Throw(store_->Set(key, std::string(value.begin(), value.end())));
  }
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override {
    return Bytes(store_->CompareSet(key, std::string(expected.begin(), expected.end()),
                                    std::string(desired.begin(), desired.end())));
  }
  std::vector<uint8_t> get(const std::string& key) override {
    return Bytes(store_->Get(key, Wait(timeout_)));
  }
  int64_t add(const std::string& key, int64_t value) override {
    return Value(store_->Add(key, value));
  }
  bool deleteKey(const std::string& key) override { return Value(store_->Delete(key)); }
  bool check(const std::vector<std::string>& keys) override { return Value(store_->Check(keys)); }
  int64_t getNumKeys() override { return Value(store_->NumKeys()); }
  void wait(const std::vector<std::string>& keys) override {
    Throw(store_->Wait(keys, Wait(timeout_)));
  }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    Throw(store_->Wait(keys, Wait(timeout)));
  }

 private:
  absl::Duration Wait(std::chrono::milliseconds ms) const {
    return ms.count() > 0 ? absl::Milliseconds(ms.count()) : store_->timeout();
  }
  static void Throw(const absl::Status& s) {
    if (!s.ok()) throw std::runtime_error(s.ToString());
  }
  template <typename T>
  static T Value(absl::StatusOr<T> v) {
    Throw(v.status());
    return *std::move(v);
  }
  static std::vector<uint8_t> Bytes(absl::StatusOr<std::string> v) {
    Throw(v.status());
    return std::vector<uint8_t>(v->begin(), v->end());
  }

  std::shared_ptr<client::KeyValueStore> store_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<client::Communicator>> CreateGlooCommunicator(
    const client::RendezvousConfig& config, std::unique_ptr<client::KeyValueStore> store,
    const GlooOptions& options) {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000.0));
  const std::string where = absl::StrCat(config.master_addr, ":", config.master_port);
  try {
    auto c10d_store = c10::make_intrusive<RendezvousC10dStore>(std::move(store));

    auto pg_opts = c10d::ProcessGroupGloo::Options::create(timeout);
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname != nullptr && *ifname) {
      pg_opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    } else if (IsLoopback(config.master_addr)) {
      pg_opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      pg_opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    pg_opts->threads = 1;
    auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(c10d_store, config.rank,
                                                          config.world_size, pg_opts);
    return std::unique_ptr<client::Communicator>(
        new GlooCommunicator(config.rank, config.world_size, timeout, c10d_store, pg));
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
