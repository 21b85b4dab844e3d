#include "modelgen/script_model.h"

#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "base/error.h"
#include "modelgen/byte_level.h"
#include "modelgen/chat_template.h"
#include "modelgen/logical_model.h"
#include "modelgen/model_writer.h"
#include "modelgen/random_weights.h"
#include "modelgen/tokenizer_files.h"

namespace qmlx::modelgen {

namespace {

constexpr size_t kPieceBytes = 4;  // target piece length; streaming sees several deltas
constexpr float kRmsEps = 1e-6f;
constexpr int kKeyDim = 16;
constexpr int kValueDim = 16;
constexpr int kAttentionHeadDim = 16;
constexpr float kGateGain = 4.0f;  // MLP rule units: how sharply a match switches a unit on
constexpr float kZ = 4.0f;         // gated-norm gate input: silu(kZ) scales the read-out
constexpr float kMarkerLogit = 10.0f;
constexpr float kRuleLogit = 1.0f;
constexpr float kDefaultLogit = 1.0f;
// The after-tool script's first token, read from the register holding <tool_response>: above
// kDefaultLogit (script A's first token, always present) and far below a firing rule unit.
constexpr float kAfterToolLogit = 2.0f * kDefaultLogit;
constexpr const char* kToolResponse = "<tool_response>";

size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xe) return 3;
  if ((lead >> 3) == 0x1e) return 4;
  return 1;
}

// Where the UTF-8 character starting at `at` ends.
size_t next_char_end(const std::string& text, size_t at) {
  return std::min(text.size(), at + utf8_length(static_cast<unsigned char>(text[at])));
}

// Cuts a text run into pieces, extending a piece until its text is new where possible.
void split_text_run(const std::string& run, const Vocabulary& base, std::set<std::string>& used,
                    std::vector<ScriptStep>& out) {
  const auto is_new = [&](const std::string& piece) {
    const std::string byte_level = to_byte_level(piece);
    return !used.count(byte_level) && !base.plain_id(byte_level);
  };
  const size_t first_piece = out.size();
  for (size_t begin = 0; begin < run.size();) {
    size_t end = begin;
    while (end < run.size() && end - begin < kPieceBytes) end = next_char_end(run, end);
    while (end < run.size() && !is_new(run.substr(begin, end - begin))) {
      end = next_char_end(run, end);
    }
    std::string piece = run.substr(begin, end - begin);
    // A used-up tail joins the previous piece of this run if that keeps it new.
    if (!is_new(piece) && out.size() > first_piece && is_new(out.back().text + piece)) {
      used.erase(to_byte_level(out.back().text));
      out.back().text += piece;
      piece = out.back().text;
    } else {
      out.push_back({piece, false});
    }
    used.insert(to_byte_level(piece));
    begin = end;
  }
}

struct SpecialMatch {
  size_t position = std::string::npos;
  std::string token;
};

SpecialMatch find_next_special(const std::string& script, size_t from) {
  SpecialMatch best;
  for (const auto& token : qwen_special_tokens()) {
    const size_t at = script.find(token, from);
    if (at < best.position) best = {at, token};
  }
  return best;
}

// `used` holds the pieces earlier scripts of the same model took, so every piece stays new.
std::vector<ScriptStep> split_script_with(const std::string& script, const Vocabulary& base,
                                          std::set<std::string>& used) {
  std::vector<ScriptStep> steps;
  for (size_t at = 0; at < script.size();) {
    const SpecialMatch special = find_next_special(script, at);
    const size_t run_end = std::min(special.position, script.size());
    if (run_end > at) split_text_run(script.substr(at, run_end - at), base, used, steps);
    if (special.position == std::string::npos) break;
    steps.push_back({special.token, true});
    at = special.position + special.token.size();
  }
  return steps;
}

// One script as token ids: its steps, then <|im_end|>. `start_marker` is what the register
// holds when the script starts: -1 (nothing; prompts without a tool result) or the
// <tool_response> token (the after-tool script).
struct ScriptSequence {
  std::vector<ScriptStep> steps;
  std::vector<int> ids;
  int start_marker = -1;
};

