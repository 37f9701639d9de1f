#ifndef GRAPHSHARD_TESTS_TESTING_SOURCE_PATHS_H_
#define GRAPHSHARD_TESTS_TESTING_SOURCE_PATHS_H_

// Where a test finds the source tree (tests/data, deploy/ scripts) and the build tree (bin/).
// The paths are compiled into one file (source_paths.cc) rather than into every test: a test's
// object then does not depend on where the tree was cloned, and ccache (with CCACHE_BASEDIR,
// as .ci/run sets it) serves it to a clone at another path.

#include <string>

namespace graphshard::testing {

// The repository's root, without a trailing slash.
const std::string& SourceDir();
// The CMake build folder the tests were built in.
const std::string& BinaryDir();

}  // namespace graphshard::testing

#endif  // GRAPHSHARD_TESTS_TESTING_SOURCE_PATHS_H_
