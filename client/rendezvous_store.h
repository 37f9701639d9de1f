#ifndef GRAPHSHARD_CLIENT_RENDEZVOUS_STORE_H_
#define GRAPHSHARD_CLIENT_RENDEZVOUS_STORE_H_

// The trainers' rendezvous store (docs/SECURITY.md): a key-value store that
// rank 0 serves over gRPC (proto/rendezvous_store.proto), in place of c10d's TCPStore, which in
// LibTorch 1.13 listens on every interface and asks no one for anything. This one
//  - binds MASTER_ADDR:MASTER_PORT only (never a wildcard address, no SO_REUSEPORT),
//  - is made by rpc/channel.h like every other graphshard port: the job token on every call
//    (UNAUTHENTICATED without it), TLS (and mutual TLS) when the trainer has --tls-ca,
//  - bounds every call: a wait ends with DEADLINE_EXCEEDED naming the key, and what a client may
//    store is limited (StoreLimits: RESOURCE_EXHAUSTED), so one cannot exhaust rank 0.
// Gloo (gloo_communicator.cc, through a c10d::Store over this client) and NCCL (its unique id)
// meet through it, and the trainers' heartbeats (rank_heartbeats.h) beat in it.
// No Torch. Thread-safe.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/communicator.h"
#include "client/internal/store_table.h"
#include "client/rendezvous.h"
#include "rpc/options.h"

namespace graphshard::client {

// A running store service. Destruction stops it: calls still waiting end with UNAVAILABLE.
class RendezvousStoreServer {
 public:
  // Serves on host:port (port 0: any free one; see port()), with `rpc`'s token and TLS (a TLS
  // server needs tls.cert_pem and tls.key_pem: InvalidArgument otherwise). Unavailable naming
  // the address when it cannot be bound (in use, or not an address of this host).
  static absl::StatusOr<std::unique_ptr<RendezvousStoreServer>> Start(
      const std::string& host, int port, const rpc::RpcOptions& rpc,
      const StoreLimits& limits = {});
  ~RendezvousStoreServer();
  RendezvousStoreServer(const RendezvousStoreServer&) = delete;
  RendezvousStoreServer& operator=(const RendezvousStoreServer&) = delete;

  int port() const;

  class Impl;

 private:
  explicit RendezvousStoreServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "host:port", bracketing an IPv6 host.
std::string JoinHostPort(const std::string& host, int port);

// A client of the store at `address` ("host:port"): every call has a deadline (`timeout`, or a
// wait's length plus a margin), fails fast when the store cannot be reached (UNAVAILABLE), and
// names the store's address in its errors. Never fails here: the connection is made lazily.
std::unique_ptr<KeyValueStore> MakeRendezvousStoreClient(const std::string& address,
                                                         const rpc::RpcOptions& rpc,
                                                         absl::Duration timeout);

// The job's rendezvous: rank 0 starts the store on MASTER_ADDR:MASTER_PORT, every rank
// connects (retrying while rank 0 is not up yet) and checks in, and rank 0 waits until every
// rank has. The returned store is rank 0's server and client (the server lives as long as it)
// or a client, with `timeout_s` as its timeout. Unavailable / DeadlineExceeded /
// Unauthenticated, naming MASTER_ADDR:MASTER_PORT and the ranks that did not come, within
// timeout_s.
absl::StatusOr<std::unique_ptr<KeyValueStore>> CreateRendezvousStore(const RendezvousConfig& config,
                                                                     const rpc::RpcOptions& rpc,
                                                                     double timeout_s);

// One more client of the store that CreateRendezvousStore set up (already running), every call
// bounded by timeout_s: for RankHeartbeats. Its first call must answer within timeout_s.
absl::StatusOr<std::unique_ptr<KeyValueStore>> ConnectRendezvousStore(
    const RendezvousConfig& config, const rpc::RpcOptions& rpc, double timeout_s);

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_RENDEZVOUS_STORE_H_
