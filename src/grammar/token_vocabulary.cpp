#include "grammar/token_vocabulary.h"

#include <xxhash.h>

#include <algorithm>

#include "text/tokenizer/tokenizer.h"

namespace qmlx::grammar {

TokenVocabulary::TokenVocabulary(std::vector<std::string> token_bytes, std::vector<bool> special,
                                 std::vector<int32_t> stop_token_ids)
    : bytes_(std::move(token_bytes)),
      special_(std::move(special)),
      stop_ids_(std::move(stop_token_ids)) {
  special_.resize(bytes_.size());
  std::erase_if(stop_ids_, [&](int32_t id) { return id < 0 || id >= size(); });
  std::vector<std::pair<std::string, int32_t>> items;
  XXH3_state_t* h = XXH3_createState();
  XXH3_64bits_reset(h);
  for (int32_t id = 0; id < size(); ++id) {
    const std::string& b = bytes_[static_cast<size_t>(id)];
    uint64_t header[2] = {b.size(), special_[static_cast<size_t>(id)] ? 1u : 0u};
    XXH3_64bits_update(h, header, sizeof(header));
    XXH3_64bits_update(h, b.data(), b.size());
    // Special and stop tokens never take part in the byte-level match.
    if (!special_[static_cast<size_t>(id)] && !is_stop(id)) items.emplace_back(b, id);
  }
  XXH3_64bits_update(h, stop_ids_.data(), stop_ids_.size() * sizeof(int32_t));
  fingerprint_ = XXH3_64bits_digest(h);
  XXH3_freeState(h);
  trie_ = ByteTrie(std::move(items));
}

bool TokenVocabulary::is_stop(int32_t id) const {
  return std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end();
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::from_tokenizer(
    const Tokenizer& tokenizer, std::vector<int32_t> stop_token_ids,
    const std::vector<int32_t>& matchable_special_ids) {
  int32_t n = tokenizer.vocab_size();
  std::vector<std::string> bytes(static_cast<size_t>(n));
  std::vector<bool> special(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    special[static_cast<size_t>(id)] =
        tokenizer.is_special(id) &&
        std::find(matchable_special_ids.begin(), matchable_special_ids.end(), id) ==
            matchable_special_ids.end();
    bytes[static_cast<size_t>(id)] = tokenizer.token_bytes(id);
  }
  return std::make_shared<const TokenVocabulary>(std::move(bytes), std::move(special),
                                                 std::move(stop_token_ids));
}

}  // namespace qmlx::grammar
