// Conformance against the JSON Schema Test Suite (Debian's json-schema-test-suite, draft 7).
// For every case whose schema compiles with no unsupported keyword: the valid instance, in
// canonical form, is accepted token by token (each token present in the mask first) and then
// the stop token; an invalid instance is refused at some token or never completes. Cases the
// engine cannot take honestly are skipped and counted by reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "grammar/canonical_json.h"
#include "grammar/json_schema_compiler.h"
#include "grammar_test_support.h"

namespace qmlx::grammar {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// Every single byte plus tokens spanning several JSON symbols, as a BPE vocabulary has.
std::shared_ptr<const TokenVocabulary> conformance_vocabulary() {
  std::vector<std::string> bytes = {"<|endoftext|>", "<|im_start|>"};
  for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, static_cast<char>(b)));
  for (const char* t :
       {"\"}",   "\"},",  "\":",      "\":\"",  "\",\"",    "{\"",      "[{",      "}]",  "},{",
        "\"]",   "[\"",   "\":{",     "\":[",   "true",     "false",    "null",    "foo", "bar",
        "\"foo", "bar\"", "\":1",     "1,",     "],",       "]}",       "}}",      "00",  "12",
        "-0",    "0.",    ".0",       "e+",     "\\\"",     "\\n",      "\\u00",   "-01", "T0",
        ":00",   "Z\"",   "@example", ".com\"", "\xC3\xA9", "\xF0\x9F", "\x92\xA9"})
    bytes.push_back(t);
  std::vector<bool> special(bytes.size());
  special[0] = special[1] = true;
  return std::make_shared<const TokenVocabulary>(bytes, special, std::vector<int32_t>{0});
}

// Greedy longest-match tokenization (any string is covered: every byte is a token).
std::vector<int32_t> tokenize(const TokenVocabulary& vocab, const std::string& text) {
  std::vector<int32_t> ids;
  for (size_t pos = 0; pos < text.size();) {
    int32_t best = -1;
    size_t best_len = 0;
    for (int32_t id = 2; id < vocab.size(); ++id) {
      const std::string& t = vocab.bytes(id);
      if (t.size() > best_len && text.compare(pos, t.size(), t) == 0)
        best = id, best_len = t.size();
    }
    ids.push_back(best);
    pos += best_len;
  }
  return ids;
}

// Property names in the order the schema document mentions them, for ordering instances.
void collect_property_order(const Json& s, std::map<std::string, size_t>& order) {
  if (s.is_object()) {
    if (s.contains("properties") && s["properties"].is_object())
      for (const auto& [name, sub] : s["properties"].items()) order.emplace(name, order.size());
    // Objects inside const and enum are written in their own order.
    std::vector<Json> values;
    if (s.contains("const")) values.push_back(s["const"]);
    if (s.contains("enum") && s["enum"].is_array())
      values.insert(values.end(), s["enum"].begin(), s["enum"].end());
    for (const auto& v : values)
      if (v.is_object())
        for (const auto& [name, e] : v.items()) order.emplace(name, order.size());
    for (const auto& [k, v] : s.items()) collect_property_order(v, order);
  } else if (s.is_array()) {
    for (const auto& e : s) collect_property_order(e, order);
  }
}

Json ordered_like_schema(const Json& v, const std::map<std::string, size_t>& order) {
  if (v.is_array()) {
    Json out = Json::array();
    for (const auto& e : v) out.push_back(ordered_like_schema(e, order));
    return out;
  }
  if (!v.is_object()) return v;
  std::vector<std::pair<std::string, const Json*>> members;
  for (const auto& [k, e] : v.items()) members.emplace_back(k, &e);
  std::stable_sort(members.begin(), members.end(), [&](const auto& a, const auto& b) {
    auto ia = order.find(a.first), ib = order.find(b.first);
    size_t ra = ia == order.end() ? SIZE_MAX : ia->second,
           rb = ib == order.end() ? SIZE_MAX : ib->second;
    return ra < rb;
  });
  Json out = Json::object();
  for (const auto& [k, e] : members) out[k] = ordered_like_schema(*e, order);
  return out;
}

// The schema with additionalProperties: true wherever `properties` has no additionalProperties:
// what a schema allows beyond the canonical form, which writes only the declared names there.
Json opened(const Json& s) {
  if (s.is_array()) {
    Json out = Json::array();
    for (const auto& e : s) out.push_back(opened(e));
    return out;
  }
  if (!s.is_object()) return s;
  Json out = Json::object();
  for (const auto& [k, v] : s.items()) out[k] = (k == "const" || k == "enum") ? v : opened(v);
  if (out.contains("properties") && !out.contains("additionalProperties"))
    out["additionalProperties"] = true;
  return out;
}

bool ref_with_siblings(const Json& s) {
  if (s.is_object()) {
    if (s.contains("$ref") && s.size() > 1) return true;
    for (const auto& [k, v] : s.items())
      if (ref_with_siblings(v)) return true;
  } else if (s.is_array()) {
    for (const auto& e : s)
      if (ref_with_siblings(e)) return true;
  }
  return false;
}

struct Tally {
  int valid_accepted = 0;
  int invalid_rejected = 0;
  std::map<std::string, int> skipped;
  std::vector<std::string> failures;
};

