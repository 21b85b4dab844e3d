#include "text/tokenizer/bpe_model.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <queue>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "text/tokenizer/component_json.h"
#include "text/tokenizer/utf8.h"

namespace qmlx {
namespace {

// Above this many symbols the quadratic rescan loses to a priority queue.
constexpr size_t kSmallWord = 24;

std::pair<std::string, std::string> parse_merge(const nlohmann::json& merge,
                                                const std::string& context) {
  if (merge.is_array() && merge.size() == 2) {
    return {merge[0].get<std::string>(), merge[1].get<std::string>()};
  }
  if (merge.is_string()) {
    const std::string& line = merge.get_ref<const std::string&>();
    size_t space = line.find(' ');
    if (space != std::string::npos && line.find(' ', space + 1) == std::string::npos) {
      return {line.substr(0, space), line.substr(space + 1)};
    }
  }
  throw Error(context + ": malformed BPE merge " + merge.dump());
}

}  // namespace

std::unique_ptr<BpeModel> BpeModel::from_json(const nlohmann::json& model,
                                              const std::string& context) {
  std::string type = model.contains("type") ? component_type(model, "model", context) : "BPE";
  if (type != "BPE") throw unsupported_component("model", type, context);
  if (model.contains("dropout") && !model["dropout"].is_null() &&
      model["dropout"].get<double>() != 0.0) {
    throw Error(context + ": BPE dropout is not supported (inference needs determinism)");
  }
  auto bpe = std::unique_ptr<BpeModel>(new BpeModel());
  auto string_or_empty = [&](const char* key) {
    return model.contains(key) && model[key].is_string() ? model[key].get<std::string>() : "";
  };
  bpe->continuing_subword_prefix_ = string_or_empty("continuing_subword_prefix");
  bpe->end_of_word_suffix_ = string_or_empty("end_of_word_suffix");
  bpe->fuse_unk_ = model.value("fuse_unk", false);
  bpe->byte_fallback_ = model.value("byte_fallback", false);
  bpe->ignore_merges_ = model.value("ignore_merges", false);
  bpe->load_vocab(model.at("vocab"), context);
  bpe->load_merges(model.at("merges"), context);
  bpe->build_char_table();
  std::string unk = string_or_empty("unk_token");
  if (!unk.empty()) {
    bpe->unk_id_ = bpe->token_id(unk);
    if (!bpe->unk_id_) throw Error(context + ": unk_token \"" + unk + "\" is not in the vocab");
  }
  return bpe;
}

void BpeModel::load_vocab(const nlohmann::json& vocab, const std::string& context) {
  if (!vocab.is_object()) throw Error(context + ": model.vocab must be an object");
  vocab_.reserve(vocab.size());
  for (const auto& [token, id_json] : vocab.items()) {
    auto id = id_json.get<int32_t>();
    if (id < 0) throw Error(context + ": negative id for vocab token \"" + token + "\"");
    vocab_.emplace(token, id);
    if (static_cast<size_t>(id) >= id_to_token_.size()) {
      id_to_token_.resize(id + 1);
      has_token_.resize(id + 1);
    }
    id_to_token_[id] = token;
    has_token_[id] = true;
  }
}

void BpeModel::load_merges(const nlohmann::json& merges, const std::string& context) {
  size_t prefix_length = continuing_subword_prefix_.size();
  merges_.reserve(merges.size());
  int32_t rank = 0;
  for (const auto& merge : merges) {
    auto [left, right] = parse_merge(merge, context);
    auto left_id = token_id(left), right_id = token_id(right);
    if (!left_id || !right_id || right.size() < prefix_length) {
      throw Error(context + ": merge \"" + left + " " + right + "\" uses a token not in the vocab");
    }
    auto result = token_id(left + right.substr(prefix_length));
    if (!result) {
      throw Error(context + ": merge \"" + left + " " + right + "\" result is not in the vocab");
    }
    merges_.insert(MergeTable::key(*left_id, *right_id), Merge{rank++, *result});
  }
}

void BpeModel::build_char_table() {
  char_table_.assign(kCharTableSize, -1);
  std::string character;
  for (char32_t cp = 0; cp < kCharTableSize; ++cp) {
    character.clear();
    utf8::append(character, cp);
    if (auto id = token_id(character)) char_table_[cp] = *id;
  }
}

std::optional<int32_t> BpeModel::char_id(std::string_view character) const {
  auto lead = static_cast<uint8_t>(character[0]);
  char32_t cp = kCharTableSize;
  if (character.size() == 1) {
    cp = lead;
  } else if (character.size() == 2) {
    cp = ((lead & 0x1F) << 6) | (static_cast<uint8_t>(character[1]) & 0x3F);
  }
  if (cp < kCharTableSize) {
    int32_t id = char_table_[cp];
    if (id < 0) return std::nullopt;
    return id;
  }
  return token_id(character);
}

std::optional<int32_t> BpeModel::token_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::token_text(int32_t id) const {
  if (id < 0 || id >= id_limit() || !has_token_[id]) return nullptr;
  return &id_to_token_[id];
}

void BpeModel::tokenize(std::string_view piece, std::vector<int32_t>& ids) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    if (auto id = token_id(piece)) {
      ids.push_back(*id);
      return;
    }
  }
  if (piece.size() > PieceCache::kMaxPieceBytes) {
    auto result = tokenize_uncached(piece);
    ids.insert(ids.end(), result.begin(), result.end());
    return;
  }
  uint64_t hash = PieceCache::hash(piece);
  if (cache_.lookup(piece, hash, ids)) return;
  auto result = tokenize_uncached(piece);
  ids.insert(ids.end(), result.begin(), result.end());
  cache_.insert(piece, hash, result);
}

