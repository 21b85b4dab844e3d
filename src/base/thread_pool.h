// ThreadPool: a fixed set of workers for data-parallel loops. parallel_for splits [0, n) into
// contiguous ranges, runs one on the calling thread, and returns when all are done;
// parallel_chunks hands out smaller chunks on demand. There is
// one pool per process (default_pool()), sized to the cores, so nested parallel code never
// oversubscribes: a parallel_for called from inside a worker runs serially.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace qmlx {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // fn(begin, end) is called on disjoint ranges covering [0, n); at most size() ranges,
  // each at least min_grain long (except when n < min_grain).
  void parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn,
                    size_t min_grain = 1);

  // fn(begin, end) on the chunks [k * chunk, (k + 1) * chunk) of [0, n), which the threads
  // claim one at a time: a thread slowed by something else on its core (a shared machine)
  // then does fewer chunks instead of holding the others up at the end, as a fixed split
  // would. fn must not rely on how the chunks fall to threads.
  void parallel_chunks(size_t n, size_t chunk, const std::function<void(size_t, size_t)>& fn);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(size_t, size_t)>* job_ = nullptr;
  std::vector<std::pair<size_t, size_t>> ranges_;
  // Written under mutex_; atomic so that waiting threads can spin on them without it.
  std::atomic<size_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::mutex run_mutex_;  // one parallel_for at a time
};

// The process-wide pool. set_default_threads must be called before first use to change it.
ThreadPool& default_pool();
void set_default_threads(int threads);
int default_threads();

}  // namespace qmlx