// The model's scripts with their token ids, and which tokens are markers: new pieces used once
// across all scripts, plus <tool_response> when there is an after-tool script.
struct ScriptTokens {
  std::vector<ScriptSequence> sequences;
  std::set<int> markers;
  int tool_response = -1;  // the prompt-side marker, or -1 without an after-tool script
};

ScriptTokens assign_ids(std::vector<ScriptSequence> sequences, Vocabulary& vocabulary) {
  const int base_count = vocabulary.plain_count();
  for (auto& sequence : sequences) {
    for (const auto& step : sequence.steps) {
      if (step.special) continue;
      const std::string byte_level = to_byte_level(step.text);
      if (!vocabulary.plain_id(byte_level)) vocabulary.add_plain_token(byte_level);
    }
  }
  // Specials get their ids only now that every plain token exists.
  std::map<int, int> uses;
  for (auto& sequence : sequences) {
    for (const auto& step : sequence.steps) {
      const int id = step.special ? vocabulary.special_id(step.text)
                                  : *vocabulary.plain_id(to_byte_level(step.text));
      sequence.ids.push_back(id);
      ++uses[id];
    }
    sequence.ids.push_back(vocabulary.special_id("<|im_end|>"));
  }
  ScriptTokens tokens;
  for (const auto& [id, count] : uses) {
    if (count == 1 && id >= base_count && id < vocabulary.plain_count()) tokens.markers.insert(id);
  }
  if (sequences.size() > 1) {
    tokens.tool_response = vocabulary.special_id(kToolResponse);
    tokens.markers.insert(tokens.tool_response);
    sequences[1].start_marker = tokens.tool_response;
  }
  tokens.sequences = std::move(sequences);
  return tokens;
}

// What decides step i's successor: the token alone (a marker) or (token, latest marker).
struct Rule {
  int token;
  int latest_marker;  // -1: none seen yet (only for the first steps)
  bool operator<(const Rule& o) const {
    return std::tie(token, latest_marker) < std::tie(o.token, o.latest_marker);
  }
};

struct ScriptPlan {
  std::map<int, int> marker_successor;  // marker token -> next token
  std::map<Rule, int> rule_successor;   // non-marker (token, latest marker) -> next token
  std::map<int, int> first_token;       // start marker (-1: none) -> the script's first token
};

ScriptPlan plan_script(const ScriptTokens& tokens) {
  ScriptPlan plan;
  for (const auto& sequence : tokens.sequences) {
    const auto& ids = sequence.ids;
    plan.first_token[sequence.start_marker] = ids.front();
    int latest = sequence.start_marker;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      const int token = ids[i], next = ids[i + 1];
      if (tokens.markers.count(token)) {
        latest = token;
        plan.marker_successor[token] = next;
        continue;
      }
      const auto [it, inserted] = plan.rule_successor.emplace(Rule{token, latest}, next);
      if (!inserted && it->second != next) {
        throw Error("script step " + std::to_string(i) + " (\"" + sequence.steps[i].text +
                    "\"): the same context continues two different ways; make repeated text "
                    "(e.g. identical tool calls) differ");
      }
    }
  }
  return plan;
}

// Hidden-state coordinates of the construction.
struct Dims {
  int constant = 0;
  int other = 1;              // tokens the script does not use
  std::map<int, int> token;   // A: one per distinct script token
  std::map<int, int> marker;  // B: the register's read-out, one per marker
  std::map<Rule, int> rule;   // R: one per MLP rule unit
  // The MTP head's own coordinates (ScriptModelOptions::mtp): the hidden state's constant and
  // its latest marker, both at the hidden state's scale.
  int mtp_constant = -1;
  std::map<int, int> mtp_marker;
  int hidden = 0;
  std::map<int, int> marker_channel;  // marker -> value channel of the register
  std::map<Rule, int> rule_unit;      // rule -> MLP unit
};

