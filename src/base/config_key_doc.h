// ConfigKeyDoc: the documentation of one key of cache_config.json: its dotted name, the
// values it takes, its default and what it does. Each part of the program that reads keys
// from the file (the cache its "cache" object, the server the rest) keeps one table of its
// keys that its parser reads from and its help is printed from, so the two cannot drift.
#pragma once

#include <string>
#include <vector>

namespace qmlx {

struct ConfigKeyDoc {
  std::string name;           // dotted: "cache.chunk_tokens"
  std::string values;         // "true|false", "integer in [16, 65536]"...
  std::string default_value;  // as it would be written in the file
  std::string help;
};

// One aligned block: a line per key (name, values, default), its help indented below.
std::string format_config_keys(const std::vector<ConfigKeyDoc>& keys);

}  // namespace qmlx
