#include "grammar/json_schema_compiler.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "grammar/canonical_json.h"
#include "grammar/grammar_parser.h"
#include "grammar/grammar_text.h"
#include "grammar/integer_range.h"
#include "grammar/json_formats.h"
#include "grammar/regex_translation.h"
#include "grammar/schema_merge.h"

namespace qmlx::grammar {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kNever = "[^\\x00-\\U0010ffff]";

// The generic JSON rules, written once per grammar when used.
const char* kJsonRules = R"(
json-value ::= json-object | json-array | json-string | json-number | "true" | "false" | "null"
json-object ::= "{" (json-string COLON json-value (COMMA json-string COLON json-value)*)? "}"
json-array ::= "[" (json-value (COMMA json-value)*)? "]"
json-string ::= "\"" JSONCHAR* "\""
json-number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
json-integer ::= "-"? ("0" | [1-9] [0-9]*)
json-boolean ::= "true" | "false"
json-key-rest ::= JSONCHAR* "\""
)";

const std::set<std::string> kAnnotations = {
    "$schema",         "$id",         "id",       "$comment", "title",
    "description",     "default",     "examples", "readOnly", "writeOnly",
    "deprecated",      "definitions", "$defs",    "$anchor",  "contentMediaType",
    "contentEncoding", "$vocabulary"};
const std::map<std::string, std::set<std::string>> kTypeKeywords = {
    {"string", {"minLength", "maxLength", "pattern", "format"}},
    {"integer", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}},
    {"number", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}},
    {"object", {"properties", "required", "additionalProperties"}},
    {"array", {"items", "prefixItems", "additionalItems", "minItems", "maxItems"}},
    {"boolean", {}},
    {"null", {}}};
// Validation keywords the engine does not enforce (reported); other unknown keywords are
// annotations or extensions and are ignored.
const std::set<std::string> kUnenforced = {"not",
                                           "uniqueItems",
                                           "patternProperties",
                                           "dependencies",
                                           "dependentRequired",
                                           "dependentSchemas",
                                           "if",
                                           "then",
                                           "else",
                                           "contains",
                                           "minContains",
                                           "maxContains",
                                           "propertyNames",
                                           "minProperties",
                                           "maxProperties",
                                           "multipleOf",
                                           "unevaluatedProperties",
                                           "unevaluatedItems",
                                           "$dynamicRef",
                                           "$recursiveRef"};

bool is_constraint(const std::string& keyword) {
  if (kUnenforced.count(keyword)) return true;
  for (const auto& [t, keys] : kTypeKeywords)
    if (keys.count(keyword)) return true;
  return false;
}

const std::vector<std::string> kAllTypes = {"null",  "boolean", "object",
                                            "array", "number",  "string"};

std::string join(const std::vector<std::string>& alternatives) {
  if (alternatives.empty()) return kNever;
  std::string out;
  for (const auto& a : alternatives) out += (out.empty() ? "" : " | ") + a;
  return alternatives.size() > 1 ? "(" + out + ")" : out;
}

