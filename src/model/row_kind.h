// RowKind: how a row fed to the model is computed (kernels/matmul.h, kernels/attention.h).
// Prompt rows use the prefill arithmetic, generated rows (decode steps, MTP drafts being
// verified) the decode arithmetic, whatever the number of rows in the call, so a row's result
// never depends on its batch or on how its prompt was split.
#pragma once

#include <cstdint>

namespace qmlx {

enum class RowKind : uint8_t { kPrompt, kGenerated };

}  // namespace qmlx
