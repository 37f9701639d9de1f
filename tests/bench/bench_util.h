#ifndef GRAPHSHARD_TESTS_BENCH_BENCH_UTIL_H_
#define GRAPHSHARD_TESTS_BENCH_BENCH_UTIL_H_

// Baselines measured in the same run as the thing they compare with: memcpy bandwidth and raw
// TCP loopback throughput; the JSON-lines output of benchmarks; their shared flag parsing.

#include <cstdint>
#include <string>
#include <vector>

namespace graphshard::bench {

// Bytes per second of memcpy over a buffer of `bytes` (min over `reps` of the time).
double MemcpyBytesPerSecond(size_t bytes, int reps);

// Bytes per second of one TCP stream over 127.0.0.1 (one sender thread, one receiver), moving
// `total_bytes` in 1 MiB writes. Returns 0 if sockets fail.
double TcpLoopbackBytesPerSecond(size_t total_bytes);

// {"name": ..., "value": ..., "unit": ...[, "baseline": ..., "ratio": ...]} on stdout.
void PrintResult(const std::string& name, double value, const std::string& unit);
void PrintCompared(const std::string& name, double value, const std::string& unit,
                   const std::string& baseline_name, double baseline_value);

// "15,10,5" -> {15, 10, 5} into *out (replaced); false on a value that is not an integer.
bool ParseFanouts(const std::string& text, std::vector<int32_t>* out);

// "1,8,16" -> {1, 8, 16} into *out (replaced); false on an empty list or a value below 1.
bool ParseCounts(const std::string& text, std::vector<int>* out);

}  // namespace graphshard::bench

#endif  // GRAPHSHARD_TESTS_BENCH_BENCH_UTIL_H_
