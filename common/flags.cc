#include "common/flags.h"

#include <cassert>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace graphshard::common {

struct FlagSet::Flag {
  std::string name;
  std::string value_name;  // empty for booleans
  std::string help;
  std::string default_text;
  bool* bool_target = nullptr;  // set for booleans
  // Parses and stores a value; on a bad one, InvalidArgument saying what was expected.
  std::function<absl::Status(absl::string_view)> set;
  bool given = false;
};

namespace {

absl::Status Expected(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("expected ", what));
}

// "an integer >= 1", "a number > 0 and < 1".
std::string Describe(absl::string_view kind, const NumberRange& range) {
  std::vector<std::string> bounds;
  if (std::isfinite(range.min)) {
    bounds.push_back(absl::StrCat(range.min_exclusive ? "> " : ">= ", range.min));
  }
  if (std::isfinite(range.max)) {
    bounds.push_back(absl::StrCat(range.max_exclusive ? "< " : "<= ", range.max));
  }
  if (bounds.empty()) return std::string(kind);
  return absl::StrCat(kind, " ", absl::StrJoin(bounds, " and "));
}

bool InRange(double v, const NumberRange& r) {
  if (v < r.min || (r.min_exclusive && v == r.min)) return false;
  if (v > r.max || (r.max_exclusive && v == r.max)) return false;
  return true;
}

// "an integer >= 1 and <= 2147483647": the range, with T's own largest value where the range
// has no upper bound, so that a value too big for T says what fits.
template <typename T>
std::string DescribeInteger(const NumberRange& range) {
  std::vector<std::string> bounds;
  if (std::isfinite(range.min)) {
    bounds.push_back(absl::StrCat(range.min_exclusive ? "> " : ">= ",
                                  absl::StrFormat("%.0f", range.min)));
  }
  if (std::isfinite(range.max) && range.max < static_cast<double>(std::numeric_limits<T>::max())) {
    bounds.push_back(absl::StrCat(range.max_exclusive ? "< " : "<= ",
                                  absl::StrFormat("%.0f", range.max)));
  } else {
    bounds.push_back(absl::StrCat("<= ", std::numeric_limits<T>::max()));
  }
  return absl::StrCat("an integer ", absl::StrJoin(bounds, " and "));
}

// A setter for an integer type T, range-checked.
template <typename T>
std::function<absl::Status(absl::string_view)> IntegerSetter(T* target, NumberRange range) {
  return [target, range](absl::string_view text) {
    T v{};
    if (!absl::SimpleAtoi(text, &v) || !InRange(static_cast<double>(v), range)) {
      return Expected(DescribeInteger<T>(range));
    }
    *target = v;
    return absl::OkStatus();
  };
}

}  // namespace

FlagSet::FlagSet(std::string synopsis, FlagSetOptions options, std::string epilogue)
    : synopsis_(std::move(synopsis)), options_(options), epilogue_(std::move(epilogue)) {}

FlagSet::~FlagSet() = default;

void FlagSet::Add(std::unique_ptr<Flag> flag) {
  assert(Find(flag->name) == nullptr && "flag registered twice");
  flags_.push_back(std::move(flag));
}

FlagSet::Flag* FlagSet::Find(absl::string_view name) const {
  for (const std::unique_ptr<Flag>& f : flags_) {
    if (f->name == name) return f.get();
  }
  return nullptr;
}

void FlagSet::AddString(std::string name, std::string* target, std::string value_name,
                        std::string help, bool allow_empty) {
  auto f = std::make_unique<Flag>();
  f->name = std::move(name);
  f->value_name = std::move(value_name);
  f->help = std::move(help);
  f->default_text = *target;
  f->set = [target, allow_empty](absl::string_view text) {
    if (text.empty() && !allow_empty) return Expected("a non-empty value");
    *target = std::string(text);
    return absl::OkStatus();
  };
  Add(std::move(f));
}

void FlagSet::AddInt(std::string name, int* target, std::string value_name, std::string help,
                     NumberRange range) {
  AddCustom(std::move(name), std::move(value_name), std::move(help), absl::StrCat(*target),
            IntegerSetter(target, range));
}

void FlagSet::AddInt64(std::string name, int64_t* target, std::string value_name, std::string help,
                       NumberRange range) {
  AddCustom(std::move(name), std::move(value_name), std::move(help), absl::StrCat(*target),
            IntegerSetter(target, range));
}

void FlagSet::AddUint64(std::string name, uint64_t* target, std::string value_name,
                        std::string help) {
  AddCustom(std::move(name), std::move(value_name), std::move(help), absl::StrCat(*target),
            [target](absl::string_view text) {
              uint64_t v = 0;
              if (!absl::SimpleAtoi(text, &v)) return Expected("an unsigned integer");
              *target = v;
              return absl::OkStatus();
            });
}

void FlagSet::AddDouble(std::string name, double* target, std::string value_name, std::string help,
                        NumberRange range) {
  AddCustom(std::move(name), std::move(value_name), std::move(help), absl::StrCat(*target),
            [target, range](absl::string_view text) {
              double v = 0;
              if (!absl::SimpleAtod(text, &v) || !std::isfinite(v) || !InRange(v, range)) {
                return Expected(Describe("a number", range));
              }
              *target = v;
              return absl::OkStatus();
            });
}

