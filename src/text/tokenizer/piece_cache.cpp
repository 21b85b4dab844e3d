#include "text/tokenizer/piece_cache.h"

#include <xxhash.h>

namespace qmlx {

uint64_t PieceCache::hash(std::string_view piece) {
  return XXH3_64bits(piece.data(), piece.size());
}

}  // namespace qmlx
