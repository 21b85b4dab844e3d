#include "text/output/output_format.h"

namespace qmlx {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

ToolCallFormat tool_call_format_for_template(std::string_view template_source) {
  const bool teaches_xml = template_source.find("<function=") != std::string_view::npos ||
                           template_source.find("<parameter=") != std::string_view::npos;
  return teaches_xml ? ToolCallFormat::kXml : ToolCallFormat::kJson;
}

bool prompt_ends_inside_think(std::string_view rendered_prompt) {
  size_t end = rendered_prompt.size();
  while (end > 0 && is_space(rendered_prompt[end - 1])) --end;
  return rendered_prompt.substr(0, end).ends_with("<think>");
}

}  // namespace qmlx
