#include "grammar/schema_merge.h"

#include <algorithm>
#include <set>
#include <vector>

namespace qmlx::grammar {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kMaxRefChain = 32;
const std::set<std::string> kLowerBounds = {"minLength", "minItems", "minimum", "exclusiveMinimum",
                                            "minProperties"};
const std::set<std::string> kUpperBounds = {"maxLength", "maxItems", "maximum", "exclusiveMaximum",
                                            "maxProperties"};
const std::set<std::string> kIgnoredInMerge = {"$schema",     "$id",         "id",      "$comment",
                                               "title",       "description", "default", "examples",
                                               "definitions", "$defs"};
const Json kNeverSchema = Json{{"enum", Json::array()}};

std::string percent_decoded(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::set<std::string> types_of(const Json& s) {
  std::set<std::string> all = {"null", "boolean", "object", "array", "number", "integer", "string"};
  if (!s.is_object()) return s == Json(false) ? std::set<std::string>{} : all;
  std::vector<Json> values;
  if (s.contains("const"))
    values.push_back(s["const"]);
  else if (s.contains("enum") && s["enum"].is_array())
    values.assign(s["enum"].begin(), s["enum"].end());
  else if (s.contains("type")) {
    std::set<std::string> out;
    const Json& t = s["type"];
    for (const auto& e : t.is_array() ? t : Json::array({t}))
      if (e.is_string()) out.insert(e.get<std::string>());
    return out;
  } else {
    return all;
  }
  std::set<std::string> out;
  for (const auto& v : values) {
    if (v.is_null()) out.insert("null");
    if (v.is_boolean()) out.insert("boolean");
    if (v.is_object()) out.insert("object");
    if (v.is_array()) out.insert("array");
    if (v.is_number()) out.insert("number");
    if (v.is_string()) out.insert("string");
  }
  return out;
}

bool types_overlap(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const auto& t : a)
    for (const auto& u : b)
      if (t == u || (t == "integer" && u == "number") || (t == "number" && u == "integer"))
        return true;
  return false;
}

std::optional<std::vector<Json>> values_of(const Json& s) {
  if (!s.is_object()) return std::nullopt;
  if (s.contains("const")) return std::vector<Json>{s["const"]};
  if (s.contains("enum") && s["enum"].is_array())
    return std::vector<Json>(s["enum"].begin(), s["enum"].end());
  return std::nullopt;
}

bool values_disjoint(const Json& a, const Json& b) {
  auto va = values_of(a), vb = values_of(b);
  if (!va || !vb) return false;
  for (const auto& x : *va)
    for (const auto& y : *vb)
      if (x == y) return false;
  return true;
}

bool is_required(const Json& s, const std::string& name) {
  if (!s.is_object() || !s.contains("required") || !s["required"].is_array()) return false;
  for (const auto& r : s["required"])
    if (r == name) return true;
  return false;
}

bool pair_disjoint(const Json& a0, const Json& b0, const Json& root) {
  auto follow = [&](const Json& s) -> const Json& {
    const Json* cur = &s;
    for (int i = 0; i < kMaxRefChain && cur->is_object() && cur->contains("$ref") &&
                    (*cur)["$ref"].is_string();
         ++i) {
      const Json* next = resolve_pointer(root, (*cur)["$ref"].get<std::string>());
      if (!next) break;
      cur = next;
    }
    return *cur;
  };
  const Json& a = follow(a0);
  const Json& b = follow(b0);
  if (!types_overlap(types_of(a), types_of(b))) return true;
  if (values_disjoint(a, b)) return true;
  // A discriminator: a property both require, with disjoint const/enum values.
  if (a.is_object() && b.is_object() && a.contains("properties") && b.contains("properties") &&
      a["properties"].is_object() && b["properties"].is_object())
    for (const auto& [name, pa] : a["properties"].items())
      if (b["properties"].contains(name) && is_required(a, name) && is_required(b, name) &&
          values_disjoint(follow(pa), follow(b["properties"][name])))
        return true;
  return false;
}

}  // namespace

const Json* resolve_pointer(const Json& root, const std::string& ref) {
  if (ref.empty() || ref[0] != '#') return nullptr;
  std::string pointer = percent_decoded(ref.substr(1));
  if (pointer.empty()) return &root;
  if (pointer[0] != '/') return nullptr;
  const Json* cur = &root;
  size_t pos = 1;
  for (;;) {
    size_t slash = pointer.find('/', pos);
    std::string token =
        pointer.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    std::string unescaped;
    for (size_t i = 0; i < token.size(); ++i) {
      if (token[i] == '~' && i + 1 < token.size()) {
        unescaped += token[i + 1] == '1' ? '/' : '~';
        ++i;
      } else {
        unescaped += token[i];
      }
    }
    if (cur->is_object()) {
      if (!cur->contains(unescaped)) return nullptr;
      cur = &(*cur)[unescaped];
    } else if (cur->is_array()) {
      if (unescaped.empty() || unescaped.find_first_not_of("0123456789") != std::string::npos)
        return nullptr;
      size_t i = std::stoul(unescaped);
      if (i >= cur->size()) return nullptr;
      cur = &(*cur)[i];
    } else {
      return nullptr;
    }
    if (slash == std::string::npos) return cur;
    pos = slash + 1;
  }
}

