#include "modelgen/bpe_trainer.h"

#include <map>

#include "modelgen/byte_level.h"

namespace qmlx::modelgen {

namespace {

enum class CharClass { kLetter, kDigit, kSpace, kNewline, kOther };

CharClass classify(unsigned char c) {
  if (c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return CharClass::kLetter;
  if (c >= '0' && c <= '9') return CharClass::kDigit;
  if (c == '\n' || c == '\r') return CharClass::kNewline;
  if (c == ' ' || c == '\t') return CharClass::kSpace;
  return CharClass::kOther;
}

// Length of the word starting at `text[begin]`.
size_t word_length(std::string_view text, size_t begin) {
  const auto cls = [&](size_t i) { return classify(static_cast<unsigned char>(text[i])); };
  size_t end = begin;
  // An optional single leading space or punctuation mark joins the letters that follow.
  if (end + 1 < text.size() && cls(end) != CharClass::kLetter && cls(end) != CharClass::kDigit &&
      cls(end) != CharClass::kNewline && cls(end + 1) == CharClass::kLetter) {
    ++end;
  }
  const CharClass first = cls(end);
  if (first == CharClass::kDigit) return end + 1 - begin;
  ++end;
  while (end < text.size() && cls(end) == first) ++end;
  return end - begin;
}

using Word = std::vector<std::string>;

Merge most_frequent_pair(const std::map<Word, int>& words) {
  std::map<Merge, long> counts;
  for (const auto& [word, count] : words) {
    for (size_t i = 0; i + 1 < word.size(); ++i) counts[{word[i], word[i + 1]}] += count;
  }
  Merge best;
  long best_count = 0;
  for (const auto& [pair, count] : counts) {
    if (count > best_count) {  // strict: the first (smallest) pair wins ties
      best = pair;
      best_count = count;
    }
  }
  return best;
}

Word apply_merge(const Word& word, const Merge& merge) {
  Word out;
  for (size_t i = 0; i < word.size(); ++i) {
    if (i + 1 < word.size() && word[i] == merge.first && word[i + 1] == merge.second) {
      out.push_back(merge.first + merge.second);
      ++i;
    } else {
      out.push_back(word[i]);
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  for (size_t begin = 0; begin < text.size();) {
    const size_t length = word_length(text, begin);
    words.emplace_back(text.substr(begin, length));
    begin += length;
  }
  return words;
}

std::vector<Merge> train_bpe_merges(std::string_view corpus, int merge_count) {
  std::map<Word, int> words;
  for (const auto& word : split_words(corpus)) {
    Word symbols;
    for (unsigned char c : word) symbols.push_back(byte_symbol(c));
    ++words[symbols];
  }
  std::vector<Merge> merges;
  while (static_cast<int>(merges.size()) < merge_count) {
    const Merge merge = most_frequent_pair(words);
    if (merge.first.empty()) break;  // every word is a single symbol
    merges.push_back(merge);
    std::map<Word, int> merged;
    for (const auto& [word, count] : words) merged[apply_merge(word, merge)] += count;
    words = std::move(merged);
  }
  return merges;
}

std::string_view builtin_corpus() {
  return R"corpus(The quick brown fox jumps over the lazy dog. A model reads the prompt, and then
it writes the answer one token at a time. The cache keeps the state of the conversation on
the disk, so the next turn of the same conversation starts in about a second instead of
minutes. Hello, world! How are you today? I am fine, thank you. What is the weather like in
Paris? It is sunny and warm, with a light wind from the west. Please write a short story
about a robot who learns to paint. Once upon a time there was a small robot that lived in a
quiet town by the sea. Every morning it walked to the harbour and watched the boats.
The user asked for the time. The assistant answered with the current time and the date.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 100 2024 3.14159 -7 1e-6.

def add(a, b):
    """Return the sum of a and b."""
    return a + b

def main():
    values = [1, 2, 3, 4]
    total = 0
    for value in values:
        total = add(total, value)
    print("total:", total)
    if total > 5:
        print("large")
    else:
        print("small")

int main(int argc, char** argv) {
  std::vector<int> values = {1, 2, 3};
  for (int value : values) {
    std::printf("%d\n", value);
  }
  return 0;
}

function greet(name) {
  const message = `Hello, ${name}!`;
  console.log(message);
  return { name: name, message: message };
}

{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
<function=get_weather>
<parameter=city>
Paris
</parameter>
</function>
The function returns the weather for the given city. The tool result is sent back to the
model, which then writes the final answer for the user.
)corpus";
}

}  // namespace qmlx::modelgen
