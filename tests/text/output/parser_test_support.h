// Shared by the output-parser tests: a tool catalog to parse against, and feeding one reply to
// the parser in pieces cut at chosen or random UTF-8 character boundaries.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "text/output/output_parser.h"

namespace qmlx::testing {

inline nlohmann::json test_tools() {
  return nlohmann::json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                     "metric": {"type": "boolean"}}}}},
    {"type": "function", "function": {"name": "search", "parameters": {"type": "object",
      "properties": {"query": {"type": "string"}, "limit": {"type": "number"},
                     "filters": {"type": "object"}, "tags": {"type": "array"},
                     "cursor": {"type": "null"}, "note": {"type": ["string", "null"]},
                     "page": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}}},
    {"name": "no_args"}
  ])");
}

inline OutputParserOptions options_for(ToolCallFormat format, bool starts_in_reasoning = false) {
  OutputParserOptions options;
  options.starts_in_reasoning = starts_in_reasoning;
  options.parse_tool_calls = true;
  options.tool_call_format = format;
  options.tools = ToolCatalog(test_tools());
  options.id_seed = 42;
  return options;
}

inline OutputParserOptions plain_options(bool starts_in_reasoning = false) {
  OutputParserOptions options;
  options.starts_in_reasoning = starts_in_reasoning;
  options.id_seed = 42;
  return options;
}

// Byte offsets where a UTF-8 character starts, excluding 0.
inline std::vector<size_t> char_boundaries(std::string_view text) {
  std::vector<size_t> boundaries;
  for (size_t i = 1; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) boundaries.push_back(i);
  }
  return boundaries;
}

// Feeds `text` cut at the ascending offsets `cuts`, checks that the parser's own aggregate equals
// the sum of its deltas, and returns that sum.
inline ParsedOutput parse_in_pieces(std::string_view text, const std::vector<size_t>& cuts,
                                    const OutputParserOptions& options) {
  OutputParser parser(options);
  ParsedOutput sum;
  size_t start = 0;
  for (size_t cut : cuts) {
    sum.append(parser.feed(text.substr(start, cut - start)));
    start = cut;
  }
  sum.append(parser.feed(text.substr(start)));
  sum.append(parser.finish());
  EXPECT_EQ(sum, parser.result());
  return sum;
}

inline std::vector<size_t> random_cuts(const std::vector<size_t>& boundaries,
                                       std::mt19937& random) {
  std::vector<size_t> cuts;
  std::bernoulli_distribution keep(std::uniform_real_distribution<double>(0.05, 0.6)(random));
  for (size_t boundary : boundaries) {
    if (keep(random)) cuts.push_back(boundary);
  }
  return cuts;
}

// Parses `text` whole, then one character at a time and in `random_splits` random splits; every
// result must equal the whole parse, which is returned.
inline ParsedOutput expect_random_splits_agree(std::string_view text,
                                               const OutputParserOptions& options,
                                               int random_splits) {
  const ParsedOutput whole = parse_output(text, options);
  const std::vector<size_t> boundaries = char_boundaries(text);
  EXPECT_EQ(parse_in_pieces(text, boundaries, options), whole) << "one character at a time";
  std::mt19937 random(static_cast<uint32_t>(text.size()));
  for (int i = 0; i < random_splits; ++i) {
    EXPECT_EQ(parse_in_pieces(text, random_cuts(boundaries, random), options), whole)
        << "random split " << i;
  }
  return whole;
}

// As above with 40 random splits, plus every split into two pieces.
inline ParsedOutput expect_split_invariant(std::string_view text,
                                           const OutputParserOptions& options) {
  const ParsedOutput whole = expect_random_splits_agree(text, options, 40);
  for (size_t boundary : char_boundaries(text)) {
    EXPECT_EQ(parse_in_pieces(text, {boundary}, options), whole) << "split at " << boundary;
  }
  return whole;
}

}  // namespace qmlx::testing