std::string escape_pointer_token(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

bool value_has_type(const Json& v, const std::string& type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer")
    return v.is_number_integer() ||
           (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  return false;
}

class SchemaCompiler {
 public:
  SchemaCompiler(const Json& root, const SchemaOptions& options)
      : root_(root),
        options_(options),
        comma_(grammar_literal("," + options.item_space)),
        colon_(grammar_literal(":" + options.key_space)),
        deadline_(std::chrono::steady_clock::now() + options.max_compile_time) {}

  CompiledGrammar compile() {
    std::string root_expr = schema(root_, "", 0);
    std::string text = "root ::= " + root_expr + "\n";
    for (const auto& [name, body] : rules_) text += name + " ::= " + body + "\n";
    if (uses_json_rules_) {
      std::string generic = kJsonRules;
      for (size_t at; (at = generic.find("JSONCHAR")) != std::string::npos;)
        generic.replace(at, 8, kJsonStringChar);
      for (size_t at; (at = generic.find("COLON")) != std::string::npos;)
        generic.replace(at, 5, colon_);
      for (size_t at; (at = generic.find("COMMA")) != std::string::npos;)
        generic.replace(at, 5, comma_);
      text += generic;
    }
    CompiledGrammar out = compile_grammar(text, options_.grammar_limits);
    out.unsupported = std::move(unsupported_);
    return out;
  }

 private:
  std::string schema(const Json& s, const std::string& path, int depth) {
    if (depth > options_.max_depth)
      throw GrammarError("schema nested deeper than " + std::to_string(options_.max_depth) +
                             " at " + path + " (limit max_schema_depth)",
                         "max_schema_depth");
    if (std::chrono::steady_clock::now() > deadline_)
      throw GrammarError("schema compilation took longer than " +
                             std::to_string(options_.max_compile_time.count()) +
                             " ms (limit max_compile_ms)",
                         "max_compile_ms");
    if (s.is_boolean()) return s.get<bool>() ? any_value() : kNever;
    if (!s.is_object())
      throw GrammarError("schema at '" + path + "' is not an object or a boolean");

    if (s.contains("$ref") && s["$ref"].is_string()) {
      const std::string& ref = s["$ref"].get_ref<const std::string&>();
      Json siblings = without(s, {"$ref"});
      if (ref.empty() || ref[0] != '#') {
        report("$ref", path);
        return schema(siblings, path, depth + 1);
      }
      if (!has_constraints(siblings)) return ref_rule(ref, depth);
      return schema(Json{{"allOf", Json::array({Json{{"$ref", ref}}, siblings})}}, path, depth + 1);
    }
    if (s.contains("allOf")) {
      SchemaMerger merger(root_, [&](const std::string& k, const std::string& p) { report(k, p); });
      return schema(merger.merge_all_of(s, path), path, depth + 1);
    }
    for (const char* key : {"anyOf", "oneOf"})
      if (s.contains(key) && s[key].is_array()) return alternatives(s, key, path, depth);
    if (s.contains("enum") || s.contains("const")) return enumeration(s, path);
    return typed(s, path, depth);
  }

  std::string ref_rule(const std::string& ref, int depth) {
    auto it = ref_rules_.find(ref);
    if (it != ref_rules_.end()) return it->second;
    const Json* target = resolve_pointer(root_, ref);
    if (!target) throw GrammarError("schema $ref '" + ref + "' points at nothing");
    std::string name = reserve_rule("ref" + ref.substr(1));
    ref_rules_[ref] = name;
    define_rule(name, schema(*target, ref.substr(1), depth + 1));
    return name;
  }

  std::string alternatives(const Json& s, const char* key, const std::string& path, int depth) {
    Json rest = without(s, {key});
    bool distribute = has_constraints(rest);
    const Json& branches = s[key];
    if (std::string(key) == "oneOf" && !branches_disjoint(branches, root_)) report("oneOf", path);
    std::vector<std::string> out;
    for (size_t i = 0; i < branches.size(); ++i) {
      std::string branch_path = path + "/" + key + "/" + std::to_string(i);
      if (distribute) {
        out.push_back(
            schema(Json{{"allOf", Json::array({rest, branches[i]})}}, branch_path, depth + 1));
      } else {
        out.push_back(schema(branches[i], branch_path, depth + 1));
      }
    }
    return join(out);
  }

  std::string enumeration(const Json& s, const std::string& path) {
    std::vector<Json> values;
    if (s.contains("const")) values.push_back(s["const"]);
    if (s.contains("enum") && s["enum"].is_array()) {
      if (s.contains("const")) {
        bool listed = false;
        for (const auto& v : s["enum"]) listed = listed || v == s["const"];
        if (!listed) values.clear();
      } else {
        for (const auto& v : s["enum"]) values.push_back(v);
      }
    }
    std::vector<std::string> types = declared_types(s, path);
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const auto& v : values) {
      bool typed_ok = false;
      for (const auto& t : types) typed_ok = typed_ok || value_has_type(v, t);
      std::string text = canonical_json(v);
      if (typed_ok && seen.insert(text).second) out.push_back(grammar_literal(text));
    }
    // The values are written as they are: other constraints are not checked against them.
    for (const auto& [k, v] : s.items())
      if (kUnenforced.count(k) || (k != "enum" && k != "const" && k != "type" && is_constraint(k)))
        report(k, path);
    return join(out);
  }

  std::vector<std::string> declared_types(const Json& s, const std::string& path) {
    if (!s.contains("type"))
      return {"null", "boolean", "object", "array", "number", "string", "integer"};
    std::vector<std::string> types;
    const Json& t = s["type"];
    for (const auto& e : t.is_array() ? t : Json::array({t})) {
      if (!e.is_string() || !kTypeKeywords.count(e.get<std::string>()))
        throw GrammarError("schema at '" + path + "' has an unknown type " + e.dump());
      types.push_back(e.get<std::string>());
    }
    return types;
  }

  std::string typed(const Json& s, const std::string& path, int depth) {
    std::vector<std::string> types = s.contains("type") ? declared_types(s, path) : kAllTypes;
    bool has_number = std::find(types.begin(), types.end(), "number") != types.end();
    std::set<std::string> applicable;
    for (const auto& t : types)
      for (const auto& k : kTypeKeywords.at(t)) applicable.insert(k);
    // Keywords for types not allowed here simply do not apply; unknown keywords are ignored,
    // as JSON Schema says.
    for (const auto& [k, v] : s.items())
      if (kUnenforced.count(k)) report(k, path);
    std::vector<std::string> out;
    for (const auto& t : types) {
      if (t == "integer" && has_number) continue;  // number includes the integers
      if (t == "null") out.push_back("\"null\"");
      if (t == "boolean") out.push_back(use("json-boolean"));
      if (t == "integer") out.push_back(integer(s, path));
      if (t == "number") out.push_back(number(s, path));
      if (t == "string") out.push_back(string(s, path));
      if (t == "object") out.push_back(object(s, path, depth));
      if (t == "array") out.push_back(array(s, path, depth));
    }
    return join(out);
  }

  std::string integer(const Json& s, const std::string& path) {
    std::optional<int64_t> lo, hi;
    auto bound = [&](const char* key, bool lower, bool exclusive) {
      if (!s.contains(key)) return;
      const Json& v = s[key];
      if (!v.is_number() || std::fabs(v.get<double>()) > 9.0e18) {
        report(key, path);
        return;
      }
      double d = v.get<double>();
      int64_t b = lower ? (exclusive ? static_cast<int64_t>(std::floor(d)) + 1
                                     : static_cast<int64_t>(std::ceil(d)))
                        : (exclusive ? static_cast<int64_t>(std::ceil(d)) - 1
                                     : static_cast<int64_t>(std::floor(d)));
      if (v.is_number_integer()) {  // exact for large integers, where double rounds
        int64_t i = v.get<int64_t>();
        b = lower ? (exclusive ? i + 1 : i) : (exclusive ? i - 1 : i);
      }
      if (lower)
        lo = lo ? std::max(*lo, b) : b;
      else
        hi = hi ? std::min(*hi, b) : b;
    };
    bound("minimum", true, false);
    bound("exclusiveMinimum", true, true);
    bound("maximum", false, false);
    bound("exclusiveMaximum", false, true);
    if (!lo && !hi) return use("json-integer");
    return integer_range_expression(lo, hi);
  }

  std::string number(const Json& s, const std::string& path) {
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
      if (s.contains(k)) report(k, path);  // bounds on non-integers are not enforced
    return use("json-number");
  }

  std::string string(const Json& s, const std::string& path) {
    std::string content;
    bool has_length = s.contains("minLength") || s.contains("maxLength");
    if (s.contains("pattern") && s["pattern"].is_string()) {
      std::string why;
      auto expr = regex_to_string_content(s["pattern"].get<std::string>(), why);
      if (expr)
        content = *expr;
      else
        report("pattern", path);
    }
    if (s.contains("format") && s["format"].is_string()) {
      auto expr = format_expression(s["format"].get<std::string>());
      if (!expr || !content.empty()) {
        report("format", path);
      } else {
        content = *expr;
      }
    }
    if (!content.empty()) {
      if (has_length) {  // a length on top of a pattern or format is not intersected
        for (const char* k : {"minLength", "maxLength"})
          if (s.contains(k)) report(k, path);
      }
      return "\"\\\"\" " + content + " \"\\\"\"";
    }
    if (!has_length) return use("json-string");
    uint32_t min = count(s, "minLength", path, 0, options_.max_string_length);
    uint32_t max = count(s, "maxLength", path, Expr::kUnbounded, options_.max_string_length);
    std::string chars = std::string(kJsonStringChar);
    std::string reps = max == Expr::kUnbounded
                           ? "{" + std::to_string(min) + ",}"
                           : "{" + std::to_string(min) + "," + std::to_string(max) + "}";
    if (min > max) return kNever;
    return "\"\\\"\" " + chars + reps + " \"\\\"\"";
  }

  // A non-negative count keyword; `absent` when missing or above `limit` (then reported).
  uint32_t count(const Json& s, const char* key, const std::string& path, uint32_t absent,
                 uint32_t limit) {
    if (!s.contains(key)) return absent;
    const Json& v = s[key];
    if (!v.is_number() || v.get<double>() < 0)
      throw GrammarError("schema at '" + path + "': " + key + " is not a count");
    double d = std::floor(v.get<double>());
    if (d > limit) {
      report(key, path);
      return absent;
    }
    return static_cast<uint32_t>(d);
  }

  std::string object(const Json& s, const std::string& path, int depth) {
    struct Property {
      std::string key_literal;  // "\"name\":" as grammar text
      std::string value;
      bool required;
    };
    std::vector<Property> props;
    std::vector<std::string> names;
    std::set<std::string> required;
    if (s.contains("required") && s["required"].is_array())
      for (const auto& r : s["required"])
        if (r.is_string()) required.insert(r.get<std::string>());
    bool has_properties = s.contains("properties") && s["properties"].is_object();
    const Json additional = s.contains("additionalProperties") ? s["additionalProperties"]
                            : has_properties                   ? Json(false)
                                                               : Json(true);
    auto add = [&](const std::string& name, const Json& sub, const std::string& sub_path) {
      props.push_back({grammar_literal(canonical_json(Json(name)) + ":" + options_.key_space),
                       schema(sub, sub_path, depth + 1), required.count(name) > 0});
      names.push_back(name);
    };
    if (has_properties)
      for (const auto& [name, sub] : s["properties"].items())
        add(name, sub, path + "/properties/" + escape_pointer_token(name));
    for (const auto& r :
         s.contains("required") && s["required"].is_array() ? s["required"] : Json::array())
      if (r.is_string() &&
          std::find(names.begin(), names.end(), r.get<std::string>()) == names.end())
        // A required name not declared takes additionalProperties' schema; when that is absent
        // (closed only by our canonical form, not by the schema) any value.
        add(r.get<std::string>(), s.contains("additionalProperties") ? additional : Json(true),
            path + "/additionalProperties");
    std::string extra;  // one more member: key ":" value, or "" when none are allowed
    if (!(additional.is_boolean() && !additional.get<bool>()))
      extra = key_excluding(names) + " " + colon_ + " " +
              schema(additional, path + "/additionalProperties", depth + 1);
    // tail(k, written): the members from property k on, `written` saying whether one came before
    // (so the next needs a comma). Written back to front as nested expressions.
    std::string tail_written = extra.empty() ? "" : "(" + comma_ + " " + extra + ")*";
    std::string tail_first =
        extra.empty() ? "" : "(" + extra + " (" + comma_ + " " + extra + ")*)?";
    for (size_t k = props.size(); k-- > 0;) {
      const Property& p = props[k];
      std::string member_first =
          p.key_literal + " " + p.value + (tail_written.empty() ? "" : " " + tail_written);
      std::string member_after = comma_ + " " + member_first;
      std::string first = p.required
                              ? member_first
                              : join({member_first, tail_first.empty() ? "\"\"" : tail_first});
      std::string after = p.required
                              ? member_after
                              : join({member_after, tail_written.empty() ? "\"\"" : tail_written});
      // Name the two tails as rules so the text stays linear in the number of properties.
      tail_first = reserve_rule("obj");
      define_rule(tail_first, first);
      tail_written = reserve_rule("obj");
      define_rule(tail_written, after);
    }
    return "\"{\" " + (tail_first.empty() ? "" : tail_first + " ") + "\"}\"";
  }

  // A JSON string key other than `names`, as canonical JSON. The keys are spelled as a trie;
  // at each point a key may end (when no name ends there) or diverge into any other character.
  // Divergence is offered only between whole characters; at a point where a name continues
  // with a non-ASCII character, other non-ASCII characters are not offered (a documented
  // narrowing: such keys are still valid output, merely never written).
  std::string key_excluding(const std::vector<std::string>& names) {
    if (names.empty()) return use("json-string");
    use("json-key-rest");
    std::vector<std::string> encoded;
    for (const auto& n : names) {
      std::string e = canonical_json(Json(n));
      encoded.push_back(e.substr(1, e.size() - 2));
    }
    std::sort(encoded.begin(), encoded.end());
    return "\"\\\"\" " + key_node(encoded, 0, encoded.size(), 0, 0);
  }

  // Names encoded[begin, end) share their first `depth` bytes; `pending` bytes of the current
  // character (or escape) remain.
  std::string key_node(const std::vector<std::string>& encoded, size_t begin, size_t end,
                       size_t depth, int pending) {
    std::vector<std::string> out;
    bool a_name_ends = false;
    std::set<uint8_t> children;
    for (size_t i = begin; i < end; ++i) {
      if (encoded[i].size() == depth)
        a_name_ends = true;
      else
        children.insert(static_cast<uint8_t>(encoded[i][depth]));
    }
    if (pending == -1) {  // right after a backslash: another escape letter diverges
      std::string letters;
      for (char c : std::string("\"\\bfnrt"))
        if (!children.count(static_cast<uint8_t>(c))) letters += c;
      std::string rest = use("json-key-rest");
      for (char c : letters) out.push_back(grammar_literal(std::string(1, c)) + " " + rest);
      if (!children.count('u')) out.push_back("\"u00\" [01] [0-9a-f] " + rest);
    }
    if (pending == 0) {
      if (!a_name_ends) out.push_back("\"\\\"\"");
      std::vector<CodePointRange> other;
      for (uint32_t c = 0x20; c < 0x7F; ++c)
        if (c != '"' && c != '\\' && !children.count(static_cast<uint8_t>(c)))
          other.push_back({c, c});
      bool non_ascii_child =
          std::any_of(children.begin(), children.end(), [](uint8_t c) { return c >= 0x80; });
      if (!non_ascii_child) other.push_back({0x80, 0x10FFFF});
      std::string rest = use("json-key-rest");
      if (!other.empty()) out.push_back(grammar_class(normalized(other)) + " " + rest);
      if (!children.count('\\'))
        out.push_back("\"\\\\\" ([\"\\\\bfnrt] | \"u00\" [01] [0-9a-f]) " + rest);
    }
    // Sorted: names sharing the next byte are contiguous.
    for (size_t b = begin; b < end;) {
      if (encoded[b].size() == depth) {
        ++b;
        continue;
      }
      auto c = static_cast<uint8_t>(encoded[b][depth]);
      size_t e = b;
      while (e < end && encoded[e].size() > depth && static_cast<uint8_t>(encoded[e][depth]) == c)
        ++e;
      int next_pending = pending > 0 ? pending - 1
                         : c == '\\' ? -1  // the escape letter follows
                         : c >= 0xF0 ? 3
                         : c >= 0xE0 ? 2
                         : c >= 0xC0 ? 1
                                     : 0;
      if (pending == -1) next_pending = c == 'u' ? 4 : 0;
      out.push_back(grammar_literal(std::string(1, static_cast<char>(c))) + " " +
                    key_node(encoded, b, e, depth + 1, next_pending));
      b = e;
    }
    return join(out);
  }

  std::string array(const Json& s, const std::string& path, int depth) {
    std::vector<std::string> prefix;
    Json rest = true;
    std::string rest_path = path + "/items";
    if (s.contains("prefixItems") && s["prefixItems"].is_array()) {
      for (size_t i = 0; i < s["prefixItems"].size(); ++i)
        prefix.push_back(
            schema(s["prefixItems"][i], path + "/prefixItems/" + std::to_string(i), depth + 1));
      if (s.contains("items")) rest = s["items"];
      if (s.contains("additionalItems")) report("additionalItems", path);
    } else if (s.contains("items") && s["items"].is_array()) {
      for (size_t i = 0; i < s["items"].size(); ++i)
        prefix.push_back(schema(s["items"][i], path + "/items/" + std::to_string(i), depth + 1));
      if (s.contains("additionalItems"))
        rest = s["additionalItems"], rest_path = path + "/additionalItems";
    } else if (s.contains("items")) {
      rest = s["items"];
    }
    uint32_t min = count(s, "minItems", path, 0, options_.max_item_count);
    uint32_t max = count(s, "maxItems", path, Expr::kUnbounded, options_.max_item_count);
    if (min > max) return kNever;
    bool rest_allowed = !(rest.is_boolean() && !rest.get<bool>());
    std::string rest_expr = rest_allowed ? schema(rest, rest_path, depth + 1) : "";
    // The homogeneous tail from position i = prefix.size() on.
    size_t i0 = prefix.size();
    std::string tail;
    if (max != Expr::kUnbounded && max <= i0) {
      tail = "";
    } else if (!rest_allowed) {
      tail = min > i0 ? kNever : "";
    } else {
      uint32_t need = min > i0 ? min - static_cast<uint32_t>(i0) : 0;
      std::string more_max = max == Expr::kUnbounded ? "" : std::to_string(max - i0);
      if (i0 == 0) {
        std::string reps_after = "{" + std::to_string(need > 0 ? need - 1 : 0) + "," +
                                 (max == Expr::kUnbounded ? "" : std::to_string(max - 1)) + "}";
        std::string list = rest_expr + " (" + comma_ + " " + rest_expr + ")" + reps_after;
        tail = need > 0 ? list : "(" + list + ")?";
      } else {
        tail = "(" + comma_ + " " + rest_expr + "){" + std::to_string(need) + "," + more_max + "}";
      }
    }
    // Prefix items back to front: item i is required when i < minItems.
    for (size_t i = i0; i-- > 0;) {
      if (max != Expr::kUnbounded && i >= max) continue;
      std::string item = (i > 0 ? comma_ + " " : "") + prefix[i] + (tail.empty() ? "" : " " + tail);
      tail = i < min ? item : "(" + item + ")?";
    }
    return "\"[\" " + (tail.empty() ? "" : tail + " ") + "\"]\"";
  }

  // --- helpers ---

  std::string any_value() { return use("json-value"); }

  std::string use(const char* generic_rule) {
    uses_json_rules_ = true;
    return generic_rule;
  }

  void report(const std::string& keyword, const std::string& path) {
    UnsupportedKeyword u{keyword, path};
    if (std::find(unsupported_.begin(), unsupported_.end(), u) == unsupported_.end())
      unsupported_.push_back(u);
  }

  std::string reserve_rule(const std::string& hint) {
    std::string base;
    for (char c : hint) base += isalnum(static_cast<unsigned char>(c)) ? c : '-';
    if (base.empty() || !isalpha(static_cast<unsigned char>(base[0]))) base = "r" + base;
    if (base.size() > 40) base.resize(40);
    std::string name = base;
    for (int n = 2; !names_.insert(name).second; ++n) name = base + "-" + std::to_string(n);
    rule_index_[name] = rules_.size();
    rules_.emplace_back(name, kNever);
    return name;
  }
  void define_rule(const std::string& name, const std::string& body) {
    rules_[rule_index_[name]].second = body;
  }

  static Json without(const Json& s, std::initializer_list<const char*> keys) {
    Json out = s;
    for (const char* k : keys) out.erase(k);
    return out;
  }
  static bool has_constraints(const Json& s) {
    for (const auto& [k, v] : s.items())
      if (!kAnnotations.count(k)) return true;
    return false;
  }

  const Json& root_;
  const SchemaOptions& options_;
  const std::string comma_, colon_;  // the separators as grammar literals
  std::chrono::steady_clock::time_point deadline_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::map<std::string, size_t> rule_index_;
  std::set<std::string> names_{"root",         "json-value",   "json-object",
                               "json-array",   "json-string",  "json-number",
                               "json-integer", "json-boolean", "json-key-rest"};
  std::map<std::string, std::string> ref_rules_;
  std::vector<UnsupportedKeyword> unsupported_;
  bool uses_json_rules_ = false;
};

}  // namespace

CompiledGrammar compile_json_schema(const nlohmann::ordered_json& schema,
                                    const SchemaOptions& options) {
  size_t bytes =
      schema.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).size();
  if (bytes > options.max_schema_bytes)
    throw GrammarError("schema of " + std::to_string(bytes) + " bytes is larger than " +
                           std::to_string(options.max_schema_bytes) + " (limit max_schema_bytes)",
                       "max_schema_bytes");
  return SchemaCompiler(schema, options).compile();
}

}  // namespace qmlx::grammar
