#include "common/flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace graphshard::common {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Values {
  std::string name = "x";
  int count = 3;
  int64_t big = 0;
  uint64_t seed = 7;
  double rate = 0.5;
  bool on = false;
  bool yes = true;
  std::string mode = "fast";
  std::vector<std::string> list;
};

void Register(FlagSet& flags, Values& v) {
  flags.AddString("name", &v.name, "NAME", "a name", false);
  flags.AddInt("count", &v.count, "N", "how many", {.min = 1});
  flags.AddInt64("big", &v.big, "N", "a big number", {.min = 0});
  flags.AddUint64("seed", &v.seed, "S", "a seed");
  flags.AddDouble("rate", &v.rate, "X", "a rate", {.min = 0, .max = 1, .max_exclusive = true});
  flags.AddBool("on", &v.on, "switch on");
  flags.AddBool("yes", &v.yes, "default-on switch");
  flags.AddChoice("mode", &v.mode, {"fast", "slow"}, "how");
  flags.AddCustom("list", "A,B", "a list", "", [&v](absl::string_view text) {
    if (text.empty()) return absl::InvalidArgumentError("expected a non-empty list");
    v.list = {std::string(text)};
    return absl::OkStatus();
  });
}

absl::StatusOr<ParsedArgs> Parse(FlagSet& flags, std::vector<std::string> args) {
  return flags.Parse(args);
}

TEST(FlagSetTest, ParsesBothFormsOfEveryType) {
  Values v;
  FlagSet flags("usage: t");
  Register(flags, v);
  absl::StatusOr<ParsedArgs> p = Parse(
      flags, {"--name", "n", "--count=4", "--big", "9000000000", "--seed=18446744073709551615",
              "--rate", "0.25", "--on", "--no-yes", "--mode=slow", "--list", "a,b"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->help);
  EXPECT_EQ(v.name, "n");
  EXPECT_EQ(v.count, 4);
  EXPECT_EQ(v.big, 9000000000);
  EXPECT_EQ(v.seed, 18446744073709551615u);
  EXPECT_DOUBLE_EQ(v.rate, 0.25);
  EXPECT_TRUE(v.on);
  EXPECT_FALSE(v.yes);
  EXPECT_EQ(v.mode, "slow");
  EXPECT_EQ(v.list, std::vector<std::string>{"a,b"});
  EXPECT_TRUE(flags.IsSet("count"));
  EXPECT_TRUE(flags.IsSet("yes"));
  EXPECT_FALSE(flags.IsSet("nope"));
}

TEST(FlagSetTest, DefaultsStayWhenNotGiven) {
  Values v;
  FlagSet flags("usage: t");
  Register(flags, v);
  ASSERT_TRUE(Parse(flags, {}).ok());
  EXPECT_EQ(v.count, 3);
  EXPECT_TRUE(v.yes);
  EXPECT_FALSE(flags.IsSet("count"));
}

TEST(FlagSetTest, BooleanValuesTakeAbseilSpellings) {
  Values v;
  FlagSet flags("usage: t");
  Register(flags, v);
  ASSERT_TRUE(Parse(flags, {"--on=yes", "--yes=False"}).ok());
  EXPECT_TRUE(v.on);
  EXPECT_FALSE(v.yes);
  ASSERT_TRUE(Parse(flags, {"--on=0", "--yes=1"}).ok());
  EXPECT_FALSE(v.on);
  EXPECT_TRUE(v.yes);
}

TEST(FlagSetTest, UnknownFlagIsNamed) {
  Values v;
  FlagSet flags("usage: t");
  Register(flags, v);
  absl::StatusOr<ParsedArgs> p = Parse(flags, {"--count", "2", "--bogus=1"});
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("unknown flag --bogus"));
  // Underscore spellings are unknown unless Abseil spellings are on.
  EXPECT_THAT(Parse(flags, {"--no_such"}).status().message(), HasSubstr("--no_such"));
  EXPECT_FALSE(Parse(flags, {"--noon"}).ok());
}

