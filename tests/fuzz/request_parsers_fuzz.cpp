// Fuzz target: a request body through every route's parser, as the routes call them (the body
// parse first, then chat completions, completions, Anthropic messages and count_tokens,
// Responses, tokenize, detokenize), the image routes both for a model that reads images (their
// data URLs decoded) and for one that does not. Each must parse or refuse with a 4xx naming the
// field; nothing else may escape.
#include "server/anthropic/anthropic_request.h"
#include "server/chat/chat_request.h"
#include "server/common/image_reading.h"
#include "server/common/request_fields.h"
#include "server/responses/responses_request.h"
#include "tests/fuzz/fuzz_support.h"

using namespace qmlx::server;
using qmlx::fuzz::refused_or_parsed;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const SamplingDefaults defaults;
  static const ResponseStore store;
  static const ImageReading vision = [] {
    ImageReading r;
    r.vision_unavailable.clear();  // a model with a tower: images are decoded
    return r;
  }();
  const std::optional<nlohmann::ordered_json> parsed = qmlx::fuzz::request_body(data, size);
  if (!parsed) return 0;
  const nlohmann::ordered_json& body = *parsed;
  requested_model(body);
  refused_or_parsed([&] { parse_chat_request(body, defaults); });
  refused_or_parsed([&] { parse_completion_request(body, defaults); });
  refused_or_parsed([&] { parse_messages_request(body, defaults); });
  refused_or_parsed([&] {
    GenerationRequest r;
    parse_anthropic_conversation(body, r);
  });
  refused_or_parsed([&] { parse_responses_request(body, defaults, store); });
  refused_or_parsed([&] { parse_chat_request(body, defaults, vision); });
  refused_or_parsed([&] { parse_messages_request(body, defaults, vision); });
  refused_or_parsed([&] { parse_responses_request(body, defaults, store, vision); });
  refused_or_parsed([&] { parse_tokenize_request(body); });
  refused_or_parsed([&] { parse_detokenize_request(body, 151936); });
  return 0;
}
