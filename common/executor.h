#ifndef GRAPHSHARD_COMMON_EXECUTOR_H_
#define GRAPHSHARD_COMMON_EXECUTOR_H_

// Where work runs. Injected (no global pools): servers use a thread pool, tests may run work
// inline on the posting thread.

#include <functional>

namespace graphshard::common {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs `work` at some point; thread-safe.
  virtual void Post(std::function<void()> work) = 0;
};

// Runs work immediately on the caller's thread.
class InlineExecutor final : public Executor {
 public:
  void Post(std::function<void()> work) override { work(); }
};

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_EXECUTOR_H_
