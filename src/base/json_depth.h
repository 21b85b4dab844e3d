// JSON nesting limit: how deep arrays and objects may nest in JSON that comes from outside
// (request bodies, tool-call argument strings, model output). nlohmann::json parses deep text
// iteratively, but copies, dump() and the chat template's conversion all recurse once per
// level, so ~60,000 levels overflow a thread's stack. Every such parse first measures the
// text's depth with a cheap iterative scan and refuses anything deeper than kMaxJsonDepth.
#pragma once

#include <cstddef>
#include <string_view>

namespace qmlx {

// Real tool schemas nest 10-20 levels (each schema level is two JSON levels: properties, then
// the property), a request adds about 5; 256 leaves ample room and bounds every recursion
// downstream to a few hundred frames.
inline constexpr size_t kMaxJsonDepth = 256;

// The deepest nesting of '[' and '{' in `text`, ignoring brackets inside strings. Malformed
// text gets some number: the parser reports it afterwards.
size_t json_nesting_depth(std::string_view text);

inline bool json_depth_within_limit(std::string_view text) {
  return json_nesting_depth(text) <= kMaxJsonDepth;
}

// Json::parse without exceptions, that also discards text nested deeper than kMaxJsonDepth,
// for the places where unparseable text is kept as text (tool-call arguments).
template <typename Json>
Json parse_json_bounded(std::string_view text) {
  if (!json_depth_within_limit(text)) return Json(Json::value_t::discarded);
  return Json::parse(text, nullptr, false);
}

}  // namespace qmlx
