#include "tests/server/fake_runtime.h"

#include <chrono>
#include <thread>

#include "server/scheduling/runtime_loader.h"
#include "text/template/chat_prompt.h"

namespace qmlx::server::testing {
namespace {

const std::vector<std::string> kSpecials = {
    "<|im_end|>",   "<|im_start|>",  "<think>",          "</think>",      "<tool_call>",
    "</tool_call>", "<|endoftext|>", "<|vision_start|>", "<|image_pad|>", "<|vision_end|>"};

class ByteTokenizer : public Tokenizer {
 public:
  std::vector<int32_t> encode(std::string_view text, bool parse_special) const override {
    std::vector<int32_t> ids;
    size_t i = 0;
    while (i < text.size()) {
      bool matched = false;
      for (size_t s = 0; parse_special && s < kSpecials.size(); ++s) {
        if (text.substr(i, kSpecials[s].size()) == kSpecials[s]) {
          ids.push_back(256 + static_cast<int32_t>(s));
          i += kSpecials[s].size();
          matched = true;
          break;
        }
      }
      if (!matched) ids.push_back(static_cast<unsigned char>(text[i++]));
    }
    return ids;
  }
  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::string out;
    for (int32_t id : ids) {
      if (!(skip_special && is_special(id))) out += token_bytes(id);
    }
    return out;
  }
  std::optional<int32_t> token_id(std::string_view token) const override {
    for (size_t s = 0; s < kSpecials.size(); ++s) {
      if (kSpecials[s] == token) return 256 + static_cast<int32_t>(s);
    }
    if (token.size() == 1) return static_cast<unsigned char>(token[0]);
    return std::nullopt;
  }
  std::string token_text(int32_t id) const override { return token_bytes(id); }
  std::string token_bytes(int32_t id) const override {
    return id < 256 ? std::string(1, static_cast<char>(id)) : kSpecials[id - 256];
  }
  bool is_special(int32_t id) const override { return id >= 256; }
  int32_t vocab_size() const override { return 256 + static_cast<int32_t>(kSpecials.size()); }
};

class NullState : public StateSource, public StateSink {
 public:
  explicit NullState(int64_t* position, std::vector<float>* logits)
      : position_(position), logits_(logits) {}
  const StateLayout& layout() const override { return layout_; }
  int64_t position() const override { return *position_; }
  void read_kv_rows(int, int64_t, int64_t, uint8_t*, uint8_t*) const override {}
  void read_recurrent(int, float*, float*) const override {}
  std::span<const float> logits() const override { return *logits_; }
  void reset(int64_t position) override { *position_ = position; }
  void write_kv_rows(int, int64_t, int64_t, const uint8_t*, const uint8_t*) override {}
  void write_recurrent(int, const float*, const float*) override {}
  void set_logits(std::span<const float> logits) override {
    logits_->assign(logits.begin(), logits.end());
  }

 private:
  StateLayout layout_;
  int64_t* position_;
  std::vector<float>* logits_;
};

// Greedy continuation: if the history ends with script[0..k), the next token is script[k];
// after the whole script, <|im_end|>; otherwise the script starts over.
class ScriptSession : public InferenceSession {
 public:
  ScriptSession(std::vector<int32_t> script, int32_t vocab, const FakeModelOptions& options)
      : script_(std::move(script)),
        vocab_(vocab),
        options_(options),
        state_(&position_, &logits_) {}

  int64_t position() const override { return position_; }
  void reset() override {
    position_ = 0;
    history_.clear();
    logits_.clear();
  }
  void prefill(std::span<const int32_t> ids) override {
    if (ids.size() == 1 && options_.decode_delay_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.decode_delay_ms));
    } else if (options_.prefill_delay_ms_per_token > 0) {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(options_.prefill_delay_ms_per_token * ids.size()));
    }
    history_.insert(history_.end(), ids.begin(), ids.end());
    position_ += static_cast<int64_t>(ids.size());
    logits_.assign(vocab_, 0.f);
    logits_[next_token()] = 10.f;
  }
  std::span<const float> logits() const override { return logits_; }
  StateSource& state_source() override { return state_; }
  StateSink& state_sink() override { return state_; }

 private:
  int32_t next_token() const {
    for (size_t k = std::min(script_.size(), history_.size()); k > 0; --k) {
      if (std::equal(script_.begin(), script_.begin() + k, history_.end() - k)) {
        return k == script_.size() ? 256 : script_[k];
      }
    }
    return script_[0];
  }

  std::vector<int32_t> script_;
  int32_t vocab_;
  FakeModelOptions options_;
  int64_t position_ = 0;
  std::vector<int32_t> history_;
  std::vector<float> logits_;
  NullState state_;
};

