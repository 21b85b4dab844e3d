#include "server/scheduling/tool_choice_constraint.h"

namespace qmlx::server {
namespace {

bool tool_call_is_mandatory(const GenerationRequest& request) {
  return request.route != Route::kCompletions && !request.tools.empty() &&
         (request.tool_choice == ToolChoiceMode::kRequired ||
          request.tool_choice == ToolChoiceMode::kNamed);
}

}  // namespace

// The named form stops where the model's own continuation naturally starts a new token: after
// `"arguments":` (the model goes on with ` {`, one token; forcing the space alone would give it
// a split it never saw) and after `<function=NAME>\n` (it goes on with `<parameter=`).
std::string forced_tool_call_opening(const GenerationRequest& request, ToolCallFormat format) {
  if (!tool_call_is_mandatory(request)) return "";
  std::string text = "<tool_call>";
  if (request.tool_choice != ToolChoiceMode::kNamed) return text;
  if (format == ToolCallFormat::kJson) {
    text += "\n{\"name\": " + nlohmann::json(request.tool_choice_name).dump() + ", \"arguments\":";
  } else {
    text += "\n<function=" + request.tool_choice_name + ">\n";
  }
  return text;
}

ToolChoiceConstraint::ToolChoiceConstraint(const GenerationRequest& request,
                                           std::string_view rendered_prompt, ToolCallFormat format,
                                           const Tokenizer& tokenizer)
    : reasoning_end_(tokenizer) {
  std::string opening = forced_tool_call_opening(request, format);
  if (opening.empty()) return;
  std::vector<int32_t> ids = tokenizer.encode(opening, true);
  if (ids.empty()) return;
  forced_.assign(ids.begin(), ids.end());
  phase_ = prompt_ends_inside_think(rendered_prompt) ? Phase::kAwaitReasoningEnd : Phase::kForcing;
}

std::optional<int32_t> ToolChoiceConstraint::forced_token() {
  if (phase_ != Phase::kForcing) return std::nullopt;
  int32_t token = forced_.front();
  forced_.pop_front();
  if (forced_.empty()) phase_ = Phase::kDone;
  return token;
}

void ToolChoiceConstraint::observe(int32_t token) {
  if (phase_ != Phase::kAwaitReasoningEnd) return;
  if (reasoning_end_.seen_after(token)) phase_ = Phase::kForcing;
}

}  // namespace qmlx::server
