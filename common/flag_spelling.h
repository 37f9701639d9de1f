#ifndef GRAPHSHARD_COMMON_FLAG_SPELLING_H_
#define GRAPHSHARD_COMMON_FLAG_SPELLING_H_

// Our command lines spell flags with dashes (--rpc-timeout-s) as DESIGN.md does; Abseil flags
// are declared with underscores. Rewrites "--a-b[=v]" to "--a_b[=v]" in place so both spellings
// work. Only the name part (before '=') is touched; "--" and values are left alone.

#include <string>
#include <vector>

namespace graphshard::common {

inline std::vector<char*> UnderscoreFlagNames(int argc, char** argv,
                                              std::vector<std::string>& storage) {
  storage.assign(argv, argv + argc);
  std::vector<char*> out;
  for (std::string& arg : storage) {
    if (arg.size() > 2 && arg[0] == '-' && arg[1] == '-') {
      size_t end = arg.find('=');
      if (end == std::string::npos) end = arg.size();
      for (size_t i = 2; i < end; ++i) {
        if (arg[i] == '-') arg[i] = '_';
      }
    }
    out.push_back(arg.data());
  }
  return out;
}

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_FLAG_SPELLING_H_