TEST(FlagSetTest, BadValueNamesFlagAndValue) {
  Values v;
  FlagSet flags("usage: t");
  Register(flags, v);
  struct Case {
    std::vector<std::string> args;
    std::string mentions;
  };
  for (const Case& c : std::vector<Case>{
           {{"--count", "0"}, "--count=0: expected an integer >= 1"},
           {{"--count=two"}, "--count=two: expected an integer"},
           {{"--count", "99999999999"},
            "--count=99999999999: expected an integer >= 1 and <= 2147483647"},
           {{"--count", "9223372036854775807"}, "<= 2147483647"},
           {{"--big=-1"}, "--big=-1"},
           {{"--seed", "-1"}, "--seed=-1: expected an unsigned integer"},
           {{"--rate", "1"}, "--rate=1: expected a number >= 0 and < 1"},
           {{"--rate", "nan"}, "--rate=nan"},
           {{"--on=maybe"}, "--on=maybe: expected true or false"},
           {{"--mode", "medium"}, "--mode=medium: expected one of fast, slow"},
           {{"--name="}, "--name=: expected a non-empty value"},
           {{"--list="}, "--list=: expected a non-empty list"},
           {{"--count"}, "--count: missing value"},
           {{"--no-on=1"}, "--no-on takes no value"},
           {{"stray"}, "unexpected argument 'stray'"},
       }) {
    absl::StatusOr<ParsedArgs> p = Parse(flags, c.args);
    ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << c.mentions;
    EXPECT_THAT(p.status().message(), HasSubstr(c.mentions));
  }
}

TEST(FlagSetTest, HelpListsEveryFlagWithDefaults) {
  Values v;
  FlagSet flags("usage: t [flags]", {}, "the end");
  Register(flags, v);
  for (const char* help : {"--help", "-h"}) {
    absl::StatusOr<ParsedArgs> p = Parse(flags, {"--count", "2", help, "--bogus"});
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_TRUE(p->help);
  }
  const std::string usage = flags.Usage();
  EXPECT_EQ(usage.rfind("usage: t [flags]\n", 0), 0u) << usage;
  for (const char* name : {"--name NAME", "--count N", "--big N", "--seed S", "--rate X", "--on",
                           "--yes", "--mode fast|slow", "--list A,B", "--help"}) {
    EXPECT_THAT(usage, HasSubstr(name));
  }
  EXPECT_THAT(usage, HasSubstr("how many (default: 3)"));
  EXPECT_THAT(usage, HasSubstr("(default: 0.5)"));
  EXPECT_THAT(usage, HasSubstr("(default: fast)"));
  EXPECT_THAT(usage, HasSubstr("the end\n"));
}

// A default that depends on other flags is shown as the caller words it; the value parsed is
// untouched.
TEST(FlagSetTest, DefaultTextCanBeReplaced) {
  Values v;
  FlagSet flags("usage: t [flags]");
  Register(flags, v);
  flags.SetDefaultText("count", "node 3; link 5");
  EXPECT_THAT(flags.Usage(), HasSubstr("how many (default: node 3; link 5)"));
  flags.SetDefaultText("rate", "");
  EXPECT_THAT(flags.Usage(), Not(HasSubstr("(default: 0.5)")));
  ASSERT_TRUE(Parse(flags, {}).ok());
  EXPECT_EQ(v.count, 3);
}

TEST(FlagSetTest, AbseilSpellingsAcceptUnderscoresAndNoPrefix) {
  Values v;
  FlagSet flags("usage: t", {.abseil_spellings = true});
  flags.AddDouble("rpc-timeout-s", &v.rate, "S", "deadline");
  flags.AddBool("shm", &v.yes, "shared memory");
  ASSERT_TRUE(Parse(flags, {"--rpc_timeout_s=10", "--noshm"}).ok());
  EXPECT_DOUBLE_EQ(v.rate, 10);
  EXPECT_FALSE(v.yes);
  ASSERT_TRUE(Parse(flags, {"--rpc-timeout-s", "5", "--shm"}).ok());
  EXPECT_DOUBLE_EQ(v.rate, 5);
  EXPECT_TRUE(v.yes);
  EXPECT_THAT(Parse(flags, {"--time_out"}).status().message(), HasSubstr("--time_out"));
}

TEST(FlagSetTest, OperandsOnlyWhenAllowed) {
  Values v;
  FlagSet flags("usage: t", {.allow_operands = true});
  Register(flags, v);
  absl::StatusOr<ParsedArgs> p = Parse(flags, {"dir", "--on", "--", "--count"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->operands, (std::vector<std::string>{"dir", "--count"}));
  EXPECT_TRUE(v.on);
  EXPECT_EQ(v.count, 3);
}

}  // namespace
}  // namespace graphshard::common
