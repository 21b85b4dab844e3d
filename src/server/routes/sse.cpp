#include "server/routes/sse.h"

namespace qmlx::server {

std::string dump_json(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string sse_data(const nlohmann::json& payload) {
  return "data: " + dump_json(payload) + "\n\n";
}

std::string sse_event(const std::string& event, const nlohmann::json& payload) {
  return "event: " + event + "\ndata: " + dump_json(payload) + "\n\n";
}

std::string sse_comment(const std::string& text) { return ": " + text + "\n\n"; }

std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace qmlx::server
