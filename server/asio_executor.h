#ifndef GRAPHSHARD_SERVER_ASIO_EXECUTOR_H_
#define GRAPHSHARD_SERVER_ASIO_EXECUTOR_H_

// common::Executor over a Boost.Asio thread pool. Destruction waits for posted work to finish.

#include <pthread.h>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "common/executor.h"

namespace graphshard::server {

class AsioExecutor final : public common::Executor {
 public:
  explicit AsioExecutor(int threads) : pool_(static_cast<size_t>(threads < 1 ? 1 : threads)) {}
  ~AsioExecutor() override { pool_.join(); }
  // The pool's threads are named `name` (at most 15 characters: `top -H` shows them).
  AsioExecutor(int threads, const char* name) : AsioExecutor(threads) { name_ = name; }
  void Post(std::function<void()> work) override {
    if (name_ == nullptr) {
      boost::asio::post(pool_, std::move(work));
      return;
    }
    boost::asio::post(pool_, [name = name_, work = std::move(work)] {
      static thread_local const bool named = (pthread_setname_np(pthread_self(), name), true);
      (void)named;
      work();
    });
  }

 private:
  boost::asio::thread_pool pool_;
  const char* name_ = nullptr;
};

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_ASIO_EXECUTOR_H_
