#include "grammar/integer_range.h"

#include <algorithm>
#include <vector>

namespace qmlx::grammar {
namespace {

constexpr const char* kNever = "[^\\x00-\\U0010ffff]";

std::string digit_class(char lo, char hi) {
  if (lo == hi) return std::string("\"") + lo + "\"";
  if (lo == '0' && hi == '9') return "[0-9]";
  return std::string("[") + lo + "-" + hi + "]";
}

std::string any_digits(size_t n) {
  if (n == 0) return "";
  return n == 1 ? "[0-9]" : "[0-9]{" + std::to_string(n) + "}";
}

std::string join(const std::vector<std::string>& alternatives) {
  std::string out;
  for (const auto& a : alternatives) out += (out.empty() ? "" : " | ") + a;
  return alternatives.size() > 1 ? "(" + out + ")" : out;
}

std::string seq(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + " " + b;
}

// Digit strings of equal length n between a and b inclusive (leading zeros allowed).
std::string same_length(const std::string& a, const std::string& b) {
  size_t n = a.size();
  if (n == 0) return "";
  if (a == b) return "\"" + a + "\"";
  if (a[0] == b[0])
    return seq(std::string("\"") + a[0] + "\"", same_length(a.substr(1), b.substr(1)));
  std::string rest_a = a.substr(1), rest_b = b.substr(1);
  bool a_rest_min = rest_a.find_first_not_of('0') == std::string::npos;
  bool b_rest_max = rest_b.find_first_not_of('9') == std::string::npos;
  std::vector<std::string> alternatives;
  char first_full = a_rest_min ? a[0] : static_cast<char>(a[0] + 1);
  char last_full = b_rest_max ? b[0] : static_cast<char>(b[0] - 1);
  if (!a_rest_min)
    alternatives.push_back(
        seq(std::string("\"") + a[0] + "\"", same_length(rest_a, std::string(n - 1, '9'))));
  if (first_full <= last_full)
    alternatives.push_back(seq(digit_class(first_full, last_full), any_digits(n - 1)));
  if (!b_rest_max)
    alternatives.push_back(
        seq(std::string("\"") + b[0] + "\"", same_length(std::string(n - 1, '0'), rest_b)));
  return join(alternatives);
}

uint64_t power_of_ten(size_t n) {
  uint64_t p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

// Unsigned integers in [lo, hi]; hi nullopt means unbounded.
std::string unsigned_range(uint64_t lo, std::optional<uint64_t> hi) {
  if (hi && lo > *hi) return kNever;
  std::vector<std::string> alternatives;
  size_t lo_digits = std::to_string(lo).size();
  size_t hi_digits = hi ? std::to_string(*hi).size() : 19;
  for (size_t d = lo_digits; d <= hi_digits; ++d) {
    uint64_t first = d == 1 ? 0 : power_of_ten(d - 1);
    uint64_t last = d >= 20 ? UINT64_MAX : power_of_ten(d) - 1;
    uint64_t a = std::max(lo, first), b = hi ? std::min(*hi, last) : last;
    if (a <= b) alternatives.push_back(same_length(std::to_string(a), std::to_string(b)));
  }
  if (!hi) alternatives.push_back("[1-9] [0-9]{19,}");  // 20 digits and more
  return join(alternatives);
}

}  // namespace

std::string integer_range_expression(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  if (lo && hi && *lo > *hi) return kNever;
  std::vector<std::string> alternatives;
  if (!hi || *hi >= 0)
    alternatives.push_back(
        unsigned_range(lo && *lo > 0 ? static_cast<uint64_t>(*lo) : 0,
                       hi ? std::optional<uint64_t>(static_cast<uint64_t>(*hi)) : std::nullopt));
  if (!lo || *lo < 0) {
    // Negative part: magnitudes from max(1, -hi) to -lo.
    uint64_t min_magnitude = hi && *hi < 0 ? uint64_t(0) - static_cast<uint64_t>(*hi) : 1;
    std::optional<uint64_t> max_magnitude;
    if (lo) max_magnitude = uint64_t(0) - static_cast<uint64_t>(*lo);
    alternatives.push_back("\"-\" " + unsigned_range(min_magnitude, max_magnitude));
  }
  return join(alternatives);
}

}  // namespace qmlx::grammar
