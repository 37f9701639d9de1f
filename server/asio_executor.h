#ifndef GRAPHSHARD_SERVER_ASIO_EXECUTOR_H_
#define GRAPHSHARD_SERVER_ASIO_EXECUTOR_H_

// common::Executor over a Boost.Asio thread pool. Destruction waits for posted work to finish.

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "common/executor.h"

namespace graphshard::server {

class AsioExecutor final : public common::Executor {
 public:
  explicit AsioExecutor(int threads) : pool_(static_cast<size_t>(threads < 1 ? 1 : threads)) {}
  ~AsioExecutor() override { pool_.join(); }
  void Post(std::function<void()> work) override { boost::asio::post(pool_, std::move(work)); }

 private:
  boost::asio::thread_pool pool_;
};

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_ASIO_EXECUTOR_H_
