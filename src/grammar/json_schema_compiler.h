// JSON Schema -> grammar. The output is canonical JSON (canonical_json.h): no whitespace (unless
// SchemaOptions asks for a space after separators), properties in schema order. Supported (draft 7
// and 2020-12 spellings):
//   type (one or a list), enum, const, anyOf, oneOf (only where its branches cannot both match:
//   different types, different const/enum values, or a required property with different const
//   values; else reported and compiled as anyOf), allOf (merged into one schema), $ref to
//   "#..." JSON Pointers ($defs, definitions, recursion included), properties, required,
//   additionalProperties (false, true or a schema; when absent and `properties` is given, no
//   other properties are written; when absent without `properties`, any), items (schema, or
//   a draft-7 array), prefixItems, additionalItems, minItems, maxItems, minLength and maxLength
//   (code points), pattern (regex_translation.h), format (json_formats.h), and minimum, maximum,
//   exclusiveMinimum, exclusiveMaximum for integers.
// Annotations (title, description, default, examples, $schema, $id, $comment, ...) are ignored.
// Anything else is reported in CompiledGrammar::unsupported (keyword and the JSON Pointer of
// the schema holding it) and dropped from the constraint: the output is held to the rest.
// A $ref with siblings applies both (2019+ semantics; draft 7 ignored the siblings).
#pragma once

#include <chrono>
#include <cstddef>

#include <nlohmann/json.hpp>

#include "grammar/compiled_grammar.h"

namespace qmlx::grammar {

struct SchemaOptions {
  size_t max_schema_bytes = 1 << 20;                 // limit "max_schema_bytes"
  int max_depth = 64;                                // nested subschemas; limit "max_schema_depth"
  std::chrono::milliseconds max_compile_time{2000};  // limit "max_compile_ms"
  // Counts above these are reported as unsupported. A bounded string is one counted repetition
  // of the character automaton (GrammarNode::Kind::kCounted): binding costs what an unbounded
  // string does whatever the bound, and the count lives in the matcher's stack frames, one
  // interned frame per character written (about 40 bytes with its index), so 10,000 keeps a
  // sequence's frames under about 0.5 MB. Array items cost one rule call each.
  uint32_t max_string_length = 10'000;  // minLength / maxLength
  uint32_t max_item_count = 128;        // minItems / maxItems
  GrammarLimits grammar_limits;         // limit "max_grammar_nodes"
  // What follows each `,` between members and items, and each `:` after a key: none in the
  // canonical form. Tool-call arguments take " " for both, as the chat templates' `tojson`
  // (Python json.dumps) writes them and the models learnt them.
  std::string item_space;
  std::string key_space;
};

// Throws GrammarError for a schema that is not a schema (not an object or boolean, a $ref to
// nothing) or that exceeds a limit (GrammarError::limit() names it).
CompiledGrammar compile_json_schema(const nlohmann::ordered_json& schema,
                                    const SchemaOptions& options = {});

}  // namespace qmlx::grammar
