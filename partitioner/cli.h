#ifndef GRAPHSHARD_PARTITIONER_CLI_H_
#define GRAPHSHARD_PARTITIONER_CLI_H_

// The `graphshard-partition` command line, callable in-process (tests run it without a
// subprocess). Subcommands: generate, partition, inspect; see Usage().

#include <ostream>
#include <string>
#include <vector>

namespace graphshard::partitioner {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the work failed (bad input file, I/O); message on err
inline constexpr int kExitUsage = 2;    // bad command line; message and usage on err

std::string Usage();

// `args` excludes the program name. Writes results to `out`, errors to `err`; returns the exit
// status above. Never throws or aborts on bad input.
int RunPartitionCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace graphshard::partitioner

#endif  // GRAPHSHARD_PARTITIONER_CLI_H_