std::vector<int32_t> BpeModel::tokenize_uncached(std::string_view piece) const {
  std::vector<int32_t> symbols = initial_symbols(piece);
  if (symbols.size() <= kSmallWord) {
    merge_small(symbols);
  } else {
    merge_large(symbols);
  }
  return symbols;
}

std::vector<int32_t> BpeModel::initial_symbols(std::string_view piece) const {
  std::vector<int32_t> symbols;
  symbols.reserve(piece.size());
  bool affixes = !continuing_subword_prefix_.empty() || !end_of_word_suffix_.empty();
  std::string scratch;
  size_t i = 0;
  while (i < piece.size()) {
    size_t start = i;
    size_t length = utf8::valid_sequence_length(piece, i);
    i += length == 0 ? 1 : length;
    std::string_view character = piece.substr(start, i - start);
    if (affixes) {
      scratch.assign(start == 0 ? "" : continuing_subword_prefix_);
      scratch.append(character);
      if (i == piece.size()) scratch.append(end_of_word_suffix_);
      character = scratch;
    }
    if (auto id = affixes ? token_id(character) : char_id(character)) {
      symbols.push_back(*id);
    } else {
      append_unknown(symbols, piece.substr(start, i - start));
    }
  }
  return symbols;
}

// A character missing from the vocab becomes its <0xXX> byte tokens when the model has them
// (byte_fallback), otherwise the unk token (one per run if fuse_unk), otherwise nothing.
void BpeModel::append_unknown(std::vector<int32_t>& symbols, std::string_view character) const {
  if (byte_fallback_) {
    std::vector<int32_t> bytes;
    for (char c : character) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", static_cast<uint8_t>(c));
      auto id = token_id(name);
      if (!id) break;
      bytes.push_back(*id);
    }
    if (bytes.size() == character.size()) {
      symbols.insert(symbols.end(), bytes.begin(), bytes.end());
      return;
    }
  }
  if (!unk_id_) return;
  if (fuse_unk_ && !symbols.empty() && symbols.back() == *unk_id_) return;
  symbols.push_back(*unk_id_);
}

// Keeps the rank of every adjacent pair, so each merge costs two lookups plus a scan.
void BpeModel::merge_small(std::vector<int32_t>& symbols) const {
  constexpr int32_t kNone = INT32_MAX;
  int32_t ranks[kSmallWord];
  int32_t results[kSmallWord];
  auto score = [&](size_t i) {
    const Merge* m = find_merge(symbols[i], symbols[i + 1]);
    ranks[i] = m ? m->rank : kNone;
    results[i] = m ? m->result : -1;
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i) score(i);
  while (symbols.size() > 1) {
    size_t pairs = symbols.size() - 1;
    size_t best = 0;
    for (size_t i = 1; i < pairs; ++i) {
      if (ranks[i] < ranks[best]) best = i;
    }
    if (ranks[best] == kNone) return;
    symbols[best] = results[best];
    symbols.erase(symbols.begin() + best + 1);
    if (best + 2 < pairs) {
      std::copy(ranks + best + 2, ranks + pairs, ranks + best + 1);
      std::copy(results + best + 2, results + pairs, results + best + 1);
    }
    if (best + 1 < symbols.size()) score(best);
    if (best > 0) score(best - 1);
  }
}

// Same merge order as merge_small, in O(n log n): a min-heap of candidate merges keyed by
// (rank, position) over a doubly linked list of symbols; stale candidates are skipped.
void BpeModel::merge_large(std::vector<int32_t>& symbols) const {
  struct Node {
    int32_t id;
    int32_t prev, next;
    bool alive;
  };
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t left, right;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  const auto n = static_cast<int32_t>(symbols.size());
  std::vector<Node> nodes(n);
  for (int32_t i = 0; i < n; ++i) nodes[i] = {symbols[i], i - 1, i + 1 < n ? i + 1 : -1, true};
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto push = [&](int32_t pos) {
    if (pos < 0 || nodes[pos].next < 0) return;
    int32_t left = nodes[pos].id, right = nodes[nodes[pos].next].id;
    if (const Merge* m = find_merge(left, right)) queue.push({m->rank, pos, left, right});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i);
  while (!queue.empty()) {
    Candidate c = queue.top();
    queue.pop();
    Node& node = nodes[c.pos];
    if (!node.alive || node.next < 0 || node.id != c.left || nodes[node.next].id != c.right) {
      continue;
    }
    Node& removed = nodes[node.next];
    node.id = find_merge(c.left, c.right)->result;
    removed.alive = false;
    node.next = removed.next;
    if (removed.next >= 0) nodes[removed.next].prev = c.pos;
    push(node.prev);
    push(c.pos);
  }
  symbols.clear();
  for (int32_t i = 0; i >= 0 && i < n; i = nodes[i].next) symbols.push_back(nodes[i].id);
}

}  // namespace qmlx