void FlagSet::AddBool(std::string name, bool* target, std::string help) {
  auto f = std::make_unique<Flag>();
  f->name = std::move(name);
  f->help = std::move(help);
  f->default_text = *target ? "true" : "false";
  f->bool_target = target;
  f->set = [target](absl::string_view text) {
    if (!absl::SimpleAtob(text, target)) return Expected("true or false");
    return absl::OkStatus();
  };
  Add(std::move(f));
}

void FlagSet::AddChoice(std::string name, std::string* target, std::vector<std::string> choices,
                        std::string help) {
  std::string value_name = absl::StrJoin(choices, "|");
  std::string default_text = *target;
  AddCustom(std::move(name), std::move(value_name), std::move(help), std::move(default_text),
            [target, choices = std::move(choices)](absl::string_view text) {
              for (const std::string& c : choices) {
                if (text == c) {
                  *target = c;
                  return absl::OkStatus();
                }
              }
              return Expected(absl::StrCat("one of ", absl::StrJoin(choices, ", ")));
            });
}

void FlagSet::AddCustom(std::string name, std::string value_name, std::string help,
                        std::string default_text,
                        std::function<absl::Status(absl::string_view)> set) {
  auto f = std::make_unique<Flag>();
  f->name = std::move(name);
  f->value_name = std::move(value_name);
  f->help = std::move(help);
  f->default_text = std::move(default_text);
  f->set = std::move(set);
  Add(std::move(f));
}

void FlagSet::SetDefaultText(absl::string_view name, std::string default_text) {
  Flag* f = Find(name);
  assert(f != nullptr && "no such flag");
  f->default_text = std::move(default_text);
}

absl::StatusOr<ParsedArgs> FlagSet::Parse(int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return Parse(args);
}

absl::StatusOr<ParsedArgs> FlagSet::Parse(absl::Span<const std::string> args) {
  for (std::unique_ptr<Flag>& f : flags_) f->given = false;
  ParsedArgs parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      parsed.help = true;
      return parsed;
    }
    if (arg == "--" && options_.allow_operands) {
      parsed.operands.insert(parsed.operands.end(), args.begin() + i + 1, args.end());
      break;
    }
    if (!absl::StartsWith(arg, "--") || arg == "--") {
      if (!options_.allow_operands) {
        return absl::InvalidArgumentError(
            absl::StrCat("unexpected argument '", arg, "' (flags start with --)"));
      }
      parsed.operands.push_back(arg);
      continue;
    }
    absl::string_view body = absl::string_view(arg).substr(2);
    std::string name(body.substr(0, body.find('=')));
    const bool has_value = name.size() < body.size();
    const absl::string_view inline_value = has_value ? body.substr(name.size() + 1) : "";
    if (options_.abseil_spellings) name = absl::StrReplaceAll(name, {{"_", "-"}});

    Flag* flag = Find(name);
    bool negated = false;
    if (flag == nullptr) {
      // --no-name (and Abseil's --noname) for booleans.
      for (absl::string_view prefix : {"no-", "no"}) {
        absl::string_view rest = name;
        if (prefix == "no" && !options_.abseil_spellings) continue;
        if (!absl::ConsumePrefix(&rest, prefix)) continue;
        Flag* positive = Find(rest);
        if (positive != nullptr && positive->bool_target != nullptr) {
          flag = positive;
          negated = true;
          break;
        }
      }
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", body.substr(0, body.find('=')), "; see --help"));
    }
    flag->given = true;
    if (flag->bool_target != nullptr && !has_value) {
      *flag->bool_target = !negated;
      continue;
    }
    if (negated) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value"));
    }
    std::string value(inline_value);
    if (!has_value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat("--", flag->name, ": missing value"));
      }
      value = args[++i];
    }
    if (absl::Status s = flag->set(value); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag->name, "=", value, ": ", s.message()));
    }
  }
  return parsed;
}

bool FlagSet::IsSet(absl::string_view name) const {
  const Flag* f = Find(name);
  return f != nullptr && f->given;
}

std::string FlagSet::Usage() const {
  constexpr size_t kHelpColumn = 28;
  std::string out = synopsis_;
  if (!out.empty() && out.back() != '\n') out += '\n';
  for (const std::unique_ptr<Flag>& f : flags_) {
    std::string left = absl::StrCat("  --", f->name);
    if (!f->value_name.empty()) absl::StrAppend(&left, " ", f->value_name);
    std::string help = f->help;
    if (!f->default_text.empty()) absl::StrAppend(&help, " (default: ", f->default_text, ")");
    if (left.size() + 1 >= kHelpColumn) {
      absl::StrAppend(&out, left, "\n", std::string(kHelpColumn, ' '));
    } else {
      absl::StrAppend(&out, left, std::string(kHelpColumn - left.size(), ' '));
    }
    absl::StrAppend(&out, absl::StrReplaceAll(help, {{"\n", "\n" + std::string(kHelpColumn, ' ')}}),
                    "\n");
  }
  absl::StrAppend(&out, "  -h, --help", std::string(kHelpColumn - 12, ' '),
                  "print this help and exit\n");
  if (!epilogue_.empty()) {
    absl::StrAppend(&out, epilogue_);
    if (out.back() != '\n') out += '\n';
  }
  return out;
}

}  // namespace graphshard::common