Dims lay_out_dims(const ScriptTokens& tokens, const ScriptPlan& plan, bool mtp) {
  Dims d;
  int next = 2;
  for (const auto& sequence : tokens.sequences) {
    for (size_t i = 0; i + 1 < sequence.ids.size(); ++i) {
      if (!d.token.count(sequence.ids[i])) d.token[sequence.ids[i]] = next++;
    }
  }
  if (tokens.tool_response >= 0) d.token[tokens.tool_response] = next++;
  int channel = 0;
  for (int marker : tokens.markers) {
    d.marker[marker] = next++;
    d.marker_channel[marker] = channel++;
  }
  int unit = 0;
  for (const auto& [rule, successor] : plan.rule_successor) {
    d.rule[rule] = next++;
    d.rule_unit[rule] = unit++;
  }
  if (mtp) {
    d.mtp_constant = next++;
    for (int marker : tokens.markers) d.mtp_marker[marker] = next++;
  }
  d.hidden = (next + 63) / 64 * 64;
  return d;
}

using Matrix = std::vector<float>;

class ScriptWeights {
 public:
  ScriptWeights(const ScriptTokens& tokens, const ScriptPlan& plan, const Dims& dims,
                const ModelShape& shape)
      : tokens_(tokens), plan_(plan), d_(dims), s_(shape) {}

  LogicalModel build() {
    const int H = d_.hidden;
    add("embed_tokens.weight", {s_.vocab, H}, embeddings());
    add("norm.weight", {H}, Matrix(H, 1.0f));
    add("lm_head.weight", {s_.vocab, H}, head());
    add_register_layer();
    add_silent_attention_layer(layer_name(1, ""));
    if (d_.mtp_constant >= 0) add_mtp_head();
    return std::move(model_);
  }

 private:
  void add(const std::string& name, std::vector<int64_t> shape, Matrix values) {
    model_.add(name, std::move(shape), [values = std::move(values)] { return values; });
  }

  // Every embedding has norm sqrt(2): the constant plus one token coordinate.
  Matrix embeddings() const {
    const int H = d_.hidden;
    Matrix e(int64_t{s_.vocab} * H, 0.0f);
    for (int id = 0; id < s_.vocab; ++id) {
      e[int64_t{id} * H + d_.constant] = 1.0f;
      const auto it = d_.token.find(id);
      e[int64_t{id} * H + (it == d_.token.end() ? d_.other : it->second)] = 1.0f;
    }
    return e;
  }

  Matrix head() const {
    const int H = d_.hidden;
    Matrix w(int64_t{s_.vocab} * H, 0.0f);
    for (const auto& [start, first] : plan_.first_token) {
      if (start < 0) {
        w[int64_t{first} * H + d_.constant] = kDefaultLogit;
      } else {
        w[int64_t{first} * H + d_.marker.at(start)] = kAfterToolLogit;
      }
    }
    for (const auto& [marker, next] : plan_.marker_successor) {
      w[int64_t{next} * H + d_.token.at(marker)] += kMarkerLogit;
    }
    for (const auto& [rule, next] : plan_.rule_successor) {
      w[int64_t{next} * H + d_.rule.at(rule)] += kRuleLogit;
    }
    return w;
  }

