#include "server/common/data_url.h"

#include <algorithm>
#include <cctype>

namespace qmlx::server {

std::optional<DataUrl> parse_data_url(std::string_view url) {
  constexpr std::string_view kScheme = "data:";
  // The scheme is case-insensitive (RFC 3986), the rest is as written.
  if (url.size() < kScheme.size() ||
      !std::equal(kScheme.begin(), kScheme.end(), url.begin(), [](char a, char b) {
        return a == std::tolower(static_cast<unsigned char>(b));
      })) {
    return std::nullopt;
  }
  const size_t comma = url.find(',', kScheme.size());
  if (comma == std::string_view::npos) return std::nullopt;
  std::string_view header = url.substr(kScheme.size(), comma - kScheme.size());
  DataUrl out;
  out.data = url.substr(comma + 1);
  constexpr std::string_view kBase64 = ";base64";
  if (header.size() >= kBase64.size() && header.substr(header.size() - kBase64.size()) == kBase64) {
    out.base64 = true;
    header.remove_suffix(kBase64.size());
  }
  out.media_type = header.substr(0, header.find(';'));  // parameters such as charset dropped
  return out;
}

}  // namespace qmlx::server
