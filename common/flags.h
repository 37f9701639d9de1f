#ifndef GRAPHSHARD_COMMON_FLAGS_H_
#define GRAPHSHARD_COMMON_FLAGS_H_

// The one command-line scheme of every graphshard binary and subcommand: a FlagSet is a local
// value that binds "--name" to a variable the caller owns, with a help line; Parse() fills the
// variables, Usage() lists every registered flag with its help and default.
//
// Why not Abseil flags: ABSL_FLAG defines process-wide mutable globals (docs/STYLE.md: none), so a
// parser cannot be built twice or tested in-process, and its --help ("No flags matched" for our
// binaries: it filters by main's file name) and exit codes are not ours to choose.
//
// Syntax: "--name value" or "--name=value"; booleans "--name", "--no-name" or "--name=V" with V
// one of true/false/yes/no/t/f/y/n/1/0 (any case); "-h" or "--help" asks for usage; "--" ends
// the flags. The last occurrence of a flag wins.
//
// Thread-compatible: use one FlagSet from one thread. Bound variables must outlive the FlagSet.

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace graphshard::common {

// Exit status of every binary for a bad command line (unknown flag, bad value, missing operand).
inline constexpr int kExitUsageError = 2;

struct FlagSetOptions {
  // Also accept Abseil's spellings: "--a_b" for "--a-b" and "--noname" for "--no-name".
  // graphshard-server and graphshard-health were Abseil-flag binaries; deploy scripts pass
  // "--rpc_timeout_s", "--shutdown_grace_s" and "--timeout_s" to them.
  bool abseil_spellings = false;
  // Arguments that do not start with "--" (and all after "--") are returned as operands;
  // otherwise they are an InvalidArgument error.
  bool allow_operands = false;
};

// A closed interval's end for numeric flags (values outside get InvalidArgument).
struct NumberRange {
  double min = -std::numeric_limits<double>::infinity();
  bool min_exclusive = false;
  double max = std::numeric_limits<double>::infinity();
  bool max_exclusive = false;
};

struct ParsedArgs {
  bool help = false;                  // -h or --help was given; nothing else was parsed after it
  std::vector<std::string> operands;  // only with FlagSetOptions::allow_operands
};

class FlagSet {
 public:
  // `synopsis` opens Usage() ("usage: graphshard-trainer (--registry DIR | ...) [flags]");
  // `epilogue`, if any, closes it.
  explicit FlagSet(std::string synopsis, FlagSetOptions options = {}, std::string epilogue = "");
  ~FlagSet();
  FlagSet(const FlagSet&) = delete;
  FlagSet& operator=(const FlagSet&) = delete;

  // Binds --name to *target. The value *target holds now is shown as the default in Usage().
  // `value_name` is the placeholder shown in Usage ("N", "DIR"). Names are unique (assert).
  void AddString(std::string name, std::string* target, std::string value_name, std::string help,
                 bool allow_empty = true);
  void AddInt(std::string name, int* target, std::string value_name, std::string help,
              NumberRange range = {});
  void AddInt64(std::string name, int64_t* target, std::string value_name, std::string help,
                NumberRange range = {});
  void AddUint64(std::string name, uint64_t* target, std::string value_name, std::string help);
  void AddDouble(std::string name, double* target, std::string value_name, std::string help,
                 NumberRange range = {});
  void AddBool(std::string name, bool* target, std::string help);
  // A string that must be one of `choices` (shown as "a|b|c").
  void AddChoice(std::string name, std::string* target, std::vector<std::string> choices,
                 std::string help);
  // Any other value: `set` parses the text and stores it; on a bad value it returns
  // InvalidArgument whose message says what was expected ("a list of host:port"), and Parse
  // reports "--name=value: <that message>". `default_text` is shown as the default ("" = none).
  void AddCustom(std::string name, std::string value_name, std::string help,
                 std::string default_text, std::function<absl::Status(absl::string_view)> set);

  // Replaces the default Usage() shows for the registered --name (a default that depends on
  // other flags, e.g. "node 64; link 128"); "" shows none.
  void SetDefaultText(absl::string_view name, std::string default_text);

  // Parses `args` (without the program name or subcommand). InvalidArgument naming the flag
  // for an unknown flag or a missing value, and naming flag and value for a malformed or
  // out-of-range value; the bound variables may be partly set then.
  absl::StatusOr<ParsedArgs> Parse(absl::Span<const std::string> args);
  // argv[1..argc).
  absl::StatusOr<ParsedArgs> Parse(int argc, const char* const* argv);

  // Whether --name was given in the last Parse.
  bool IsSet(absl::string_view name) const;

  // The synopsis, then one entry per flag ("  --name VALUE  help (default: X)"), the epilogue.
  std::string Usage() const;

 private:
  struct Flag;
  void Add(std::unique_ptr<Flag> flag);
  Flag* Find(absl::string_view name) const;

  std::string synopsis_;
  FlagSetOptions options_;
  std::string epilogue_;
  std::vector<std::unique_ptr<Flag>> flags_;  // registration order, for Usage()
};

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_FLAGS_H_
