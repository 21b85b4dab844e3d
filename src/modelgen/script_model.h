// The scripted fixture model: a tiny real Qwen3.5 model (one Gated DeltaNet layer, one full
// attention layer) whose forward pass, at temperature 0, continues any prompt with exactly a
// given text and then <|im_end|>. Server and client tests use it to drive the whole pipeline
// with known output (reasoning, tool calls, plain text).
//
// How it works (all weights are set by hand, nothing is trained):
//  - The script is cut into steps: Qwen special tokens (<think>, <tool_call>, ... keep their
//    real ids) and short text pieces. A piece whose text is new gets its own vocabulary entry
//    that no merge produces, so encoding a prompt never yields it; such a piece used once in
//    the script is a "marker".
//  - The Gated DeltaNet layer is a register holding the latest marker seen: its key is
//    constant, beta is 1 on markers and 0 elsewhere, the decay is 1, so its memory is
//    overwritten by each marker's one-hot value and kept otherwise; the gated RMSNorm makes
//    the read-out independent of prompt length. Prompts contain no markers, so the register
//    starts empty for every request.
//  - The next token is a function of (current token, latest marker): after a marker it
//    depends on the marker alone (a linear head suffices); after any other token the MLP has
//    one unit per (token, latest marker) pair of the script that fires only when both match.
//    With no rule firing, a constant bias picks the script's first step, so any prompt
//    continues with the script.
//  - With an after-tool script (--script-after-tool), <tool_response> (a special token the Qwen
//    templates put around every tool result) is one more marker, written by the prompt: a
//    prompt holding a tool result leaves it in the register, and a head weight on its
//    read-out picks the after-tool script's first step over the constant one; its first
//    steps' rules are keyed on it. The two scripts share the vocabulary, so their pieces are
//    distinct and every marker is still used once. A client's tool round trip thus ends: the
//    first request calls a tool, the one carrying its result gets the second script.
//  - The MTP head (with ScriptModelOptions::mtp) applies the same rules one token later. Its row
//    pairs the main model's final hidden state at p with token p + 1: fc copies the token's
//    embedding coordinates as they are and the register's read-out of the hidden state into
//    coordinates of its own (with the hidden state's constant coordinate, which shares the
//    unknown scale of the normalised hidden state, so a rule unit compares the two: "marker
//    present" whatever the scale). Its decoder layer's attention is silent and its MLP holds the
//    rule units again, keyed on those coordinates (a wrong token vetoes a unit outright); the
//    final norm and the shared LM head then pick the successor, as the main model would one step
//    later. A marker in the hidden state's own token coordinate (the head's own output, for a
//    further draft) counts as the latest marker and silences the older ones.
// Limits: a script in which the same (token, latest marker) context needs two different
// continuations (e.g. a repeated identical tool call) is rejected with an error naming the
// position, and a prompt must not end with the script's own first token when that token is
// a special or a single vocabulary token (the script would then skip it).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "modelgen/model_options.h"

namespace qmlx::modelgen {

struct ScriptModelOptions {
  Arch template_arch = Arch::kQwen35;  // whose chat template the tokenizer config carries
  // The reply to any prompt that contains a tool result (<tool_response>); without it every
  // prompt gets the main script. Neither script may then contain <tool_response>.
  std::optional<std::string> script_after_tool;
  // Also write an MTP head (`mtp.*`) that predicts the token after next from the main model's
  // hidden state and the next token, by the same rules (speculative decoding's fixture).
  bool mtp = false;
  // Also write a vision tower (`model.visual.*`, the tiny random one of make-model --vision)
  // whose output rows are zero: an image reaches the model through every real path (decode,
  // encode, pads, M-RoPE, the cache) and leaves the script as it is.
  bool vision = false;
  // Stored tensor names to leave out (ModelOptions::omit_tensors).
  std::vector<std::string> omit_tensors;
};

// Writes the model folder (qwen3_5 architecture, Hugging Face layout, float32).
void write_script_model(const std::string& script, const ScriptModelOptions& options,
                        const std::string& out_dir);

// The script as text pieces and special tokens, in order (exposed for tests).
struct ScriptStep {
  std::string text;
  bool special = false;
};
std::vector<ScriptStep> split_script(const std::string& script);

}  // namespace qmlx::modelgen
