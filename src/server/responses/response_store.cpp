#include "server/responses/response_store.h"

namespace qmlx::server {

void ResponseStore::put(const std::string& id, const nlohmann::ordered_json& conversation,
                        const nlohmann::json& output) {
  nlohmann::ordered_json items = conversation;
  for (const auto& item : output) items.push_back(nlohmann::ordered_json::parse(item.dump()));
  std::lock_guard<std::mutex> lock(mutex_);
  if (capacity_ == 0) return;
  if (items_.insert_or_assign(id, std::move(items)).second) order_.push_back(id);
  while (order_.size() > capacity_) {
    items_.erase(order_.front());
    order_.pop_front();
  }
}

std::optional<nlohmann::ordered_json> ResponseStore::get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = items_.find(id);
  if (it == items_.end()) return std::nullopt;
  return it->second;
}

size_t ResponseStore::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return items_.size();
}

}  // namespace qmlx::server
