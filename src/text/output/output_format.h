// How a model writes tool calls and whether its reply starts inside a reasoning block. Both are
// properties of the chat template, so they are decided once per model (format) or once per
// rendered prompt (reasoning) and handed to OutputParser through its options.
#pragma once

#include <string_view>

namespace qmlx {

enum class ToolCallFormat {
  // Qwen3 / Qwen3-Next, Hermes style:
  //   <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
  kJson,
  // Qwen3.5, Qwen3-Coder style:
  //   <tool_call>\n<function=f>\n<parameter=a>\nVALUE\n</parameter>\n</function>\n</tool_call>
  kXml,
};

// XML when the template teaches the model the `<function=` / `<parameter=` syntax, else JSON.
ToolCallFormat tool_call_format_for_template(std::string_view template_source);

// True when the rendered prompt (generation prompt included) leaves the model inside an open
// `<think>` block, i.e. it ends with `<think>` plus optional whitespace: the model's reply then
// begins with reasoning and only closes the block.
bool prompt_ends_inside_think(std::string_view rendered_prompt);

}  // namespace qmlx
