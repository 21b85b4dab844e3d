// Fuzz target: the Jinja engine on arbitrary template source (a model's chat template),
// rendered with a small conversation that has reasoning, a tool call and tools. Syntax and
// runtime errors are qmlx::Error; nothing else may escape or crash.
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "text/template/template.h"

namespace {

const nlohmann::ordered_json& variables() {
  static const nlohmann::ordered_json vars = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "You are terse."},
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": "", "reasoning_content": "use the tool",
       "tool_calls": [{"id": "c1", "type": "function",
                       "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "sunny"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                              "required": ["city"]}}}],
    "add_generation_prompt": true, "enable_thinking": true, "bos_token": "",
    "eos_token": "<|im_end|>"})");
  return vars;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    qmlx::jinja::Template t(std::string_view(reinterpret_cast<const char*>(data), size));
    t.render(variables());
  } catch (const qmlx::Error&) {
  }
  return 0;
}
