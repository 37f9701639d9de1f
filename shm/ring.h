#ifndef GRAPHSHARD_SHM_RING_H_
#define GRAPHSHARD_SHM_RING_H_

// POSIX shared-memory segments for the same-host batch path: the server writes a minibatch's
// arrays into a segment; the trainer maps it, unlinks the name at once (the mapping stays valid
// until the last unmap) and reads the arrays in place. One-shot segments (one per message) or,
// for streams whose reader asks for it, a ring of reused segments (ShmRing / ShmRingReader).

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace graphshard::shm {

// A mapped segment; unmapped on destruction. Not thread-safe for writers.
// A ring segment (ShmRing, ShmRingReader) starts with one control page holding its state word;
// data() is the part after it.
class ShmSegment {
 public:
  // Creates `name` (which starts with '/') of `size` bytes, exclusive, mapped read-write.
  // Internal naming the segment on failure.
  static absl::StatusOr<std::unique_ptr<ShmSegment>> Create(const std::string& name, size_t size);
  // Maps an existing segment read-only and unlinks its name. NotFound if it does not exist,
  // DataLoss if it is smaller than `size`.
  static absl::StatusOr<std::shared_ptr<const ShmSegment>> OpenAndUnlink(const std::string& name,
                                                                         size_t size);
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  const std::string& name() const { return name_; }
  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }
  // Reader side: the mapping was registered by the reader's MapHooks (e.g. pinned for DMA).
  bool registered() const { return static_cast<bool>(on_unmap_); }

 private:
  friend class ShmRing;
  friend class ShmRingReader;
  ShmSegment(std::string name, char* data, size_t size)
      : name_(std::move(name)), base_(data), mapped_(size == 0 ? 1 : size), data_(data),
        size_(size) {}
  // Ring segments: the state word, the first 32 bits of the control page: busy (the writer's,
  // or sent and not opened yet), opened (the reader holds it) or released in the low two bits,
  // and above them a count of changes, so that a waiter that read the word sees any change
  // since (busy -> opened -> released -> busy included). Every change wakes the word's futex
  // waiters (ShmRing::WaitForReader).
  enum class RingState : uint32_t { kReleased = 0, kBusy = 1, kOpened = 2 };
  uint32_t* StateWord() const { return reinterpret_cast<uint32_t*>(base_); }
  uint32_t Word() const;
  RingState State() const { return static_cast<RingState>(Word() & 3u); }
  void SetState(RingState state) const;
  bool Released() const { return State() == RingState::kReleased; }
  std::string name_;
  char* base_;     // the mapping (control page first for ring segments)
  size_t mapped_;  // its length
  char* data_;
  size_t size_;
  int fd_ = -1;  // ring segments of the writer: kept to grow them (closed with the segment)
  std::function<void()> on_unmap_;  // runs before the mapping goes (undoes a registration)
};

// Bytes in front of a ring segment's data: the control page.
inline constexpr size_t kShmControlBytes = 4096;

// The writer side of the same-host stream ring: the segments of one stream (or of one client's
// successive streams, server/ring_registry.h), reused once the
// reader released them, so that a batch costs no new pages, page faults or unmapping (a fresh
// 121 MB segment per batch spent a third of the server's CPU in the kernel; tests/bench/
// RESULTS.md). A segment is handed out busy; the reader (ShmRingReader) releases it when the
// last reference to its batch is gone. Segments grow (never shrink) to the largest batch they
// held; all are unmapped with the ring. The reader unlinks a name when it first opens it; a
// stream that ends early calls UnlinkAll; the ring's destructor unlinks the segments never sent
// (batches built while the stream was ending). A segment acquired and dropped without being
// sent (its batch was dropped) is free again once no one holds it. Thread-safe.
class ShmRing {
 public:
  // Segment names are TaggedSegmentName(name_prefix + a number from `counter` (shared with
  // one-shot segments), key): `key` is the reader's (StreamBatchesRequest.shm_ring_key).
  ShmRing(std::string name_prefix, std::atomic<int64_t>* counter, std::string key);
  ~ShmRing();
  ShmRing(const ShmRing&) = delete;
  ShmRing& operator=(const ShmRing&) = delete;
  // Unique within the process, increasing with creation (Minibatch.shm_ring_serial).
  uint64_t serial() const { return serial_; }
  // A busy segment with at least `size` data bytes: a released one (grown if needed) or a new
  // one. `reused` (optional) tells which.
  absl::StatusOr<std::shared_ptr<ShmSegment>> Acquire(size_t size, bool* reused = nullptr);
  int64_t segments() const;
  // The segment `name` went to the reader; it counts in HeldByReader until the reader releases it.
  void MarkSent(const std::string& name);
  // Segments sent to the reader and not released yet (the writer bounds this: back-pressure),
  // and how many of those the reader has not opened yet (it has batches it has not read).
  struct ReaderHold {
    int64_t held = 0;
    int64_t unopened = 0;
    bool operator==(const ReaderHold&) const = default;
  };
  ReaderHold HeldByReader() const;
  // Blocks until the reader's hold differs from `seen` (it opened or released a sent segment)
  // or `deadline` passes, and returns the hold then; at once if it differs already. No
  // polling: a cross-process wait on the sent segments' state words (shm/internal/futex.h),
  // which the reader wakes as it opens or releases a segment.
  ReaderHold WaitForReader(const ReaderHold& seen, absl::Time deadline) const;
  // Unlinks every segment's name (for a stream that failed: the client may never open them).
  void UnlinkAll();

