// The cache admin routes (same auth as the API), for a running server's own store:
//   GET  /admin/cache/snapshots             list (id, kind, tokens, bytes, last used, pinned)
//   GET  /admin/cache/snapshots/<id>        inspect one
//   POST /admin/cache/snapshots/<id>/verify verify one (quarantined if corrupt)
//   POST /admin/cache/snapshots/<id>/pin    {"pinned": true|false}, default true
//   DELETE /admin/cache/snapshots/<id>      delete one
//   POST /admin/cache/verify                verify all
//   GET  /admin/cache/stats                 the counters and store sizes
//   POST /admin/cache/clear                 delete every snapshot and chunk
//   POST /admin/cache/gc                    evict down to the low-water mark now
// Every route answers 404 when the server runs without a cache. The routes ask PrefixCache;
// they never touch a store file.
#include <algorithm>
#include <cctype>

#include "base/error.h"
#include "server/common/request_fields.h"
#include "server/routes/api_server_state.h"

namespace qmlx::server {
namespace {

using json = nlohmann::json;

const char* kIdPattern = "/admin/cache/snapshots/([0-9a-fA-F]{32})";

PrefixCache& cache_of(State& state) {
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.cache) throw ApiError(404, "this server runs without a prefix cache");
  return *state.cache;
}

// The route takes either case (ids are printed in lower case, and a client may upper-case
// them); Hash128 reads lower case, so the id is lowered first.
Hash128 snapshot_id(const http::Request& req) {
  std::string hex = req.matches[1].str();
  std::transform(hex.begin(), hex.end(), hex.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto id = Hash128::from_hex(hex);
  if (!id) throw ApiError(400, "bad snapshot id '" + req.matches[1].str() + "'");
  return *id;
}

json report_json(const VerifyReport& r) {
  return {{"id", r.id.hex()},
          {"ok", r.ok},
          {"reason", reject_reason_name(r.reason)},
          {"detail", r.detail},
          {"bad_file", r.bad_file},
          {"bytes_checked", r.bytes_checked}};
}

void check_status(const Status& s) {
  if (s.ok()) return;
  throw ApiError(s.code() == Status::Code::kNotFound ? 404 : 500, s.ToString());
}

void list(const http::Request&, http::Response& res, State& state) {
  json items = json::array();
  for (const SnapshotListing& l : cache_of(state).list()) items.push_back(l.to_json());
  set_json(res, {{"object", "list"}, {"data", std::move(items)}});
}

void inspect(const http::Request& req, http::Response& res, State& state) {
  auto listing = cache_of(state).inspect(snapshot_id(req));
  if (!listing) throw ApiError(404, "no snapshot " + req.matches[1].str());
  set_json(res, listing->to_json());
}

void verify_one(const http::Request& req, http::Response& res, State& state) {
  PrefixCache& cache = cache_of(state);
  Hash128 id = snapshot_id(req);
  if (!cache.inspect(id)) throw ApiError(404, "no snapshot " + id.hex());
  set_json(res, report_json(cache.verify(id)));
}

void verify_all(const http::Request&, http::Response& res, State& state) {
  json reports = json::array();
  size_t failed = 0;
  for (const VerifyReport& r : cache_of(state).verify_all()) {
    failed += r.ok ? 0 : 1;
    reports.push_back(report_json(r));
  }
  set_json(res, {{"checked", reports.size()}, {"failed", failed}, {"reports", reports}});
}

void pin(const http::Request& req, http::Response& res, State& state) {
  bool pinned = true;
  if (!req.body.empty()) {
    auto body = parse_body(req.body);
    auto it = body.find("pinned");
    if (it != body.end()) {
      if (!it->is_boolean()) throw ApiError(400, "'pinned' must be true or false", "pinned");
      pinned = it->get<bool>();
    }
  }
  Hash128 id = snapshot_id(req);
  check_status(cache_of(state).pin(id, pinned));
  set_json(res, {{"id", id.hex()}, {"pinned", pinned}});
}

void remove(const http::Request& req, http::Response& res, State& state) {
  Hash128 id = snapshot_id(req);
  check_status(cache_of(state).remove(id));
  set_json(res, {{"id", id.hex()}, {"deleted", true}});
}

void stats(const http::Request&, http::Response& res, State& state) {
  PrefixCache& cache = cache_of(state);
  json body = cache.stats().to_json();
  body["fingerprint"] = cache.fingerprint().hex();
  body["store_dir"] = cache.store_dir();
  set_json(res, body);
}

void clear(const http::Request&, http::Response& res, State& state) {
  check_status(cache_of(state).clear());
  set_json(res, {{"cleared", true}});
}

void gc(const http::Request&, http::Response& res, State& state) {
  PrefixCache& cache = cache_of(state);
  cache.gc();
  set_json(res, cache.stats().to_json());
}

}  // namespace

void add_cache_admin_routes(http::Server& http, State& state) {
  const std::string id = kIdPattern;
  add_route(http, state, "GET", {"/admin/cache/snapshots"}, list);
  add_routes(http, state, {id}, {{"GET", inspect}, {"DELETE", remove}});
  add_route(http, state, "POST", {id + "/verify"}, verify_one);
  add_route(http, state, "POST", {id + "/pin"}, pin);
  add_route(http, state, "POST", {"/admin/cache/verify"}, verify_all);
  add_route(http, state, "GET", {"/admin/cache/stats"}, stats);
  add_route(http, state, "POST", {"/admin/cache/clear"}, clear);
  add_route(http, state, "POST", {"/admin/cache/gc"}, gc);
}

}  // namespace qmlx::server
