// Edit points: token offsets inside a rendered prompt where coding agents edit their own
// history between turns, so that a checkpoint there survives the edit. Agents inject
// `<system-reminder>` blocks into user messages (Claude Code as separate content parts, Qwen Code
// too) and drop or move them when they replay the conversation next turn: Qwen Code's first
// user message ends with a date reminder that the replay leaves out, so the next prompt splits
// exactly where that block began.
//
// An offset is reported only where it is exact: a token boundary falls at the byte where the
// block starts, and the text before it tokenizes to exactly the prompt's first tokens (the
// tokens a shorter prompt ending there would have). The check is cheap: the tokenizer matches
// special tokens before BPE, so only the text after the last special token before the block
// (the message's own text) is encoded again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "text/tokenizer/tokenizer.h"

namespace qmlx {

// What opens an injected reminder block.
inline constexpr std::string_view kReminderMarker = "<system-reminder>";

// Token offsets k in (from, to) of `ids` (the tokens of `text`) where `marker` starts in `text`
// and encode(text before it) == ids[0, k); ascending, at most the last `max_count` of them.
std::vector<size_t> edit_points(const Tokenizer& tokenizer, std::string_view text,
                                std::span<const int32_t> ids, size_t from, size_t to,
                                std::string_view marker = kReminderMarker, size_t max_count = 16);

}  // namespace qmlx