 private:
  const std::string prefix_;
  std::atomic<int64_t>* counter_;
  const std::string key_;
  const uint64_t serial_;
  mutable absl::Mutex mu_;
  struct Slot {
    std::shared_ptr<ShmSegment> segment;
    bool sent = false;  // since it was last acquired
    uint64_t sent_order = 0;  // when (MarkSent calls so far)
  };
  std::vector<Slot> segments_ ABSL_GUARDED_BY(mu_);
  uint64_t sends_ ABSL_GUARDED_BY(mu_) = 0;
};

// The reader side: maps each ring segment once (the name is unlinked at the first open; the
// descriptor is kept to follow growth) and hands out leases: the segment is released to the
// writer when the last copy of a lease is gone. One reader may serve a client's successive
// streams (StreamBatchesRequest.shm_ring_id): segments stay mapped between them. Streams
// Attach to the ring (serial) they read and Detach when they end; attaching to a ring unmaps
// the segments of the other rings no attached stream reads (the server never sends those
// again: it serves a client id from its newest ring, and a restarted server has new rings).
// Leases keep their own mapping.
// Thread-safe.
class ShmRingReader {
 public:
  ShmRingReader() = default;
  ~ShmRingReader();
  ShmRingReader(const ShmRingReader&) = delete;
  ShmRingReader& operator=(const ShmRingReader&) = delete;
  // Called for every mapping the reader makes (base, length: control page included) and
  // before it is unmapped (from whichever thread drops the last lease). on_map returning false
  // leaves that mapping unregistered. Set before the first Open.
  struct MapHooks {
    std::function<bool(void* base, size_t length)> on_map;
    std::function<void(void* base)> on_unmap;
  };
  void SetMapHooks(MapHooks hooks);
  // The segment `name` of ring `serial` with at least `size` data bytes. NotFound if it was
  // never mapped here and no longer exists, DataLoss if it is smaller than `size` or the writer
  // reused it while a lease was still held.
  absl::StatusOr<std::shared_ptr<const ShmSegment>> Open(const std::string& name, size_t size,
                                                         uint64_t serial = 0);
  void Attach(uint64_t serial);
  void Detach(uint64_t serial);
  // Segments mapped now (tests).
  int64_t mapped() const;

 private:
  struct Entry {
    int fd = -1;
    uint64_t serial = 0;
    std::shared_ptr<ShmSegment> segment;
  };
  mutable absl::Mutex mu_;
  MapHooks hooks_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, int> attached_ ABSL_GUARDED_BY(mu_);  // serial -> streams reading it
};

// Removes a segment name (ignores a missing one).
void UnlinkShm(const std::string& name);

// A segment name prefix unique to one server instance: "/graphshard-<pid>-<nonce>-".
std::string NewShmPrefix();
// Shortest client key a server names segments for (the clients send 16 random bytes); a request
// with a shorter one gets its answer inline.
inline constexpr size_t kMinShmKeyBytes = 16;

// The name of a segment a server makes for one client: `stem` (its prefix and a number), '_',
// and common::SegmentTag(key, stem), where `key` is the client's secret from its request
// (StreamBatchesRequest.shm_ring_key, GatherFeaturesRequest.shm_key).
std::string TaggedSegmentName(absl::string_view stem, absl::string_view key);
// OK if `name` is a segment a graphshard server with `prefix` (a NewShmPrefix() it announced in
// Metadata.shm_prefix) made for the client holding `key`: the prefix's form, digits, '_' and
// the tag of `key` (TaggedSegmentName). Otherwise DataLoss naming it: a client maps, writes or
// unlinks no other object (another application's /dev/shm file, the server's host proof, a
// segment made for another client, whatever a server that is not the job's announces). A
// server that never saw `key` cannot name a segment the check accepts, except by guessing 64
// bits.
absl::Status CheckSegmentName(absl::string_view name, absl::string_view prefix,
                              absl::string_view key);
// Removes the segments named with `own_prefix`, and those of graphshard processes that no longer
// exist (left behind by a crash). Best effort.
void RemoveOwnAndStaleShm(const std::string& own_prefix);

// An id equal for processes on the same host: "<kernel boot id>/<hostname>/net:[<inode>]" (the
// network namespace, so that processes in different network namespaces count as different
// hosts). A server compares it with a client's to decide whether the client may map its
// shared memory; trainers group ranks and parts by it (client/assignment.h).
std::string HostId();

}  // namespace graphshard::shm

#endif  // GRAPHSHARD_SHM_RING_H_
