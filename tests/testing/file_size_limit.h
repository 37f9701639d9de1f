#ifndef GRAPHSHARD_TESTS_TESTING_FILE_SIZE_LIMIT_H_
#define GRAPHSHARD_TESTS_TESTING_FILE_SIZE_LIMIT_H_

// A disk that fills up, without a small file system: while a FileSizeLimit lives, this
// process's files may grow to `bytes` and no further (RLIMIT_FSIZE): a write across the limit is
// cut short and the next one fails with EFBIG ("File too large"), as a write to a full disk
// fails with ENOSPC. SIGXFSZ, which would kill the process, is ignored meanwhile. Header only.

#include <sys/resource.h>

#include <csignal>

namespace graphshard::testing {

class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = old_;
    limit.rlim_cur = bytes;
    ok_ = setrlimit(RLIMIT_FSIZE, &limit) == 0;
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;
  bool ok() const { return ok_; }  // the limit is in force

 private:
  rlimit old_{};
  void (*old_handler_)(int) = SIG_DFL;
  bool ok_ = false;
};

}  // namespace graphshard::testing

#endif  // GRAPHSHARD_TESTS_TESTING_FILE_SIZE_LIMIT_H_
