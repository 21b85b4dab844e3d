// Cache metrics exposition: registers the prefix cache's Prometheus families (issue 5's list,
// each once) in the server's registry and refreshes them from PrefixCache::stats() at every
// scrape, so the cache keeps plain counters and knows nothing of Prometheus.
#pragma once

#include "cache/prefix_cache.h"
#include "server/metrics/metrics.h"

namespace qmlx::server {

// `cache` must outlive the registry's scrapes.
void export_cache_metrics(MetricsRegistry& registry, const PrefixCache& cache);

}  // namespace qmlx::server
