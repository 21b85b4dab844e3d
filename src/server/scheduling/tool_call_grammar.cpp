#include "server/scheduling/tool_call_grammar.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>

#include "grammar/grammar_composition.h"
#include "grammar/grammar_parser.h"
#include "grammar/grammar_text.h"
#include "grammar/json_formats.h"
#include "grammar/json_schema_compiler.h"
#include "text/output/tool_catalog.h"

namespace qmlx::server {
namespace {

using Json = nlohmann::ordered_json;
using grammar::grammar_literal;

constexpr std::string_view kParameterClose = "</parameter>";
// A value no text is: no character is outside all of Unicode.
constexpr const char* kNoValue = "[^\\x00-\\U0010ffff]";

// Keywords that say nothing about a string value's text.
const std::set<std::string> kStringAnnotations = {"type",     "description", "title",     "default",
                                                  "examples", "$comment",    "deprecated"};

std::string excluding_class(char a, char b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "[^\\x%02x\\x%02x]", static_cast<unsigned char>(a),
                static_cast<unsigned char>(b));
  return buf;
}

// `<` followed by a proper prefix of the rest of `tag`: "<", "</", ..., "</parameter".
std::string tag_prefix_chain(std::string_view tag, size_t k) {
  if (k + 1 >= tag.size()) return "";
  std::string next = tag_prefix_chain(tag, k + 1);
  return "(" + grammar_literal(tag.substr(k, 1)) + (next.empty() ? "" : " " + next) + ")?";
}

// After `<` and tag[1, k): a character that breaks the tag there (never `<`, which would start
// a new attempt and is read by the caller's next `<` instead).
std::string tag_mismatch(std::string_view tag, size_t k) {
  std::string out = excluding_class(tag[k], tag[0]);
  if (k + 1 < tag.size()) {
    out += " | " + grammar_literal(tag.substr(k, 1)) + " (" + tag_mismatch(tag, k + 1) + ")";
  }
  return out;
}

// The rule `name` for text that never contains `tag`, whose first byte recurs nowhere else in
// it: any text is runs of other bytes and of `<` attempts that break off before the tag is
// whole. The text may end inside an attempt ("</param"): what follows it is the caller's.
// One rule, its parts inlined: a helper rule that could end inside an attempt would leave
// nearly every token as a remainder for the matcher to walk at run time (tens of ms a mask).
std::string text_without_rule(const std::string& name, std::string_view tag) {
  const std::string first = grammar_literal(tag.substr(0, 1));
  const std::string attempt = "(" + first + " " + tag_prefix_chain(tag, 1) + ")";
  return name + " ::= (" + excluding_class(tag[0], tag[0]) + " | " + attempt + "* " + first + " (" +
         tag_mismatch(tag, 1) + "))* " + attempt + "*\n";
}

// Whether an object schema lets members other than its declared properties be written.
bool allows_other_properties(const Json& schema) {
  auto it = schema.find("additionalProperties");
  return it == schema.end() || !(it->is_boolean() && !it->get<bool>());
}

// Compiles `schema` and adds its rules under `prefix`; returns the value's rule. Dropped
// keywords get `path_prefix` before their paths.
std::string embed_schema(const Json& schema, const std::string& prefix,
                         const std::string& path_prefix, grammar::GrammarAst& parts,
                         std::vector<grammar::UnsupportedKeyword>& dropped) {
  grammar::SchemaOptions options;
  options.item_space = options.key_space = " ";  // as the templates' tojson writes JSON
  grammar::CompiledGrammar compiled = grammar::compile_json_schema(schema, options);
  for (grammar::UnsupportedKeyword k : compiled.unsupported) {
    k.path = path_prefix + k.path;
    dropped.push_back(std::move(k));
  }
  return grammar::embed_rules(parts, grammar::parse_grammar(compiled.text), prefix);
}

class Builder {
 public:
  Builder(const GenerationRequest& request, ToolCallFormat format)
      : request_(request), format_(format), catalog_(nlohmann::json(request.tools)) {}

