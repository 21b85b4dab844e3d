// Integer ranges as grammar text: the decimal integers (no leading zeros, '-' for negatives)
// between optional inclusive bounds, by the usual digit-by-digit range splitting, e.g.
// 15..213 -> "1" [5-9] | [2-9] [0-9] | "1" [0-9] [0-9] | "20" [0-9] | "21" [0-3].
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace qmlx::grammar {

// An expression (parenthesised when it has alternatives) matching exactly the integers in
// [lo, hi]; an unsatisfiable expression when lo > hi.
std::string integer_range_expression(std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace qmlx::grammar
