// chat/builtin_templates: the table of built-in formats by name, OpenAI messages turned into their
// (role, content) turns, and the template choice from --chat-template / --chat-template-file.
#include "chat/builtin_templates.h"

#include <algorithm>

#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"

namespace bee::chat {

const builtin::Format* find_builtin(std::string_view name) {
    for (auto group : {builtin::inst_formats(), builtin::tagged_formats(), builtin::prose_formats()})
        for (const builtin::Format& f : group)
            if (name == f.name) return &f;
    return nullptr;
}

std::vector<std::string> builtin_template_names() {
    std::vector<std::string> names;
    for (auto group : {builtin::inst_formats(), builtin::tagged_formats(), builtin::prose_formats()})
        for (const builtin::Format& f : group) names.emplace_back(f.name);
    std::sort(names.begin(), names.end());
    return names;
}

std::string builtin_template_list() {
    std::string list;
    for (const std::string& name : builtin_template_names()) list += (list.empty() ? "" : ", ") + name;
    return list;
}

namespace {

// A message's text as llama.cpp's string-only path has it: a string as is, null or missing as "", text
// parts joined with "\n" (other part types are skipped).
std::string message_text(const nlohmann::ordered_json& m, size_t i) {
    auto c = m.find("content");
    if (c == m.end() || c->is_null()) return "";
    if (c->is_string()) return c->get<std::string>();
    if (!c->is_array()) fail("messages[%zu].content must be a string, null or an array of parts", i);
    std::string text;
    for (const auto& part : *c) {
        if (!part.is_object() || part.value("type", "") != "text") continue;
        auto t = part.find("text");
        if (t == part.end() || !t->is_string()) fail("messages[%zu].content: a text part needs a string 'text'", i);
        if (!text.empty()) text += '\n';
        text += t->get<std::string>();
    }
    return text;
}

}  // namespace

std::string render_builtin(const builtin::Format& format, const nlohmann::ordered_json& messages,
                           bool add_generation_prompt) {
    if (!messages.is_array()) fail("chat template '%s': 'messages' must be an array", format.name);
    builtin::Turns turns;
    turns.reserve(messages.size());
    for (size_t i = 0; i < messages.size(); i++) {
        const auto& m = messages[i];
        if (!m.is_object()) fail("messages[%zu] must be an object", i);
        auto role = m.find("role");
        if (role == m.end() || !role->is_string()) fail("messages[%zu].role must be a string", i);
        turns.push_back({role->get<std::string>(), message_text(m, i)});
    }
    std::string out;
    format.write(turns, add_generation_prompt, out);
    return out;
}

std::string select_template(const std::string& file, const std::string& name_or_source,
                            const std::string& model_template, bool literal_ok) {
    if (!file.empty()) return read_file(file);
    if (name_or_source.empty()) return model_template;
    if (find_builtin(name_or_source)) return name_or_source;
    const bool tags = name_or_source.find("{%") != std::string::npos || name_or_source.find("{{") != std::string::npos;
    if (!tags && literal_ok)
        BEE_LOG_WARN(
            "--chat-template '%s' is not a built-in name (%s): used as a Jinja template without tags, so "
            "every prompt is that text",
            name_or_source.c_str(), builtin_template_list().c_str());
    else if (!tags)
        fail(
            "--chat-template '%s' is neither a built-in template name nor Jinja source: give one of %s, Jinja "
            "source, or --chat-template-file FILE (with --jinja, as llama-server, any text is taken as a template)",
            name_or_source.c_str(), builtin_template_list().c_str());
    return name_or_source;
}

}  // namespace bee::chat
