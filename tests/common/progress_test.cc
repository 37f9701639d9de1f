// The progress line of long operations (partitioning, loading a part), in
// both modes: one line per interval when the log is not a terminal, one line redrawn in place
// on a terminal; both end with the "done" line.
#include "common/progress.h"

#include <algorithm>
#include <chrono>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace graphshard::common {
namespace {

TEST(ProgressLine, FormatHasPercentAmountsElapsedAndEta) {
  EXPECT_EQ(ProgressLine::Format("write", 25, 100, 3.0, ProgressUnit::kCount),
            "write: 25% (25/100), 3.0 s, ETA 9.0 s");
  EXPECT_EQ(ProgressLine::Format("load part 0", 1'500'000'000, 3'000'000'000, 2.0,
                                 ProgressUnit::kBytes),
            "load part 0: 50% (1.5 GB/3.0 GB), 2.0 s, ETA 2.0 s");
  // Nothing done yet: no ETA to speak of; done beyond an estimated total: 100%, no ETA.
  EXPECT_EQ(ProgressLine::Format("x", 0, 10, 1.0, ProgressUnit::kCount), "x: 0% (0/10), 1.0 s");
  EXPECT_EQ(ProgressLine::Format("x", 12, 10, 1.0, ProgressUnit::kCount),
            "x: 100% (12/10), 1.0 s");
}

// Not a terminal: whole lines, each ending in '\n', no carriage return or escape sequence.
TEST(ProgressLine, WritesOneLinePerIntervalWhenNotATerminal) {
  std::ostringstream log;
  {
    ProgressLine p({.log = &log, .terminal = false, .interval_s = 0, .prefix = "[t] "}, "step",
                   10);
    for (int i = 0; i < 3; ++i) p.Set(i + 1);
    p.Set(10);
    p.Finish();
  }
  const std::vector<std::string> lines = absl::StrSplit(log.str(), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 5u) << log.str();
  const std::regex progress(R"(\[t\] step: \d+% \(\d+/10\), \d+\.\d s(, ETA \d+\.\d s)?)");
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(std::regex_match(lines[i], progress)) << lines[i];
  EXPECT_TRUE(std::regex_match(lines[4], std::regex(R"(\[t\] step: done \(10\) in \d+\.\d s)")))
      << lines[4];
  EXPECT_EQ(log.str().find('\r'), std::string::npos);
  EXPECT_EQ(log.str().find('\x1b'), std::string::npos);
}

// A long interval: no line before it is due, only the final one.
TEST(ProgressLine, StaysQuietUntilTheIntervalIsDue) {
  std::ostringstream log;
  {
    ProgressLine p({.log = &log, .terminal = false, .interval_s = 3600}, "step", 1000);
    for (int i = 0; i < 1000; ++i) p.Add(1);
    p.Finish();
  }
  const std::string text = log.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_NE(text.find("step: done (1000)"), std::string::npos);
}

// A terminal: each update is "\r<line>\x1b[K" without a newline; the final line ends it.
TEST(ProgressLine, RedrawsInPlaceOnATerminal) {
  std::ostringstream log;
  std::string during;
  {
    ProgressLine p({.log = &log, .terminal = true}, "step", 4);
    // The terminal mode redraws at most every 0.1 s: wait past it before each update.
    for (int i = 1; i <= 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(120));
      p.Set(i);
    }
    during = log.str();
    p.Finish();
  }
  EXPECT_EQ(during.find('\n'), std::string::npos) << during;
  EXPECT_EQ(std::count(during.begin(), during.end(), '\r'), 2) << during;
  EXPECT_NE(during.find("\rstep: 50% (2/4)"), std::string::npos) << during;
  const std::string all = log.str();
  EXPECT_TRUE(all.size() > during.size() && all.back() == '\n');
  EXPECT_NE(all.find("\rstep: done (4) in", during.size()), std::string::npos) << all;
}

// A step that fails (no Finish) claims no "done"; on a terminal its line is ended so that the
// error message that follows starts on a line of its own.
TEST(ProgressLine, FailedStepPrintsNoDone) {
  std::ostringstream plain, terminal;
  {
    ProgressLine p({.log = &plain, .interval_s = 0}, "step", 10);
    p.Set(3);
  }
  EXPECT_EQ(plain.str().find("done"), std::string::npos) << plain.str();
  EXPECT_NE(plain.str().find("step: 30% (3/10)"), std::string::npos) << plain.str();
  {
    ProgressLine p({.log = &terminal, .terminal = true}, "step", 10);
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
    p.Set(3);
  }
  EXPECT_EQ(terminal.str().find("done"), std::string::npos) << terminal.str();
  EXPECT_EQ(terminal.str().back(), '\n');
}

TEST(ProgressLine, SilentWithoutALog) {
  ProgressLine p({}, "step", 10);
  p.Add(5);
  p.Finish();  // nothing to write to, nothing crashes
}

TEST(HumanBytes, UsesDecimalUnits) {
  EXPECT_EQ(HumanBytes(17), "17 B");
  EXPECT_EQ(HumanBytes(12'345), "12 kB");
  EXPECT_EQ(HumanBytes(340'000'000), "340.0 MB");
  EXPECT_EQ(HumanBytes(1'200'000'000), "1.2 GB");
}

}  // namespace
}  // namespace graphshard::common
