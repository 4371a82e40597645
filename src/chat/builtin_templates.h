// chat/builtin_templates: llama.cpp's named chat formats (`--chat-template llama3`, `gemma`, `mistral-v7`,
// ...; the formatters are in builtin_formats_*.cpp), and the choice of template from the command line.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/builtin_formats.h"

namespace bee::chat {

// The built-in format called `name`, or nullptr if `name` is not one.
const builtin::Format* find_builtin(std::string_view name);
// Every built-in name, sorted.
std::vector<std::string> builtin_template_names();
// The same joined with ", ": for error messages and help.
std::string builtin_template_list();

// The prompt for `messages` (OpenAI messages: role, content as a string, null, or text parts joined with
// "\n" as llama.cpp does; other message fields are ignored) in the built-in format `format`. Throws
// bee::Error for a message that is not an object or has no string role.
std::string render_builtin(const builtin::Format& format, const nlohmann::ordered_json& messages,
                           bool add_generation_prompt);

// The chat template every front end (`bee serve`, `bee chat`) uses, from its flags: the contents of
// --chat-template-file FILE if given, else --chat-template (a built-in name, returned as is, or Jinja
// source), else `model_template` (the GGUF's tokenizer.chat_template; may be empty: the caller decides).
// Template::load takes the result. Throws Error for a --chat-template that is neither a built-in name nor
// Jinja (the message lists the names: a misspelt name would otherwise render as itself), unless
// `literal_ok` (llama-server with --jinja takes any such text as a template without tags: constant text,
// with a warning); or for an unreadable file.
std::string select_template(const std::string& file, const std::string& name_or_source,
                            const std::string& model_template, bool literal_ok = false);

}  // namespace bee::chat
