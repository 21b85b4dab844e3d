#include "text/output/output_delta.h"

namespace qmlx {

void ParsedOutput::append(const OutputDelta& delta) {
  reasoning += delta.reasoning;
  content += delta.content;
  for (const ToolCallDelta& step : delta.tool_calls) {
    if (step.index >= tool_calls.size()) tool_calls.resize(step.index + 1);
    ToolCall& call = tool_calls[step.index];
    call.id += step.id;
    call.name += step.name;
    call.arguments_json += step.arguments;
  }
}

}  // namespace qmlx
