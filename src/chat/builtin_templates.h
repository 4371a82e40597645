// chat/builtin_templates: named chat templates for models whose GGUF carries none
// (`--chat-template NAME`): chatml and gemma.
#pragma once
#include <string_view>

namespace bee::chat {

// The Jinja source of a built-in template, or nullptr if `name` is not one.
const char* builtin_template(std::string_view name);
// "chatml, gemma": for error messages.
const char* builtin_template_names();

}  // namespace bee::chat
