// Process facts: resident and peak memory (from /proc), memory available to this process
// (cgroup-aware), the user's qmlx folders; and the allocator setting the forward pass wants.
#pragma once

#include <cstdint>
#include <string>

namespace qmlx {

uint64_t current_rss_bytes();
uint64_t peak_rss_bytes();
// min(MemAvailable, cgroup limit - cgroup usage); used by the cache's restore guard.
uint64_t available_memory_bytes();

// "~" and "~/..." expanded with $HOME.
std::string expand_user(const std::string& path);
// $QMLX_HOME or ~/.qmlx: where the demo model and default cache live.
std::string qmlx_home();

// A prefill chunk allocates activation buffers of 1-32 MiB per layer and frees them again.
// glibc serves blocks that large with mmap and returns them on free, so every layer paid page
// faults and the kernel's zeroing for all of them (~8% of an MoE prefill in perf). This keeps
// blocks up to 32 MiB (glibc's largest mmap threshold) on the heap and freed memory mapped for
// reuse; peak memory is unchanged, since the peak is when they are in use. Idempotent.
void keep_large_buffers_for_reuse();

}  // namespace qmlx
