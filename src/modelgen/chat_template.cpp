#include "modelgen/chat_template.h"

namespace qmlx::modelgen {

// Defined in the build folder's embedded_chat_templates.cpp; nullptr when the file was absent.
namespace embedded {
extern const char* const qwen3_5;
extern const char* const qwen3_next;
extern const char* const qwen3;
}  // namespace embedded

namespace {

constexpr const char* kChatMlFallback =
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

const char* embedded_text(Arch arch) {
  switch (arch) {
    case Arch::kQwen35Moe:
    case Arch::kQwen35:
      return embedded::qwen3_5;
    case Arch::kQwen3Next:
      return embedded::qwen3_next;
    case Arch::kQwen3:
      return embedded::qwen3;
  }
  return nullptr;
}

}  // namespace

const char* template_name(Arch arch) {
  return is_qwen35_family(arch) ? "qwen3_5" : arch_name(arch);
}

std::string chat_template_for(Arch arch) {
  const char* text = embedded_text(arch);
  return text ? text : kChatMlFallback;
}

bool chat_template_is_fallback(Arch arch) { return embedded_text(arch) == nullptr; }

}  // namespace qmlx::modelgen
