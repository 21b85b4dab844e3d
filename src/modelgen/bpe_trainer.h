// A small deterministic byte-level BPE trainer: splits a text into words roughly the way the
// Qwen pre-tokenizer does (letters with an optional leading space, single digits, punctuation
// runs, whitespace), then repeatedly merges the most frequent adjacent pair (ties broken by
// the pair's text), as the `tokenizers` BPE trainer does. Used to give generated models a
// real, if tiny, vocabulary.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qmlx::modelgen {

using Merge = std::pair<std::string, std::string>;  // byte-level symbols

std::vector<std::string> split_words(std::string_view text);
std::vector<Merge> train_bpe_merges(std::string_view corpus, int merge_count);

// The built-in English and code sample the demo vocabulary is learned from.
std::string_view builtin_corpus();

}  // namespace qmlx::modelgen