  void add_register_layer() {
    const int H = d_.hidden;
    const int Hv = s_.linear_value_heads;
    const int value_dim = Hv * kValueDim, conv_dim = 2 * kKeyDim + value_dim;
    // RMSNorm of an embedding multiplies it by this (every embedding has norm sqrt(2)).
    const float input_scale = 1.0f / std::sqrt(2.0f / H + kRmsEps);
    const auto L = [](const std::string& s) { return layer_name(0, s); };
    add(L("input_layernorm.weight"), {H}, Matrix(H, 1.0f));
    add(L("post_attention_layernorm.weight"), {H}, Matrix(H, 1.0f));

    Matrix qkv(int64_t{conv_dim} * H, 0.0f);
    qkv[0 * H + d_.constant] = 1.0f;        // q: a constant direction
    qkv[kKeyDim * H + d_.constant] = 1.0f;  // k: the same constant direction
    for (const auto& [marker, channel] : d_.marker_channel) {
      qkv[int64_t{2 * kKeyDim + channel} * H + d_.token.at(marker)] = 1.0f;  // v: one-hot
    }
    add(L("linear_attn.in_proj_qkv.weight"), {conv_dim, H}, qkv);
    Matrix z(int64_t{value_dim} * H, 0.0f);
    for (int c = 0; c < value_dim; ++c) z[int64_t{c} * H + d_.constant] = kZ / input_scale;
    add(L("linear_attn.in_proj_z.weight"), {value_dim, H}, z);
    // beta = sigmoid(+-30): write on markers, keep everywhere else.
    Matrix b(int64_t{Hv} * H, 0.0f);
    for (int h = 0; h < Hv; ++h) {
      b[int64_t{h} * H + d_.constant] = -30.0f / input_scale;
      for (const auto& [marker, channel] : d_.marker_channel) {
        b[int64_t{h} * H + d_.token.at(marker)] = 60.0f / input_scale;
      }
    }
    add(L("linear_attn.in_proj_b.weight"), {Hv, H}, b);
    add(L("linear_attn.in_proj_a.weight"), {Hv, H}, Matrix(int64_t{Hv} * H, 0.0f));
    Matrix conv(int64_t{conv_dim} * s_.conv_kernel, 0.0f);
    for (int c = 0; c < conv_dim; ++c) conv[int64_t{c} * s_.conv_kernel + s_.conv_kernel - 1] = 1;
    add(L("linear_attn.conv1d.weight"), {conv_dim, s_.conv_kernel}, conv);
    add(L("linear_attn.A_log"), {Hv}, Matrix(Hv, -30.0f));  // decay exp(-tiny) == 1
    add(L("linear_attn.dt_bias"), {Hv}, Matrix(Hv, 0.0f));
    add(L("linear_attn.norm.weight"), {kValueDim}, Matrix(kValueDim, 1.0f));
    // The gated norm turns a one-hot head into sqrt(Dv) * silu(kZ); map that to 1.
    const float read_out = 1.0f / (std::sqrt(float(kValueDim)) * (kZ / (1.0f + std::exp(-kZ))));
    Matrix out(int64_t{H} * value_dim, 0.0f);
    for (const auto& [marker, channel] : d_.marker_channel) {
      out[int64_t{d_.marker.at(marker)} * value_dim + channel] = read_out;
    }
    add(L("linear_attn.out_proj.weight"), {H, value_dim}, out);
    add_rule_mlp();
  }

  // Unit for (token, marker) fires iff both are present: gate ∝ A + B - 1.5; a rule with no
  // marker yet fires iff the token is present and no marker is: gate ∝ A - ΣB - 0.5.
  void add_rule_mlp() {
    const int H = d_.hidden, I = s_.intermediate;
    Matrix gate(int64_t{I} * H, 0.0f), up(int64_t{I} * H, 0.0f), down(int64_t{H} * I, 0.0f);
    for (const auto& [rule, unit] : d_.rule_unit) {
      float* g = &gate[int64_t{unit} * H];
      g[d_.token.at(rule.token)] = kGateGain;
      if (rule.latest_marker >= 0) {
        g[d_.marker.at(rule.latest_marker)] = kGateGain;
        g[d_.constant] = -1.5f * kGateGain;
      } else {
        for (const auto& [marker, dim] : d_.marker) g[dim] = -kGateGain;
        g[d_.constant] = -0.5f * kGateGain;
      }
      up[int64_t{unit} * H + d_.constant] = 1.0f;
      down[int64_t{d_.rule.at(rule)} * I + unit] = 1.0f;
    }
    add(layer_name(0, "mlp.gate_proj.weight"), {I, H}, gate);
    add(layer_name(0, "mlp.up_proj.weight"), {I, H}, up);
    add(layer_name(0, "mlp.down_proj.weight"), {H, I}, down);
  }

