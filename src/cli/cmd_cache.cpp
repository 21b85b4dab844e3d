// `qmlx cache ls|show|verify|pin|unpin|rm|stats|clear|gc`: the disk cache from the command
// line, with no model loaded: what is stored (per snapshot: id, kind, tokens, bytes, last
// use, pin), whether it is intact, and housekeeping. Tables for people, --json for scripts.
#include <cstdio>
#include <ctime>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/human_bytes.h"
#include "base/process.h"
#include "cache/admin.h"
#include "cache/config.h"
#include "cache/shared_tier.h"
#include "cli/command.h"
#include "server/config/options.h"

namespace qmlx::cli {
namespace {

struct CacheOptions {
  std::string config_path;
  bool json = false;
  std::string id;
};

CacheConfig load_config(const std::string& path) {
  ParsedCacheConfig parsed = load_cache_config_file(path);
  for (const std::string& warning : parsed.warnings) {
    std::fprintf(stderr, "warning: %s\n", warning.c_str());
  }
  return parsed.config;
}

std::string local_time(int64_t ms) {
  std::time_t seconds = std::time_t(ms / 1000);
  std::tm tm{};
  localtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%d %H:%M:%S", &tm);
  return buffer;
}

void print_json(const nlohmann::json& value) { std::printf("%s\n", value.dump(2).c_str()); }

SnapshotRef find_or_throw(const CacheAdmin& admin, const std::string& id) {
  std::string error;
  std::optional<SnapshotRef> ref = admin.find(id, &error);
  if (!ref) throw Error(error);
  return *ref;
}

int list_snapshots(CacheAdmin& admin, const CacheOptions& o) {
  std::vector<SnapshotListing> all = admin.list();
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const SnapshotListing& l : all) out.push_back(l.to_json());
    print_json(out);
    return 0;
  }
  std::printf("%-16s  %-17s  %8s  %10s  %-19s  %s\n", "ID", "KIND", "TOKENS", "BYTES", "LAST USED",
              "PINNED");
  for (const SnapshotListing& l : all) {
    std::printf("%-16s  %-17s  %8lld  %10s  %-19s  %s\n", l.id.hex().substr(0, 16).c_str(),
                std::string(snapshot_kind_name(l.kind)).c_str(), static_cast<long long>(l.tokens),
                human_bytes(l.bytes).c_str(), local_time(l.last_used_ms).c_str(),
                l.pinned ? "yes" : "");
  }
  return 0;
}

int show_snapshot(CacheAdmin& admin, const CacheOptions& o) {
  std::optional<SnapshotListing> l = admin.inspect(find_or_throw(admin, o.id));
  nlohmann::json j = l->to_json();
  if (o.json) {
    print_json(j);
    return 0;
  }
  for (const auto& [key, value] : j.items()) {
    std::printf("%-13s %s\n", key.c_str(),
                value.is_string() ? value.get<std::string>().c_str() : value.dump().c_str());
  }
  return 0;
}

int verify_snapshots(CacheAdmin& admin, const CacheOptions& o) {
  std::vector<VerifyReport> reports;
  if (o.id.empty()) {
    reports = admin.verify_all();
  } else {
    reports.push_back(admin.verify(find_or_throw(admin, o.id)));
  }
  int failed = 0;
  nlohmann::json out = nlohmann::json::array();
  for (const VerifyReport& r : reports) {
    failed += !r.ok;
    out.push_back({{"id", r.id.hex()},
                   {"ok", r.ok},
                   {"reason", r.ok ? "" : reject_reason_name(r.reason)},
                   {"detail", r.detail},
                   {"bytes_checked", r.bytes_checked}});
    if (!o.json) {
      std::printf("%s  %s%s%s\n", r.id.hex().substr(0, 16).c_str(), r.ok ? "ok" : "FAILED ",
                  r.ok ? "" : reject_reason_name(r.reason),
                  r.ok ? "" : (" (" + r.detail + "; quarantined)").c_str());
    }
  }
  if (o.json) print_json(out);
  if (!o.json) std::printf("%zu verified, %d failed\n", reports.size(), failed);
  return failed == 0 ? 0 : 1;
}

// The shared tier's holdings for every fingerprint stored locally (none without `shared`).
nlohmann::json shared_stats(const CacheConfig& config, const std::vector<StoreSummary>& stores) {
  if (!config.shared.enabled) return nullptr;
  nlohmann::json out = {{"backend", config.shared.backend},
                        {"nodes", config.shared.nodes},
                        {"stores", nlohmann::json::array()}};
  for (const StoreSummary& s : stores) {
    SharedTier tier(config.shared, s.fingerprint);
    SharedTier::Summary summary;
    Status status = tier.summarize(&summary);
    nlohmann::json store = {{"fingerprint", s.fingerprint.hex()},
                            {"snapshots", summary.snapshots},
                            {"chunks", summary.chunks},
                            {"bytes", summary.bytes}};
    if (!status.ok()) store["error"] = status.ToString();
    out["stores"].push_back(store);
  }
  return out;
}

