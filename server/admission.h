#ifndef GRAPHSHARD_SERVER_ADMISSION_H_
#define GRAPHSHARD_SERVER_ADMISSION_H_

// What a server lets its clients hold at once (docs/SERVER.md, "Limits"):
//  - stream slots: at most max_streams open streams, at most max_client_streams per client. A
//    stream that has waited for its client (blocked in a gRPC Write, or for the client to open
//    or release ring segments) for `stream_idle` or longer is idle; when a new stream finds no
//    slot, idle streams are reclaimed for it (oldest wait first; their calls cancelled), so
//    clients that open streams and never read cannot lock the others out;
//  - memory: every request reserves what it may hold (its cost bound, request_cost.h) for its
//    duration, at most client_memory_bytes per client and memory_budget_bytes for the server.
//    Past the client's own cap it gets ResourceExhausted at once, naming the flag. Past what the
//    server has left it queues (first come, first served) until others release enough, for up
//    to memory_wait or its deadline, then ResourceExhausted naming --memory-budget-mib; one that
//    could never fit the budget, or finds max_queued requests (max_client_queued of its client)
//    already waiting, is refused at once.
// A client is what ClientKey() says (today the connection's peer address). Thread-safe.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace graphshard::server {

struct AdmissionOptions {
  int max_streams = 64;
  int max_client_streams = 32;
  absl::Duration stream_idle = absl::Seconds(30);
  int64_t memory_budget_bytes = int64_t{1} << 40;  // all requests of the server together
  int64_t client_memory_bytes = int64_t{1} << 40;  // all requests of one client together
  absl::Duration memory_wait = absl::Seconds(10);   // longest queueing for the server budget
  // Requests queued at once (each holds a handler thread while it waits): past these, refused at
  // once, so that a client cannot park the server's threads in the queue.
  int max_queued = 64;
  int max_client_queued = 8;
};

class Admission {
 public:
  explicit Admission(AdmissionOptions options) : options_(options) {}
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  // Memory held by one request; released on destruction (or when its stream is reclaimed).
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& other) noexcept { *this = std::move(other); }
    Reservation& operator=(Reservation&& other) noexcept;
    ~Reservation() { Release(); }
    int64_t bytes() const { return bytes_; }
    void Release();

   private:
    friend class Admission;
    Admission* owner_ = nullptr;
    std::string client_;
    int64_t bytes_ = 0;
  };

  // One open stream. SetWaitingForClient(true) before a wait on the client (a Write, the
  // ring), false after: waits of stream_idle or longer make the stream reclaimable.
  class StreamSlot {
   public:
    ~StreamSlot();
    void SetWaitingForClient(bool waiting);
    // The slot was taken back for another stream (its call was cancelled).
    bool reclaimed();
    // Attaches the stream's memory reservation: released as soon as the slot is reclaimed.
    void Hold(Reservation reservation);

   private:
    friend class Admission;
    Admission* owner_ = nullptr;
    std::string client_;
    uint64_t id_ = 0;
  };

  // A slot for a new stream of `client`; `cancel` ends the stream's call if it is reclaimed
  // (called under the admission lock: it must not block or call back). ResourceExhausted
  // naming --max-streams or --max-client-streams when no slot is free or reclaimable.
  absl::StatusOr<std::unique_ptr<StreamSlot>> OpenStream(const std::string& client,
                                                        std::function<void()> cancel);
  // Reserves `bytes` for `client`, queueing for the server budget until `deadline` at the
  // latest (and memory_wait); ResourceExhausted naming `what`, the budget and its flag.
  absl::StatusOr<Reservation> Reserve(const std::string& client, int64_t bytes,
                                      const std::string& what,
                                      absl::Time deadline = absl::InfiniteFuture());
  // For a stream: reserves n x `unit` bytes for the largest n <= max_units that fits (at least
  // 1, queued as Reserve, else ResourceExhausted); returns n through `units`.
  absl::StatusOr<Reservation> ReserveUpTo(const std::string& client, int64_t unit, int max_units,
                                          const std::string& what, int* units,
                                          absl::Time deadline = absl::InfiniteFuture());

  int open_streams();
  int64_t reserved_bytes();
  int queued();  // requests waiting for the server budget now

 private:
  struct Slot {
    std::string client;
    std::function<void()> cancel;
    absl::Time waiting_since = absl::InfiniteFuture();
    Reservation held;
  };
  // One request queued for the server budget; Ready() is Mutex::Await's condition.
  struct Waiter {
    Admission* admission;
    uint64_t ticket;
    int64_t bytes;
    // Reads the admission's guarded state: Mutex::Await calls it with admission->mu_ held.
    bool Ready() const ABSL_NO_THREAD_SAFETY_ANALYSIS;
  };
  void Unreserve(const std::string& client, int64_t bytes);
  absl::Status CheckMemory(const std::string& client, int64_t bytes, const std::string& what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reclaims one idle slot (of `client` when not empty); false if none is idle.
  bool ReclaimIdle(const std::string& client) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CloseSlot(uint64_t id);

  const AdmissionOptions options_;
  absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Slot> slots_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> client_streams_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> client_bytes_ ABSL_GUARDED_BY(mu_);
  int64_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<uint64_t> waiting_ ABSL_GUARDED_BY(mu_);  // tickets queued, oldest first
  std::map<std::string, int> client_waiting_ ABSL_GUARDED_BY(mu_);  // queued per client
};

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_ADMISSION_H_