  // A real full-attention layer whose outputs are zero (so the model has both layer kinds), its
  // MLP silent too unless the caller adds one; `prefix` names the layer.
  void add_silent_attention_layer(const std::string& prefix, bool with_mlp = true) {
    const int H = d_.hidden, D = kAttentionHeadDim, I = s_.intermediate;
    const auto L = [&prefix](const std::string& s) { return prefix + s; };
    add(L("input_layernorm.weight"), {H}, Matrix(H, 1.0f));
    add(L("post_attention_layernorm.weight"), {H}, Matrix(H, 1.0f));
    add(L("self_attn.q_proj.weight"), {2 * D, H}, Matrix(int64_t{2 * D} * H, 0.0f));
    add(L("self_attn.k_proj.weight"), {D, H}, Matrix(int64_t{D} * H, 0.0f));
    add(L("self_attn.v_proj.weight"), {D, H}, Matrix(int64_t{D} * H, 0.0f));
    add(L("self_attn.o_proj.weight"), {H, D}, Matrix(int64_t{H} * D, 0.0f));
    add(L("self_attn.q_norm.weight"), {D}, Matrix(D, 1.0f));
    add(L("self_attn.k_norm.weight"), {D}, Matrix(D, 1.0f));
    if (!with_mlp) return;
    add(L("mlp.gate_proj.weight"), {I, H}, Matrix(int64_t{I} * H, 0.0f));
    add(L("mlp.up_proj.weight"), {I, H}, Matrix(int64_t{I} * H, 0.0f));
    add(L("mlp.down_proj.weight"), {H, I}, Matrix(int64_t{H} * I, 0.0f));
  }

  // The MTP head (script_model.h). Values are relative to the embedding coordinates (1): `scale`
  // lifts the normalised hidden state's coordinates, `new_marker` lets a marker in its token
  // coordinate outweigh an older one, `veto` keeps a unit off whose token is absent.
  void add_mtp_head() {
    const int H = d_.hidden, I = s_.intermediate;
    const float scale = 8.0f, new_marker = 4.0f * scale * std::sqrt(float(H));
    const float veto = 1e6f, gain = 4.0f;
    // RMSNorm of an embedding (norm sqrt(2)) multiplies it by 1 / embedding_scale.
    const float embedding_scale = std::sqrt(2.0f / H + kRmsEps);
    Matrix fc(int64_t{H} * 2 * H, 0.0f);
    auto fc_at = [&](int out, int in) -> float& { return fc[int64_t{out} * 2 * H + in]; };
    for (int c = 0; c < H; ++c) fc_at(c, c) = embedding_scale;  // the token, as embedded
    fc_at(d_.mtp_constant, H + d_.constant) = scale;
    fc_at(d_.mtp_constant, H + d_.mtp_constant) = scale;
    for (const auto& [marker, dim] : d_.mtp_marker) {
      fc_at(dim, H + d_.marker.at(marker)) = scale;
      fc_at(dim, H + dim) = scale;
      fc_at(dim, H + d_.token.at(marker)) = new_marker;
    }
    add("mtp.fc.weight", {H, 2 * H}, fc);
    for (const char* n : {"pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"})
      add(std::string("mtp.") + n + ".weight", {H}, Matrix(H, 1.0f));
    add_silent_attention_layer("mtp.layers.0.", /*with_mlp=*/false);

    // Unit (token, marker) fires iff the token is there and the marker outweighs half the
    // constant and every other marker; (token, none) iff the token is there and no marker is.
    Matrix gate(int64_t{I} * H, 0.0f), up(int64_t{I} * H, 0.0f), down(int64_t{H} * I, 0.0f);
    for (const auto& [rule, unit] : d_.rule_unit) {
      float* g = &gate[int64_t{unit} * H];
      g[d_.token.at(rule.token)] = gain * veto;
      g[d_.constant] = -gain * veto;
      for (const auto& [marker, dim] : d_.mtp_marker)
        g[dim] = rule.latest_marker < 0 || marker != rule.latest_marker ? -gain : gain;
      g[d_.mtp_constant] = (rule.latest_marker < 0 ? 0.5f : -0.5f) * gain;
      up[int64_t{unit} * H + d_.constant] = 1.0f;
      up[int64_t{unit} * H + d_.mtp_constant] = 1.0f;
      down[int64_t{d_.rule.at(rule)} * I + unit] = 1.0f;
    }
    add("mtp.layers.0.mlp.gate_proj.weight", {I, H}, gate);
    add("mtp.layers.0.mlp.up_proj.weight", {I, H}, up);
    add("mtp.layers.0.mlp.down_proj.weight", {H, I}, down);
  }

