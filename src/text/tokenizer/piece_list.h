// PieceList: the pieces of text a pre-tokenizer produces, stored back to back in one buffer
// so that splitting a long prompt into hundreds of thousands of pieces costs no allocation
// per piece. Each BPE call then works on one piece.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace qmlx {

class PieceList {
 public:
  size_t size() const { return ends_.size(); }
  std::string_view piece(size_t i) const {
    size_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(text_).substr(begin, ends_[i] - begin);
  }
  // Empty pieces are dropped, as Hugging Face drops empty splits.
  void add(std::string_view piece) {
    if (piece.empty()) return;
    text_.append(piece);
    ends_.push_back(text_.size());
  }
  // Appends to the last piece (the start of a new one if there is none).
  void extend_last(std::string_view more) {
    if (ends_.empty()) return add(more);
    text_.append(more);
    ends_.back() = text_.size();
  }
  void clear() {
    text_.clear();
    ends_.clear();
  }
  void reserve(size_t bytes) { text_.reserve(bytes); }

  // Whether piece 0 begins at the very start of the encoded text (Metaspace's "first" scheme
  // prepends only there).
  bool starts_at_origin = true;

 private:
  std::string text_;
  std::vector<size_t> ends_;
};

}  // namespace qmlx