  // The rule of one tool's call body (between the framing newlines of `<tool_call>`).
  std::string tool_call(size_t index, const Json& function, bool held, bool strict,
                        std::vector<grammar::UnsupportedKeyword>& dropped) {
    const std::string name = function["name"].get<std::string>();
    const std::string prefix = "t" + std::to_string(index) + "-";
    Json schema = function.contains("parameters") && function["parameters"].is_object()
                      ? function["parameters"]
                      : Json{{"type", "object"}};
    std::string body;
    if (format_ == ToolCallFormat::kJson) {
      // As the schema compiler reads it: with `properties` and no additionalProperties, only
      // the declared arguments. (Opening such objects to other keys, as JSON Schema would,
      // made a coding agent's dozen tools bind in over 5 s: each object's other-key automaton
      // walks the vocabulary.)
      const std::string arguments = embed_schema(held ? schema : Json{{"type", "object"}},
                                                 prefix + "a-", "", parts_, dropped);
      body = grammar_literal("{\"name\": " + Json(name).dump() + ", \"arguments\": ") + " " +
             arguments + " " + grammar_literal("}");
    } else {
      body = grammar_literal("<function=" + name + ">\n") + " " +
             xml_parameters(name, prefix, held ? &schema : nullptr, strict, dropped) + " " +
             grammar_literal("</function>");
    }
    rules_ += prefix + "call ::= " + body + "\n";
    return prefix + "call";
  }

  std::string text(const std::vector<std::string>& alternatives) const {
    std::string choice;
    for (const std::string& a : alternatives) choice += (choice.empty() ? "" : " | ") + a;
    std::string out =
        "root ::= call" +
        (request_.parallel_tool_calls ? " (" + grammar_literal("\n") + " call)*" : "") + "\n";
    out += "call ::= " + grammar_literal(std::string(kToolCallOpenTag) + "\n") + " (" + choice +
           ") " + grammar_literal("\n" + std::string(kToolCallCloseTag)) + "\n";
    out += rules_;
    if (uses_raw_) {
      out += text_without_rule("xml-raw", kParameterClose) + "xml-other-name ::= [^<>\\n]+\n";
    }
    return out + grammar::grammar_ast_text(parts_);
  }

 private:
  std::string parameter(const std::string& name, const std::string& value) {
    return grammar_literal("<parameter=" + name + ">\n") + " " + value + " " +
           grammar_literal("\n" + std::string(kParameterClose) + "\n");
  }

  // Any parameters, raw values: for tools not held to a schema, and schemas without properties.
  std::string any_parameters() {
    uses_raw_ = true;
    return "(" + grammar_literal("<parameter=") + " xml-other-name " + grammar_literal(">\n") +
           " xml-raw " + grammar_literal("\n" + std::string(kParameterClose) + "\n") + ")*";
  }

  std::string xml_parameters(const std::string& function, const std::string& prefix,
                             const Json* schema, bool strict,
                             std::vector<grammar::UnsupportedKeyword>& dropped) {
    if (!schema || !schema->contains("properties") || !(*schema)["properties"].is_object() ||
        (*schema)["properties"].empty()) {
      return any_parameters();
    }
    std::set<std::string> required;
    if (auto it = schema->find("required"); it != schema->end() && it->is_array()) {
      for (const Json& r : *it) {
        if (r.is_string()) required.insert(r.get<std::string>());
      }
    }
    std::string out = "\"\"";
    size_t j = 0;
    for (const auto& [name, property] : (*schema)["properties"].items()) {
      const std::string path = "/properties/" + name;
      std::string value;
      if (catalog_.expects_json_value(function, name)) {
        value =
            embed_schema(property, prefix + "p" + std::to_string(j) + "-", path, parts_, dropped);
      } else {
        value = raw_value(property, path, dropped);
      }
      out += " (" + parameter(name, value) + ")" + (required.count(name) ? "" : "?");
      ++j;
    }
    // Parameters the schema does not declare, where it does not forbid them (models write
    // such ones, and JSON Schema allows them): after the declared ones, raw. Not for strict
    // tools: the other name is one shared rule that does not exclude the declared names (an
    // automaton excluding them per tool took over 5 s to bind for a dozen tools), so a
    // declared parameter could come again there, raw.
    if (!strict && allows_other_properties(*schema)) {
      uses_raw_ = true;
      out += " (" + grammar_literal("<parameter=") + " xml-other-name " + grammar_literal(">\n") +
             " xml-raw " + grammar_literal("\n" + std::string(kParameterClose) + "\n") + ")*";
    }
    return out;
  }

