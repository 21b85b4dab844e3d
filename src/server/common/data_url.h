// A data URL (RFC 2397), the one form of image URL this server takes: the image travels inside
// the request ("data:image/png;base64,iVBOR..."), since the server fetches nothing.
#pragma once

#include <optional>
#include <string_view>

namespace qmlx::server {

struct DataUrl {
  std::string_view media_type;  // as written ("image/png"), possibly empty; not trusted
  bool base64 = false;          // ";base64" before the comma
  std::string_view data;        // everything after the first comma
};

// The parts of `url`, or nullopt when it is not a data URL ("data:" and a comma).
std::optional<DataUrl> parse_data_url(std::string_view url);

}  // namespace qmlx::server
