// chat/builtin_templates: named chat templates for models whose GGUF carries none
// (`--chat-template NAME`): chatml and gemma.
#pragma once
#include <string>
#include <string_view>

namespace bee::chat {

// The Jinja source of a built-in template, or nullptr if `name` is not one.
const char* builtin_template(std::string_view name);
// "chatml, gemma": for error messages.
const char* builtin_template_names();

// The chat template every front end (`bee serve`, `bee chat`) uses, from its flags: the contents of
// --chat-template-file FILE if given, else --chat-template as a built-in name or as Jinja source, else
// `model_template` (the GGUF's tokenizer.chat_template; may be empty: the caller decides). Throws Error
// for a --chat-template that is neither a built-in name nor Jinja, or an unreadable file.
std::string select_template(const std::string& file, const std::string& name_or_source,
                            const std::string& model_template);

}  // namespace bee::chat
