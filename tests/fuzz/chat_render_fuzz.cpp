// Fuzz target: a request body parsed by the chat routes (OpenAI chat, Anthropic messages,
// Responses), then rendered with the real Qwen3.5 chat template, as a request reaches the
// template in the server. Parse refusals are 4xx ApiErrors; render failures are qmlx::Error
// (the route's 400); nothing else may escape, and no depth of input may exhaust the stack.
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "server/anthropic/anthropic_request.h"
#include "server/chat/chat_request.h"
#include "server/common/request_fields.h"
#include "server/responses/responses_request.h"
#include "tests/fuzz/fuzz_support.h"
#include "text/template/chat_template.h"

using namespace qmlx::server;
using qmlx::fuzz::refused_or_parsed;

namespace {

const qmlx::ChatTemplate& qwen3_5_template() {
  static const qmlx::ChatTemplate chat_template = [] {
    std::ifstream in(QMLX_SOURCE_DIR "/share/templates/qwen3_5.jinja");
    std::stringstream source;
    source << in.rdbuf();
    if (source.str().empty()) std::abort();  // the template must be there to fuzz anything
    return qmlx::ChatTemplate(source.str(), "qwen3_5.jinja", "", "<|im_end|>");
  }();
  return chat_template;
}

void render(const GenerationRequest& r) {
  try {
    qwen3_5_template().render(r.messages, r.tools, true, r.template_kwargs);
  } catch (const qmlx::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const SamplingDefaults defaults;
  static const ResponseStore store;
  const std::optional<nlohmann::ordered_json> parsed = qmlx::fuzz::request_body(data, size);
  if (!parsed) return 0;
  const nlohmann::ordered_json& body = *parsed;
  refused_or_parsed([&] { render(parse_chat_request(body, defaults)); });
  refused_or_parsed([&] { render(parse_messages_request(body, defaults)); });
  refused_or_parsed([&] { render(parse_responses_request(body, defaults, store)); });
  return 0;
}