  const ScriptTokens& tokens_;
  const ScriptPlan& plan_;
  const Dims& d_;
  const ModelShape& s_;
  LogicalModel model_;
};

ModelShape script_shape(const Dims& dims, const ScriptTokens& tokens, const ScriptPlan& plan,
                        int vocab_size) {
  ModelShape s = default_shape(Arch::kQwen35);
  s.hidden = dims.hidden;
  s.layers = 2;
  s.full_attention_layers = {false, true};
  s.full_attention_interval = 2;
  s.heads = 1;
  s.kv_heads = 1;
  s.head_dim = kAttentionHeadDim;
  s.linear_key_heads = 1;
  s.linear_key_dim = kKeyDim;
  s.linear_value_dim = kValueDim;
  s.linear_value_heads = std::max<int>(1, (tokens.markers.size() + kValueDim - 1) / kValueDim);
  s.intermediate = std::max<int>(64, (plan.rule_successor.size() + 63) / 64 * 64);
  s.vocab = (vocab_size + 63) / 64 * 64;
  s.tie = false;
  return s;
}

// The random tower of a model of this shape, its last projection zeroed (ScriptModelOptions).
void add_silent_vision_tower(const ModelShape& shape, int used_vocab, LogicalModel& weights) {
  const LogicalModel random = random_logical_model(Arch::kQwen35, shape, /*seed=*/1, used_vocab);
  for (const auto& [name, tensor] : random.tensors()) {
    if (name.rfind("visual.", 0) != 0) continue;
    const bool silenced = name.rfind("visual.merger.linear_fc2.", 0) == 0;
    const int64_t count = tensor.element_count();
    weights.add(name, tensor.shape,
                silenced ? std::function<std::vector<float>()>(
                               [count] { return std::vector<float>(size_t(count), 0.0f); })
                         : tensor.values);
  }
}

}  // namespace

std::vector<ScriptStep> split_script(const std::string& script) {
  std::set<std::string> used;
  return split_script_with(script, Vocabulary::demo(), used);
}

void write_script_model(const std::string& script, const ScriptModelOptions& options,
                        const std::string& out_dir) {
  if (script.empty()) throw Error("the --script file is empty");
  Vocabulary vocabulary = Vocabulary::demo();
  std::set<std::string> used;
  std::vector<ScriptSequence> sequences(1);
  sequences[0].steps = split_script_with(script, vocabulary, used);
  if (options.script_after_tool) {
    if (options.script_after_tool->empty()) throw Error("the --script-after-tool file is empty");
    for (const std::string* text : {&script, &*options.script_after_tool}) {
      if (text->find(kToolResponse) != std::string::npos) {
        throw Error(std::string("with --script-after-tool, no script may contain ") +
                    kToolResponse + ": it is what selects the after-tool script");
      }
    }
    sequences.emplace_back().steps =
        split_script_with(*options.script_after_tool, vocabulary, used);
  }
  const ScriptTokens tokens = assign_ids(std::move(sequences), vocabulary);
  const ScriptPlan plan = plan_script(tokens);
  const Dims dims = lay_out_dims(tokens, plan, options.mtp);

  ModelOptions model;
  model.arch = Arch::kQwen35;
  model.layout = Layout::kHF;
  model.dtype = TensorDType::kF32;
  model.shape = script_shape(dims, tokens, plan, vocabulary.size());
  model.shape.mtp = options.mtp;
  model.shape.vision = options.vision;
  model.omit_tensors = options.omit_tensors;
  LogicalModel weights = ScriptWeights(tokens, plan, dims, model.shape).build();
  if (options.vision) add_silent_vision_tower(model.shape, vocabulary.size(), weights);
  write_model_folder(model, weights, vocabulary, chat_template_for(options.template_arch), out_dir);
}

}  // namespace qmlx::modelgen