int print_stats(CacheAdmin& admin, const CacheConfig& config, const CacheOptions& o) {
  std::vector<StoreSummary> stores = admin.stores();
  uint64_t total = 0;
  for (const StoreSummary& s : stores) total += s.bytes;
  const nlohmann::json shared = shared_stats(config, stores);
  if (o.json) {
    nlohmann::json out = {{"dir", config.disk_cache_dir},
                          {"bytes", total},
                          {"cap_bytes", config.disk_cap_bytes()},
                          {"stores", nlohmann::json::array()},
                          {"shared", shared}};
    for (const StoreSummary& s : stores) out["stores"].push_back(s.to_json());
    print_json(out);
    return 0;
  }
  std::printf("cache folder: %s\nused: %s of %s\n", config.disk_cache_dir.c_str(),
              human_bytes(total).c_str(), human_bytes(config.disk_cap_bytes()).c_str());
  std::printf("%-32s  %9s  %7s  %6s  %10s  %10s\n", "FINGERPRINT", "SNAPSHOTS", "CHUNKS", "PINNED",
              "BYTES", "QUARANTINE");
  for (const StoreSummary& s : stores) {
    std::printf("%-32s  %9zu  %7zu  %6zu  %10s  %10s\n", s.fingerprint.hex().c_str(), s.snapshots,
                s.chunks, s.pinned, human_bytes(s.bytes).c_str(),
                human_bytes(s.quarantine_bytes).c_str());
  }
  if (shared.is_null()) return 0;
  std::printf("shared tier: %s %s\n", config.shared.backend.c_str(),
              shared["nodes"].dump().c_str());
  std::printf("%-32s  %9s  %7s  %10s\n", "FINGERPRINT", "SNAPSHOTS", "CHUNKS", "BYTES");
  for (const nlohmann::json& s : shared["stores"]) {
    std::printf("%-32s  %9zu  %7zu  %10s%s\n", s["fingerprint"].get<std::string>().c_str(),
                s["snapshots"].get<size_t>(), s["chunks"].get<size_t>(),
                human_bytes(s["bytes"].get<uint64_t>()).c_str(),
                s.contains("error") ? ("  " + s["error"].get<std::string>()).c_str() : "");
  }
  return 0;
}

int report_status(const Status& s, const std::string& done, const CacheOptions& o) {
  if (!s.ok()) throw Error(s.ToString());
  if (o.json) {
    print_json({{"ok", true}, {"message", done}});
  } else {
    std::printf("%s\n", done.c_str());
  }
  return 0;
}

int run_action(const std::string& action, const CacheOptions& o) {
  const CacheConfig config = load_config(o.config_path);
  CacheAdmin admin(config);
  if (action == "ls") return list_snapshots(admin, o);
  if (action == "show") return show_snapshot(admin, o);
  if (action == "verify") return verify_snapshots(admin, o);
  if (action == "stats") return print_stats(admin, config, o);
  if (action == "pin" || action == "unpin") {
    const bool pin = action == "pin";
    SnapshotRef ref = find_or_throw(admin, o.id);
    return report_status(admin.pin(ref, pin), (pin ? "pinned " : "unpinned ") + ref.id.hex(), o);
  }
  if (action == "rm") {
    SnapshotRef ref = find_or_throw(admin, o.id);
    return report_status(admin.remove(ref), "removed " + ref.id.hex(), o);
  }
  if (action == "clear") return report_status(admin.clear(), "cleared " + config.disk_cache_dir, o);
  if (action == "gc") return report_status(Status::Ok(), "freed " + human_bytes(admin.gc()), o);
  throw Error("unknown cache action " + action);
}

int run_cache(int argc, char** argv) {
  CLI::App app("Inspect and maintain the disk K/V cache", "qmlx cache");
  app.require_subcommand(1);
  app.footer(server::config_keys_help());
  CacheOptions options;
  const std::string default_config = qmlx_home() + "/cache_config.json";
  options.config_path = default_config;
  struct Action {
    const char* name;
    const char* help;
    int id;  // 0: no id, 1: optional, 2: required
  };
  const Action actions[] = {
      {"ls", "list snapshots (id, kind, tokens, bytes, last used, pinned)", 0},
      {"show", "show one snapshot", 2},
      {"verify", "verify one snapshot or all, quarantining what fails", 1},
      {"pin", "never evict a snapshot", 2},
      {"unpin", "make a snapshot evictable again", 2},
      {"rm", "delete a snapshot", 2},
      {"stats", "bytes, snapshots and chunks per model fingerprint (and in the shared tier)", 0},
      {"clear", "delete the whole disk cache", 0},
      {"gc", "delete quarantined and unreferenced files, evict down to the cap", 0}};
  for (const Action& a : actions) {
    CLI::App* sub = app.add_subcommand(a.name, a.help);
    sub->add_option("--cache-config", options.config_path,
                    "cache_config.json (default " + default_config + ")");
    sub->add_flag("--json", options.json, "print JSON");
    if (a.id > 0) {
      sub->add_option("id", options.id, "snapshot id (or a unique prefix of it)")
          ->required(a.id == 2);
    }
  }
  CLI11_PARSE(app, argc, argv);
  return run_action(app.get_subcommands().front()->get_name(), options);
}

}  // namespace

QMLX_COMMAND(cache, "cache",
             "list, inspect, verify, pin, delete and collect the disk cache (ls|show|verify|...)",
             run_cache);

}  // namespace qmlx::cli
