#include "base/config_key_doc.h"

#include <algorithm>

namespace qmlx {

std::string format_config_keys(const std::vector<ConfigKeyDoc>& keys) {
  size_t width = 0;
  for (const ConfigKeyDoc& key : keys) width = std::max(width, key.name.size());
  std::string out;
  for (const ConfigKeyDoc& key : keys) {
    out += "  " + key.name + std::string(width - key.name.size() + 2, ' ') + key.values +
           " (default " + key.default_value + ")\n";
    out += "      " + key.help + "\n";
  }
  return out;
}

}  // namespace qmlx
