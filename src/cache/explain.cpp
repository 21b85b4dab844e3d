#include "cache/explain.h"

#include <algorithm>

#include <nlohmann/json.hpp>


namespace qmlx {
namespace {

// Whether the two sequences agree again shortly after the split, as they do when a few tokens
// were replaced (an id, a timestamp): some a, b <= kMaxEdit with cached[split + a + i] ==
// prompt[split + b + i] for kResyncWindow tokens.
constexpr int64_t kMaxEdit = 16;
constexpr int64_t kResyncWindow = 32;

bool resyncs(std::span<const int32_t> prompt, std::span<const int32_t> cached, int64_t split) {
  for (int64_t a = 0; a <= kMaxEdit; ++a) {
    for (int64_t b = 0; b <= kMaxEdit; ++b) {
      if (a == 0 && b == 0) continue;
      const int64_t c0 = split + a, p0 = split + b;
      if (c0 + kResyncWindow > int64_t(cached.size()) ||
          p0 + kResyncWindow > int64_t(prompt.size())) {
        continue;
      }
      if (std::equal(cached.begin() + c0, cached.begin() + c0 + kResyncWindow,
                     prompt.begin() + p0)) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

std::optional<Divergence> find_divergence(std::span<const int32_t> prompt,
                                          std::span<const int32_t> cached, int64_t restored,
                                          int64_t min_shared, int context) {
  const auto [p, c] = std::mismatch(prompt.begin(), prompt.end(), cached.begin(), cached.end());
  const int64_t split = p - prompt.begin();
  if (split <= restored) return std::nullopt;
  if (split - restored < min_shared && !resyncs(prompt, cached, split)) return std::nullopt;
  Divergence d;
  d.position = split;
  d.restored = restored;
  d.snapshot_tokens = int64_t(cached.size());
  const int64_t from = std::max<int64_t>(0, split - context);
  d.before.assign(prompt.begin() + from, prompt.begin() + split);
  auto after = [&](std::span<const int32_t> tokens) {
    const int64_t end = std::min<int64_t>(int64_t(tokens.size()), split + context);
    return std::vector<int32_t>(tokens.begin() + std::min<int64_t>(split, end),
                                tokens.begin() + end);
  };
  d.cached_after = after(cached);
  d.incoming_after = after(prompt);
  return d;
}

DivergenceText describe_divergence(const Divergence& d, const TokenDecoder& decode) {
  DivergenceText text{decode(d.before), decode(d.cached_after), decode(d.incoming_after), {}};
  text.cause = find_volatile_span(text.before + text.cached, text.before + text.incoming);
  return text;
}

std::string format_divergence(const Divergence& d, const TokenDecoder& decode) {
  return format_divergence(d, describe_divergence(d, decode));
}

std::string format_divergence(const Divergence& d, const DivergenceText& text) {
  auto quoted = [](const std::string& text) {
    return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  std::string line =
      "divergence pos=" + std::to_string(d.position) + " restored=" + std::to_string(d.restored) +
      (d.unrestored.empty() ? "" : " unrestored=" + d.unrestored) +
      " snapshot=" + d.snapshot_id.hex() +
      " kind=" + std::string(snapshot_kind_name(d.snapshot_kind)) +
      " before=" + quoted(text.before) + " cached=" + quoted(text.cached) +
      " incoming=" + quoted(text.incoming);
  if (text.cause) {
    line += " likely_cause=" + text.cause->kind + " span=" + quoted(text.cause->text) +
            " fix=" + quoted(text.cause->fix);
  }
  return line;
}

}  // namespace qmlx
