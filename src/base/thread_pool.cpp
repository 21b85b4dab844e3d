#include "base/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <memory>

namespace qmlx {
namespace {
thread_local bool t_inside_pool = false;
int g_requested_threads = 0;

// A decode step makes a parallel_for call every few tens of microseconds (one per matrix),
// and a futex sleep and wake-up costs about as much as the work between them. So a waiting
// thread first spins this long, then sleeps.
constexpr auto kSpin = std::chrono::microseconds(100);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until done() or kSpin has passed; true when done() became true. About every 20 µs it
// yields the core, so a spinning worker does not hold off another runnable thread (the HTTP
// thread streaming tokens and noticing a disconnect) for long; yielding more often costs the
// decode most of what the spinning gains.
template <typename Done>
bool spin_until(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (done()) return true;
    cpu_relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return false;
    if ((i & 1023) == 1023) sched_yield();
  }
}
}  // namespace

ThreadPool::ThreadPool(int threads) {
  threads = std::max(1, threads);
  for (int i = 0; i + 1 < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int index) {
  t_inside_pool = true;
  size_t seen = 0;
  for (;;) {
    std::pair<size_t, size_t> range;
    const std::function<void(size_t, size_t)>* job;
    spin_until([&] { return stop_.load() || generation_.load() != seen; });
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      range = static_cast<size_t>(index + 1) < ranges_.size() ? ranges_[index + 1]
                                                              : std::make_pair<size_t, size_t>(0, 0);
    }
    if (range.first < range.second) (*job)(range.first, range.second);
    if (pending_.fetch_sub(1) == 1) {
      // Under the lock: the caller is then either before its check of pending_ or asleep.
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn,
                              size_t min_grain) {
  if (n == 0) return;
  min_grain = std::max<size_t>(1, min_grain);
  size_t parts = std::min<size_t>(static_cast<size_t>(size()), (n + min_grain - 1) / min_grain);
  if (parts <= 1 || workers_.empty() || t_inside_pool) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ranges_.clear();
    for (size_t p = 0; p < parts; ++p) ranges_.emplace_back(n * p / parts, n * (p + 1) / parts);
    job_ = &fn;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  t_inside_pool = true;
  fn(ranges_[0].first, ranges_[0].second);
  t_inside_pool = false;
  spin_until([&] { return pending_.load() == 0; });
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::parallel_chunks(size_t n, size_t chunk,
                                 const std::function<void(size_t, size_t)>& fn) {
  chunk = std::max<size_t>(1, chunk);
  const size_t chunks = (n + chunk - 1) / chunk;
  if (chunks <= 1 || workers_.empty() || t_inside_pool) {
    if (n > 0) fn(0, n);
    return;
  }
  std::atomic<size_t> next{0};
  // One task per thread; each claims chunks until none are left.
  parallel_for(std::min<size_t>(chunks, size_t(size())), [&](size_t, size_t) {
    for (size_t k = next.fetch_add(1); k < chunks; k = next.fetch_add(1))
      fn(k * chunk, std::min(n, (k + 1) * chunk));
  });
}

void set_default_threads(int threads) { g_requested_threads = threads; }

int default_threads() {
  if (g_requested_threads > 0) return g_requested_threads;
  unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}

ThreadPool& default_pool() {
  static ThreadPool pool(default_threads());
  return pool;
}

}  // namespace qmlx