// Runs the instance through a matcher; returns whether it was accepted to completion.
bool run_instance(const std::shared_ptr<const TokenMaskTables>& tables, const std::string& text,
                  std::string& why) {
  const TokenVocabulary& vocab = tables->vocab();
  GrammarMatcher m(tables);
  std::vector<uint64_t> mask(vocab.mask_words());
  auto in_mask = [&](int32_t id) { return (mask[static_cast<size_t>(id) / 64] >> (id % 64)) & 1; };
  for (int32_t id : tokenize(vocab, text)) {
    m.fill_next_token_bitmask(mask);
    bool accepted = m.accept_token(id);
    if (accepted != static_cast<bool>(in_mask(id))) {
      why = "mask and accept_token disagree on token '" + vocab.bytes(id) + "'";
      return false;
    }
    if (!accepted) {
      why = "refused at token '" + vocab.bytes(id) + "'";
      return false;
    }
  }
  m.fill_next_token_bitmask(mask);
  if (!in_mask(0) || !m.accept_token(0)) {
    why = "incomplete at the end";
    return false;
  }
  return m.is_terminated();
}

void run_file(const fs::path& file, const std::shared_ptr<const TokenVocabulary>& vocab,
              const SchemaOptions& options, Tally& tally) {
  std::ifstream in(file);
  Json groups = Json::parse(in);
  for (const auto& group : groups) {
    const Json& schema = group["schema"];
    std::string where = file.filename().string() + ": " + group["description"].get<std::string>();
    std::string skip;
    CompiledGrammar g;
    try {
      g = compile_json_schema(schema, options);
      if (!g.unsupported.empty()) skip = "unsupported keyword " + g.unsupported[0].keyword;
    } catch (const GrammarError& e) {
      skip = "schema refused (" + std::string(e.what()).substr(0, 40) + ")";
    }
    if (skip.empty() && ref_with_siblings(schema))
      skip = "draft 7 $ref ignores its siblings; the engine applies them";
    std::shared_ptr<const TokenMaskTables> tables;
    if (skip.empty()) tables = TokenMaskTables::build(g.grammar, vocab);
    std::map<std::string, size_t> order;
    collect_property_order(schema, order);
    for (const auto& test : group["tests"]) {
      std::string case_name = where + " / " + test["description"].get<std::string>();
      if (!skip.empty()) {
        ++tally.skipped[skip];
        continue;
      }
      bool valid = test["valid"].get<bool>();
      std::string text = canonical_json(ordered_like_schema(test["data"], order));
      std::string why;
      bool accepted = run_instance(tables, text, why);
      if (valid && !accepted && why.find("disagree") == std::string::npos) {
        // Refused only because the canonical form leaves out undeclared properties?
        std::string open_why;
        auto open_tables =
            TokenMaskTables::build(compile_json_schema(opened(schema), options).grammar, vocab);
        if (run_instance(open_tables, text, open_why)) {
          ++tally.skipped["valid instance has properties the canonical form does not write"];
          continue;
        }
      }
      if (why.find("disagree") != std::string::npos)
        tally.failures.push_back(case_name + ": " + why);
      if (valid && accepted)
        ++tally.valid_accepted;
      else if (!valid && !accepted)
        ++tally.invalid_rejected;
      else
        tally.failures.push_back(case_name + ": " + text +
                                 (valid ? " refused: " + why : " accepted"));
    }
  }
}

// Runs the draft 7 suite (and four format files) under `options`.
void run_suite(const SchemaOptions& options, int at_least) {
  fs::path root = QMLX_JSON_SCHEMA_TEST_SUITE;
  if (!fs::exists(root / "draft7"))
    GTEST_SKIP() << "json-schema-test-suite is not installed (scripts/setup.sh)";
  auto vocab = conformance_vocabulary();
  Tally tally;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(root / "draft7"))
    if (e.path().extension() == ".json") files.push_back(e.path());
  for (const char* f : {"date.json", "date-time.json", "time.json", "email.json"})
    files.push_back(root / "draft7" / "optional" / "format" / f);
  std::sort(files.begin(), files.end());
  for (const auto& f : files) run_file(f, vocab, options, tally);

  int skipped = 0;
  for (const auto& [reason, n] : tally.skipped) {
    std::printf("  skipped %3d: %s\n", n, reason.c_str());
    skipped += n;
  }
  std::printf("  exercised: %d valid accepted, %d invalid rejected; %d skipped\n",
              tally.valid_accepted, tally.invalid_rejected, skipped);
  for (const auto& f : tally.failures) ADD_FAILURE() << f;
  EXPECT_GE(tally.valid_accepted + tally.invalid_rejected, at_least);
}

TEST(JsonSchemaTestSuite, Draft7) { run_suite({}, 220); }

// Again with every repetition counted (GrammarNode::Kind::kCounted) however small its bounds:
// minLength / maxLength and minItems / maxItems through the counted tables.
TEST(JsonSchemaTestSuite, Draft7CountedRepetitions) {
  SchemaOptions options;
  options.grammar_limits.max_unrolled_repeat = 0;
  run_suite(options, 220);
}

}  // namespace
}  // namespace qmlx::grammar
