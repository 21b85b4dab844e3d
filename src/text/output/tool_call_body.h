// Decodes the text between `<tool_call>` and `</tool_call>` in either tool-call format. It is
// all-or-nothing: a body that is not exactly one well-formed call to a declared function yields
// nothing, and the parser then keeps the whole block as content, so no model text is lost.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "text/output/output_format.h"
#include "text/output/tool_catalog.h"

namespace qmlx {

struct DecodedToolCall {
  std::string name;
  // A JSON object, serialised compactly, keys in the order the model wrote them.
  std::string arguments_json;
};

std::optional<DecodedToolCall> decode_tool_call_body(std::string_view body, ToolCallFormat format,
                                                     const ToolCatalog& tools);

}  // namespace qmlx
