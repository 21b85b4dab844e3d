// The grammar of a request's tool calls, in our grammar syntax (docs/grammar.md): from the text
// `<tool_call>` on, the chat template's call syntax with one alternative per offered tool, and
// each call's arguments held to that tool's parameter schema.
//
//   JSON (Qwen3):  <tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>
//                  ARGS as the schema compiler writes it, with the templates' spacing
//                  (`tojson`: ", " and ": "), properties in schema order
//   XML (Qwen3.5): <tool_call>\n<function=NAME>\n PARAMS </function>\n</tool_call>
//                  PARAMS: `<parameter=P>\nVALUE\n</parameter>\n` for the schema's properties
//                  in schema order, each required one exactly once and each other at most once;
//                  then, unless additionalProperties is false or the tool strict, undeclared
//                  ones with raw values.
//                  VALUE is raw text that cannot contain `</parameter>` for a parameter the
//                  output parser reads as a string (one of the listed values for a string
//                  enum/const); else the JSON of its schema, as the template writes objects and
//                  arrays and as the parser reads every non-string parameter.
//
// Calls follow one another separated by "\n" as the templates write them, and the root ends
// after a call: the turn's stop token is allowed only there. With parallel_tool_calls false
// there is one call. A named tool_choice leaves that tool's alternative only.
//
// Which arguments are held to their schema: a strict tool's always, every tool's when
// `every_tool` (the server's tool_call_grammar). The other tools' calls still follow the call
// syntax, with any JSON object (any parameters) as arguments. With no tool held to a schema
// there is no grammar: calls are free text for the parser.
#pragma once

#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "server/common/generation_request.h"
#include "text/output/output_format.h"

namespace qmlx::server {

struct ToolCallGrammar {
  std::string text;  // empty: no grammar
  // Keywords of a held tool's schema the engine cannot enforce (dropped from the constraint),
  // with the request field holding the schema ("tools[2].function.parameters") and whether the
  // tool is strict (then the request is refused instead).
  struct Dropped {
    grammar::UnsupportedKeyword keyword;
    std::string field;
    bool strict = false;
  };
  std::vector<Dropped> dropped;
};

// Throws grammar::GrammarError for a schema the compiler refuses (a limit, not a schema).
ToolCallGrammar build_tool_call_grammar(const GenerationRequest& request, ToolCallFormat format,
                                        bool every_tool);

// The text that opens a call in both formats; the grammar starts with it.
inline constexpr std::string_view kToolCallOpenTag = "<tool_call>";
inline constexpr std::string_view kToolCallCloseTag = "</tool_call>";

}  // namespace qmlx::server
