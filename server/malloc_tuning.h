#ifndef GRAPHSHARD_SERVER_MALLOC_TUNING_H_
#define GRAPHSHARD_SERVER_MALLOC_TUNING_H_

// glibc's allocator and the server's big per-batch buffers (docs/SERVER.md, "Memory reuse").
//
// glibc serves blocks above its mmap threshold (dynamic, at most 32 MiB) with a fresh mmap and
// returns them at free; it gives heap memory back past its trim threshold (128 KiB). A batch's
// big buffers (a bulk frame's tens of MB of peer rows, gathered features, relabelling arrays)
// then came back as fresh pages every batch: a page fault and a zeroed page per 4 KiB, a third of
// a cross-host server's CPU in the kernel (tests/bench/RESULTS.md, "Memory reuse"). Raising both
// thresholds keeps freed blocks for the next batch. mallopt cannot raise the mmap threshold past
// 32 MiB; glibc's tunables (GLIBC_TUNABLES, read at process start) can, so the server re-executes
// itself once with them set.

#include <cstdint>
#include <string>

namespace graphshard::server {

// The GLIBC_TUNABLES value: `current` (the environment's, may be null or empty) with an mmap
// threshold of mib MiB and a trim threshold of 2 x mib MiB appended, unless `current` sets either
// already (the user's choice wins). Empty when nothing is to be added.
std::string MallocTunables(const char* current, int64_t mib);

// Re-executes this binary (its path from /proc/self/exe, same argv and pid) with MallocTunables set, once: the
// new image finds GRAPHSHARD_MALLOC_TUNED set and returns at once. mib <= 0, nothing to add, or an
// exec that fails (a warning on stderr): returns, and the server runs with glibc's defaults.
void ReexecWithMallocTunables(char** argv, int64_t mib);

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_MALLOC_TUNING_H_