  // A value the parser reads as a string: its raw text, between the framing newlines (the
  // parser strips exactly one on each side). One of the listed strings when the schema lists
  // them (a `const` beside an `enum` only if the enum lists it); else a `format` the schema
  // compiler enforces (all ASCII without quotes or backslashes: its JSON and raw forms
  // coincide); else, with minLength / maxLength, that many code points of text without `<` (so
  // a bounded value can never hold `</parameter>`: such a value is always valid, and only `<` is
  // never written in one); else any text without `</parameter>`. Other string keywords
  // (`pattern`, whose translation is of the JSON-escaped form) are reported.
  std::string raw_value(const Json& property, const std::string& path,
                        std::vector<grammar::UnsupportedKeyword>& dropped) {
    std::vector<std::string> listed;
    bool enumerated = false;  // const or enum lists the values (`listed` may then be empty)
    std::optional<std::string> format;
    uint32_t min_length = 0, max_length = grammar::Expr::kUnbounded;
    std::vector<std::string> lengths;  // the length keywords given
    if (property.is_object()) {
      const auto c = property.find("const");
      const bool has_const = c != property.end() && c->is_string();
      if (has_const) {
        listed.push_back(c->get<std::string>());
        enumerated = true;
      }
      if (auto e = property.find("enum"); e != property.end() && e->is_array()) {
        bool all_strings =
            std::all_of(e->begin(), e->end(), [](const Json& v) { return v.is_string(); });
        if (all_strings) {
          enumerated = true;
          if (has_const) {
            // Both hold: the const, if the enum lists it (as the schema compiler reads them).
            if (std::find(e->begin(), e->end(), *c) == e->end()) listed.clear();
          } else {
            for (const Json& v : *e) listed.push_back(v.get<std::string>());
          }
        }
      }
      for (const auto& [keyword, v] : property.items()) {
        if (kStringAnnotations.count(keyword) || keyword == "const" || keyword == "enum") continue;
        if (keyword == "format" && v.is_string()) {
          format = grammar::format_expression(v.get<std::string>());
          if (format) continue;
        }
        if ((keyword == "minLength" || keyword == "maxLength") && v.is_number_unsigned() &&
            v.get<uint64_t>() <= grammar::SchemaOptions{}.max_string_length) {
          (keyword == "minLength" ? min_length : max_length) = uint32_t(v.get<uint64_t>());
          lengths.push_back(keyword);
          continue;
        }
        dropped.push_back({keyword, path + "/" + keyword});
      }
    }
    if (enumerated || format || min_length > max_length) {
      // The listed values and the format are written as they are, not intersected with a
      // length (nor the listed values checked against the format: both are then reported, as
      // the schema compiler reports constraints beside an enum); a length no value can have is
      // not enforced.
      for (const std::string& k : lengths) dropped.push_back({k, path + "/" + k});
      if (format && !enumerated) return "(" + *format + ")";
      if (format) dropped.push_back({"format", path + "/format"});
    } else if (!lengths.empty()) {
      return "[^<]{" + std::to_string(min_length) + "," +
             (max_length == grammar::Expr::kUnbounded ? "" : std::to_string(max_length)) + "}";
    }
    if (enumerated && listed.empty()) return kNoValue;  // a const the enum does not list
    if (listed.empty()) {
      uses_raw_ = true;
      return "xml-raw";
    }
    std::string out;
    for (const std::string& v : listed) out += (out.empty() ? "" : " | ") + grammar_literal(v);
    return "(" + out + ")";
  }

  const GenerationRequest& request_;
  ToolCallFormat format_;
  ToolCatalog catalog_;
  std::string rules_;
  grammar::GrammarAst parts_;
  bool uses_raw_ = false;
};

}  // namespace

ToolCallGrammar build_tool_call_grammar(const GenerationRequest& request, ToolCallFormat format,
                                        bool every_tool) {
  if (request.tools.empty() || request.tool_choice == ToolChoiceMode::kNone ||
      request.route == Route::kCompletions) {
    return {};
  }
  auto strict = [&](const std::string& name) {
    return std::find(request.strict_tools.begin(), request.strict_tools.end(), name) !=
           request.strict_tools.end();
  };
  Builder builder(request, format);
  ToolCallGrammar out;
  std::vector<std::string> alternatives;
  bool any_held = false;
  for (size_t i = 0; i < request.tools.size(); ++i) {
    const Json& function = request.tools[i]["function"];
    const std::string name = function["name"].get<std::string>();
    if (request.tool_choice == ToolChoiceMode::kNamed && name != request.tool_choice_name) continue;
    const bool held = every_tool || strict(name);
    any_held = any_held || held;
    std::vector<grammar::UnsupportedKeyword> dropped;
    alternatives.push_back(builder.tool_call(i, function, held, strict(name), dropped));
    for (grammar::UnsupportedKeyword& k : dropped) {
      out.dropped.push_back(
          {std::move(k), "tools[" + std::to_string(i) + "] (" + name + ")", strict(name)});
    }
  }
  if (!any_held || alternatives.empty()) return {};
  out.text = builder.text(alternatives);
  return out;
}

}  // namespace qmlx::server
