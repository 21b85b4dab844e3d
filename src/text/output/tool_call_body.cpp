#include "text/output/tool_call_body.h"

#include "base/json_depth.h"

namespace qmlx {
namespace {

using OrderedJson = nlohmann::ordered_json;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim_space(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

std::string compact(const OrderedJson& value) {
  return value.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

std::optional<OrderedJson> parse_json(std::string_view text) {
  OrderedJson value = parse_json_bounded<OrderedJson>(text);
  if (value.is_discarded()) return std::nullopt;
  return value;
}

// Hermes form: {"name": "f", "arguments": {...}}. Arguments written as a JSON string holding an
// object are accepted too (some fine-tunes do that); absent arguments mean no arguments.
std::optional<DecodedToolCall> decode_json_body(std::string_view body, const ToolCatalog& tools) {
  std::optional<OrderedJson> call = parse_json(trim_space(body));
  if (!call || !call->is_object()) return std::nullopt;
  auto name = call->find("name");
  if (name == call->end() || !name->is_string()) return std::nullopt;
  if (!tools.has(name->get<std::string>())) return std::nullopt;

  OrderedJson arguments = OrderedJson::object();
  if (auto given = call->find("arguments"); given != call->end()) {
    if (given->is_string()) {
      std::optional<OrderedJson> inner = parse_json(given->get<std::string>());
      if (!inner) return std::nullopt;
      arguments = std::move(*inner);
    } else {
      arguments = *given;
    }
  }
  if (!arguments.is_object()) return std::nullopt;
  return DecodedToolCall{name->get<std::string>(), compact(arguments)};
}

// A forward-only reader over an XML tool-call body.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : rest_(text) {}

  void skip_space() {
    while (!rest_.empty() && is_space(rest_.front())) rest_.remove_prefix(1);
  }
  bool consume(std::string_view literal) {
    if (!rest_.starts_with(literal)) return false;
    rest_.remove_prefix(literal.size());
    return true;
  }
  // The text before the next `terminator`, consuming both; nothing when there is none.
  std::optional<std::string_view> take_until(std::string_view terminator) {
    size_t at = rest_.find(terminator);
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view taken = rest_.substr(0, at);
    rest_.remove_prefix(at + terminator.size());
    return taken;
  }
  bool at_end() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

// `<function=NAME>` / `<parameter=NAME>` names: non-empty, one line, no markup.
std::optional<std::string_view> take_tag_name(Cursor& cursor) {
  std::optional<std::string_view> name = cursor.take_until(">");
  if (!name || name->empty()) return std::nullopt;
  if (name->find_first_of("<\n") != std::string_view::npos) return std::nullopt;
  return name;
}

// The template writes every value between a newline after `<parameter=ARG>` and one before
// `</parameter>`; those two newlines are framing, not part of the value.
std::string_view strip_framing_newlines(std::string_view value) {
  if (value.starts_with('\n')) value.remove_prefix(1);
  if (value.ends_with('\n')) value.remove_suffix(1);
  return value;
}

OrderedJson typed_value(std::string_view raw, std::string_view function, std::string_view parameter,
                        const ToolCatalog& tools) {
  if (tools.expects_json_value(function, parameter)) {
    if (std::optional<OrderedJson> parsed = parse_json(raw)) return std::move(*parsed);
  }
  return OrderedJson(std::string(raw));
}

std::optional<DecodedToolCall> decode_xml_body(std::string_view body, const ToolCatalog& tools) {
  Cursor cursor(body);
  cursor.skip_space();
  if (!cursor.consume("<function=")) return std::nullopt;
  std::optional<std::string_view> function = take_tag_name(cursor);
  if (!function || !tools.has(*function)) return std::nullopt;

  OrderedJson arguments = OrderedJson::object();
  while (true) {
    cursor.skip_space();
    if (cursor.consume("</function>")) break;
    if (!cursor.consume("<parameter=")) return std::nullopt;
    std::optional<std::string_view> parameter = take_tag_name(cursor);
    if (!parameter) return std::nullopt;
    std::optional<std::string_view> raw = cursor.take_until("</parameter>");
    if (!raw) return std::nullopt;
    arguments[std::string(*parameter)] =
        typed_value(strip_framing_newlines(*raw), *function, *parameter, tools);
  }
  cursor.skip_space();
  if (!cursor.at_end()) return std::nullopt;
  return DecodedToolCall{std::string(*function), compact(arguments)};
}

}  // namespace

std::optional<DecodedToolCall> decode_tool_call_body(std::string_view body, ToolCallFormat format,
                                                     const ToolCatalog& tools) {
  return format == ToolCallFormat::kXml ? decode_xml_body(body, tools)
                                        : decode_json_body(body, tools);
}

}  // namespace qmlx
