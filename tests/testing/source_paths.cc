#include "tests/testing/source_paths.h"

namespace graphshard::testing {

const std::string& SourceDir() {
  static const std::string* dir = new std::string(GRAPHSHARD_SOURCE_DIR);
  return *dir;
}

const std::string& BinaryDir() {
  static const std::string* dir = new std::string(GRAPHSHARD_BINARY_DIR);
  return *dir;
}

}  // namespace graphshard::testing