// ChatML; no newline follows a block tag, so trim_blocks cannot change the output. With
// chat_template_kwargs {"enable_thinking": true} the reply starts inside <think>. Content with
// images (an array of parts) renders each image as Qwen3.5's template does.
const char kTemplate[] =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.content is string %}{{ m.content }}{% elif m.content %}{% for p in m.content %}"
    "{% if p.type == 'image' %}<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ p.text }}"
    "{% endif %}{% endfor %}{% endif %}"
    "{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{{ c.function | tojson }}"
    "</tool_call>{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}"
    "{% if tools %}<|im_start|>system\n{% for t in tools %}{{ t | tojson }}{% endfor %}"
    "<|im_end|>\n{% endif %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking %}<think>\n{% endif %}{% endif %}";

}  // namespace

std::shared_ptr<ModelRuntime> make_fake_runtime(const FakeModelOptions& options) {
  auto tokenizer = std::make_shared<const ByteTokenizer>();
  auto chat = std::make_shared<const ChatTemplate>(kTemplate, "fake");
  auto runtime = std::make_shared<ModelRuntime>();
  runtime->model_id = "fake-model";
  runtime->architecture = "fake";
  runtime->context_length = options.context_length;
  runtime->tokenizer = tokenizer;
  runtime->stop_token_ids = {256, 262};
  runtime->tool_call_format = options.tool_call_format;
  if (options.vision) {
    runtime->vision_unavailable.clear();
    runtime->image_pad_id = *tokenizer->token_id("<|image_pad|>");
  }
  runtime->render_chat = [chat, tokenizer](const nlohmann::ordered_json& messages,
                                           const nlohmann::ordered_json& tools, bool add_gp,
                                           const nlohmann::ordered_json& kwargs) {
    ChatPrompt p =
        render_chat_prompt(*chat, *tokenizer, messages,
                           tools.empty() ? nlohmann::ordered_json(nullptr) : tools, add_gp, kwargs);
    return RenderedPrompt{p.text,
                          p.ids,
                          static_cast<int64_t>(p.last_message_end),
                          static_cast<int64_t>(p.last_user_start),
                          std::vector<int64_t>(p.edit_points.begin(), p.edit_points.end()),
                          {}};
  };
  std::vector<int32_t> script = tokenizer->encode(options.script, true);
  int32_t vocab = tokenizer->vocab_size();
  runtime->new_session = [script, vocab, options] {
    return std::make_unique<ScriptSession>(script, vocab, options);
  };
  runtime->new_sampler = [vocab](const SamplingParams& params, uint64_t seed) {
    return make_engine_sampler(params, seed, vocab - 1);
  };
  return runtime;
}

void RecordingHooks::on_prompt_end(const PromptView&, const StateSource&) {
  std::lock_guard<std::mutex> lock(mutex);
  ++prompt_ends;
}

void RecordingHooks::on_generation_end(std::span<const int32_t>, const StateSource&,
                                       CanonicalHistory) {
  std::lock_guard<std::mutex> lock(mutex);
  ++generation_ends;
}

std::string RecordingHooks::on_interrupted(std::span<const int32_t> tokens,
                                           InferenceSession& session) {
  std::lock_guard<std::mutex> lock(mutex);
  interrupted.emplace_back(tokens.begin(), tokens.end());
  interrupted_session_positions.push_back(session.position());
  return {};
}

}  // namespace qmlx::server::testing
