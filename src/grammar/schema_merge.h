// Schema algebra the compiler needs beyond one schema at a time: resolving "#..." JSON
// Pointers, merging allOf branches into one schema (properties merged, required united, bounds
// tightened, types intersected; what cannot be merged is reported), and deciding whether
// oneOf branches are disjoint (so that anyOf enforces oneOf).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace qmlx::grammar {

// The schema `ref` ("#", "#/$defs/a", with ~0 ~1 and %-escapes) points at in `root`, or null.
const nlohmann::ordered_json* resolve_pointer(const nlohmann::ordered_json& root,
                                              const std::string& ref);

// Whether no instance can match two of `branches` (decided conservatively: false when unsure).
bool branches_disjoint(const nlohmann::ordered_json& branches, const nlohmann::ordered_json& root);

class SchemaMerger {
 public:
  using Report = std::function<void(const std::string& keyword, const std::string& path)>;
  SchemaMerger(const nlohmann::ordered_json& root, Report report)
      : root_(root), report_(std::move(report)) {}

  // `schema` with its allOf branches (and their $refs) merged into it; allOf removed.
  nlohmann::ordered_json merge_all_of(const nlohmann::ordered_json& schema, const std::string& path,
                                      int depth = 0);

 private:
  nlohmann::ordered_json resolved(const nlohmann::ordered_json& branch, const std::string& path,
                                  int depth);
  nlohmann::ordered_json merge(nlohmann::ordered_json a, const nlohmann::ordered_json& b,
                               const std::string& path);

  const nlohmann::ordered_json& root_;
  Report report_;
};

}  // namespace qmlx::grammar