bool branches_disjoint(const Json& branches, const Json& root) {
  for (size_t i = 0; i < branches.size(); ++i)
    for (size_t j = i + 1; j < branches.size(); ++j)
      if (!pair_disjoint(branches[i], branches[j], root)) return false;
  return true;
}

Json SchemaMerger::merge_all_of(const Json& schema, const std::string& path, int depth) {
  Json out = schema;
  out.erase("allOf");
  if (!schema["allOf"].is_array()) return out;
  for (size_t i = 0; i < schema["allOf"].size(); ++i)
    out = merge(std::move(out),
                resolved(schema["allOf"][i], path + "/allOf/" + std::to_string(i), depth), path);
  return out;
}

Json SchemaMerger::resolved(const Json& branch, const std::string& path, int depth) {
  if (branch.is_boolean()) return branch.get<bool>() ? Json::object() : kNeverSchema;
  if (!branch.is_object()) return Json::object();
  if (depth > kMaxRefChain) {
    report_("$ref", path);  // a recursive allOf cannot be merged
    Json out = branch;
    out.erase("$ref");
    out.erase("allOf");
    return out;
  }
  if (branch.contains("$ref") && branch["$ref"].is_string()) {
    const Json* target = resolve_pointer(root_, branch["$ref"].get<std::string>());
    Json siblings = branch;
    siblings.erase("$ref");
    if (!target) {
      report_("$ref", path);
      return resolved(siblings, path, depth + 1);
    }
    return merge(resolved(*target, path, depth + 1), resolved(siblings, path, depth + 1), path);
  }
  if (branch.contains("allOf")) return merge_all_of(branch, path, depth + 1);
  return branch;
}

Json SchemaMerger::merge(Json a, const Json& b, const std::string& path) {
  if (a.contains("allOf")) a = merge_all_of(a, path);
  // additionalProperties in one branch judges the other branch's properties too, which a
  // merged `properties` would not: report when that changes the meaning.
  auto declared = [](const Json& s) {
    std::set<std::string> names;
    if (s.contains("properties") && s["properties"].is_object())
      for (const auto& [k, v] : s["properties"].items()) names.insert(k);
    return names;
  };
  auto restricts_extra = [](const Json& s) {
    return s.contains("additionalProperties") && s["additionalProperties"] != Json(true);
  };
  std::set<std::string> da = declared(a), db = declared(b);
  if ((restricts_extra(a) && !std::includes(da.begin(), da.end(), db.begin(), db.end())) ||
      (restricts_extra(b) && !std::includes(db.begin(), db.end(), da.begin(), da.end())))
    report_("allOf", path);

  for (const auto& [k, vb] : b.items()) {
    if (!a.contains(k)) {
      a[k] = vb;
      continue;
    }
    Json& va = a[k];
    if (va == vb || kIgnoredInMerge.count(k)) continue;
    if (k == "properties" && va.is_object() && vb.is_object()) {
      for (const auto& [name, sub] : vb.items())
        if (!va.contains(name))
          va[name] = sub;
        else if (va[name] != sub)
          va[name] = Json{{"allOf", Json::array({va[name], sub})}};
    } else if (k == "required" && va.is_array() && vb.is_array()) {
      for (const auto& r : vb)
        if (std::find(va.begin(), va.end(), r) == va.end()) va.push_back(r);
    } else if (k == "type") {
      std::set<std::string> ta = types_of(Json{{"type", va}}), tb = types_of(Json{{"type", vb}});
      Json both = Json::array();
      for (const auto& t : ta)
        if (tb.count(t))
          both.push_back(t);
        else if (t == "number" && tb.count("integer"))
          both.push_back("integer");
        else if (t == "integer" && tb.count("number"))
          both.push_back("integer");
      if (both.empty()) return kNeverSchema;
      va = both;
    } else if (kLowerBounds.count(k) && va.is_number() && vb.is_number()) {
      if (vb.get<double>() > va.get<double>()) va = vb;
    } else if (kUpperBounds.count(k) && va.is_number() && vb.is_number()) {
      if (vb.get<double>() < va.get<double>()) va = vb;
    } else if ((k == "additionalProperties" ||
                (k == "items" && !va.is_array() && !vb.is_array()))) {
      va = Json{{"allOf", Json::array({va, vb})}};
    } else if (k == "enum" && va.is_array() && vb.is_array()) {
      Json both = Json::array();
      for (const auto& v : va)
        if (std::find(vb.begin(), vb.end(), v) != vb.end()) both.push_back(v);
      va = both;
    } else if (k == "const") {
      return kNeverSchema;  // two different constants
    } else {
      report_(k, path);  // e.g. two patterns or two anyOfs: kept the first only
    }
  }
  return a;
}

}  // namespace qmlx::grammar
