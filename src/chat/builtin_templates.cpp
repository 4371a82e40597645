// chat/builtin_templates: the ChatML and Gemma turn formats, written as Jinja for the interpreter.
#include "chat/builtin_templates.h"

#include "base/error.h"
#include "base/mapped_file.h"

namespace bee::chat {

namespace {

// ChatML (<|im_start|>role\n...<|im_end|>), as used by SmolLM2, Qwen and many fine-tunes.
constexpr const char* kChatml =
    "{%- for message in messages -%}\n"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";

// Gemma turns (<start_of_turn>user|model); a system message is prefixed to the first user turn.
constexpr const char* kGemma =
    "{{- bos_token -}}\n"
    "{%- set ns = namespace(prefix='') -%}\n"
    "{%- for message in messages -%}\n"
    "{%- if message.role == 'system' -%}{%- set ns.prefix = message.content + '\\n\\n' -%}\n"
    "{%- else -%}\n"
    "{{- '<start_of_turn>' + ('model' if message.role == 'assistant' else message.role) + '\\n' + ns.prefix"
    " + message.content | trim + '<end_of_turn>\\n' -}}{%- set ns.prefix = '' -%}\n"
    "{%- endif -%}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}{{- '<start_of_turn>model\\n' -}}{%- endif -%}";

}  // namespace

const char* builtin_template(std::string_view name) {
    if (name == "chatml") return kChatml;
    if (name == "gemma") return kGemma;
    return nullptr;
}

const char* builtin_template_names() { return "chatml, gemma"; }

std::string select_template(const std::string& file, const std::string& name_or_source,
                            const std::string& model_template) {
    if (!file.empty()) return read_file(file);
    if (name_or_source.empty()) return model_template;
    if (const char* builtin = builtin_template(name_or_source)) return builtin;
    if (name_or_source.find("{%") == std::string::npos && name_or_source.find("{{") == std::string::npos)
        fail("--chat-template '%s': give Jinja source, a built-in name (%s), or --chat-template-file",
             name_or_source.c_str(), builtin_template_names());
    return name_or_source;
}

}  // namespace bee::chat
