// ResponseStore: the Responses API's memory for `previous_response_id`. Each stored response
// keeps its whole conversation as Responses items (the chain before it, its input, its output),
// so a request naming it continues from there. Bounded in count: the oldest is evicted first.
// Kept in process memory only; a restart forgets every id. Thread-safe.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace qmlx::server {

class ResponseStore {
 public:
  static constexpr size_t kDefaultCapacity = 64;

  explicit ResponseStore(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  // Remembers response `id` as `conversation` followed by `output` (both arrays of items).
  void put(const std::string& id, const nlohmann::ordered_json& conversation,
           const nlohmann::json& output);
  // The stored items, or nullopt for an id never stored or already evicted.
  std::optional<nlohmann::ordered_json> get(const std::string& id) const;
  size_t size() const;

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::deque<std::string> order_;  // oldest first
  std::unordered_map<std::string, nlohmann::ordered_json> items_;
};

}  // namespace qmlx::server
