#include "text/template/edit_points.h"

#include <algorithm>

namespace qmlx {
namespace {

// Byte offset in the text where each token starts, plus the end; empty when the tokens do not
// spell the text byte for byte (a normalizer changed it), so no offset can be trusted.
std::vector<size_t> token_starts(const Tokenizer& tokenizer, std::string_view text,
                                 std::span<const int32_t> ids) {
  std::vector<size_t> starts;
  starts.reserve(ids.size() + 1);
  size_t at = 0;
  for (int32_t id : ids) {
    starts.push_back(at);
    const std::string bytes = tokenizer.token_bytes(id);
    if (text.compare(at, bytes.size(), bytes) != 0) return {};
    at += bytes.size();
  }
  if (at != text.size()) return {};
  starts.push_back(at);
  return starts;
}

}  // namespace

std::vector<size_t> edit_points(const Tokenizer& tokenizer, std::string_view text,
                                std::span<const int32_t> ids, size_t from, size_t to,
                                std::string_view marker, size_t max_count) {
  to = std::min(to, ids.size());
  if (from >= to || max_count == 0 || marker.empty()) return {};
  if (text.find(marker) == std::string_view::npos) return {};  // the common case, cheaply
  const std::vector<size_t> starts = token_starts(tokenizer, text, ids);
  if (starts.empty()) return {};
  std::vector<size_t> points;
  // From the end: the deepest points save the most when the edit comes after them.
  size_t search_end = starts[to];
  while (points.size() < max_count && search_end > starts[from]) {
    const size_t byte = text.rfind(marker, search_end - 1);
    if (byte == std::string_view::npos || byte <= starts[from]) break;
    search_end = byte;
    auto at = std::lower_bound(starts.begin(), starts.end(), byte);
    if (at == starts.end() || *at != byte) continue;  // inside a token: not a clean cut
    const size_t k = size_t(at - starts.begin());
    // Re-encode only from just after the last special token before k.
    size_t segment = k;
    while (segment > 0 && !tokenizer.is_special(ids[segment - 1])) --segment;
    const std::vector<int32_t> again =
        tokenizer.encode(text.substr(starts[segment], byte - starts[segment]));
    if (again.size() == k - segment &&
        std::equal(again.begin(), again.end(), ids.begin() + segment)) {
      points.push_back(k);
    }
  }
  std::reverse(points.begin(), points.end());
  return points;
}

}  // namespace qmlx
