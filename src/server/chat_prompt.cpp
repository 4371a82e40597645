// server/chat_prompt: messages -> template context -> prompt text.
#include "server/chat_prompt.h"

#include "base/error.h"

namespace bee::server {

namespace {

// Content parts ([{type: "text", text}]) become one string; other part types are not supported.
Json normalize_message(const Json& m, size_t i) {
    if (!m.is_object()) bad_request("messages[%zu] must be an object", i);
    if (!m.contains("role") || !m["role"].is_string()) bad_request("messages[%zu].role must be a string", i);
    Json out = m;
    auto c = m.find("content");
    if (c == m.end() || c->is_null()) {
        if (!m.contains("tool_calls")) bad_request("messages[%zu] has no 'content'", i);
        return out;
    }
    if (c->is_string()) return out;
    if (!c->is_array()) bad_request("messages[%zu].content must be a string or an array of parts", i);
    std::string text;
    for (const Json& part : *c) {
        auto type = part.is_object() ? part.find("type") : part.end();
        if (!part.is_object() || type == part.end() || !type->is_string() || *type != "text" ||
            !part.contains("text") || !part["text"].is_string())
            bad_request("messages[%zu].content: only text parts ({\"type\": \"text\", \"text\": ...}) are supported",
                        i);
        text += part["text"].get<std::string>();
    }
    out["content"] = text;
    return out;
}

}  // namespace

ChatPrompt render_chat_prompt(const ServerContext& ctx, const Json& body, bool allow_empty) {
    auto msgs = body.find("messages");
    if (msgs == body.end() || !msgs->is_array() || (msgs->empty() && !allow_empty))
        bad_request("'messages' must be a non-empty array");
    chat::ChatInput in;
    for (size_t i = 0; i < msgs->size(); i++) in.messages.push_back(normalize_message((*msgs)[i], i));
    if (body.contains("tools") && !body["tools"].is_null()) {
        if (!body["tools"].is_array()) bad_request("'tools' must be an array");
        in.tools = body["tools"];
    }
    in.kwargs = ctx.params.chat_template_kwargs;
    if (body.contains("chat_template_kwargs") && !body["chat_template_kwargs"].is_null()) {
        const Json& kw = body["chat_template_kwargs"];
        if (!kw.is_object()) bad_request("'chat_template_kwargs' must be an object");
        chat::merge_object(in.kwargs, kw);
    }
    if (in.kwargs.contains("enable_thinking") && !in.kwargs["enable_thinking"].is_boolean())
        bad_request("chat_template_kwargs.enable_thinking must be a JSON boolean");
    const Tokenizer& tok = ctx.tokenizer();
    if (tok.bos() >= 0) in.bos_token = tok.token_text(tok.bos());
    if (tok.eos() >= 0) in.eos_token = tok.token_text(tok.eos());
    in.add_generation_prompt = get_bool(body, "add_generation_prompt", true);
    // Assistant prefill: a last assistant message is continued rather than closed (after the assistant's
    // opening, whatever add_generation_prompt says); llama-server refuses two at the end.
    const size_t n = in.messages.size();
    if (n >= 2 && in.messages[n - 1].value("role", "") == "assistant" &&
        in.messages[n - 2].value("role", "") == "assistant")
        bad_request("Cannot have 2 or more assistant messages at the end of the list.");
    std::string prefill;
    if (n > 0 && in.messages.back().value("role", "") == "assistant" && in.messages.back()["content"].is_string()) {
        in.add_generation_prompt = true;
        prefill = in.messages.back()["content"].get<std::string>();
        in.messages.erase(in.messages.size() - 1);
    }
    ChatPrompt cp;
    try {
        cp.text = chat::apply(*ctx.tmpl, in) + prefill;
    } catch (const Error& e) {
        bad_request("chat template error: %s", e.what());
    }
    // The tokenizer adds BOS itself when the vocabulary asks for it; do not double it.
    if (tok.add_bos() && !in.bos_token.empty() && cp.text.rfind(in.bos_token, 0) == 0)
        cp.text.erase(0, in.bos_token.size());
    cp.format = ctx.params.reasoning_format;
    if (body.contains("reasoning_format") && !body["reasoning_format"].is_null()) {
        try {
            cp.format = parse_reasoning_format(get_string(body, "reasoning_format", ""), "reasoning_format");
        } catch (const Error& e) {
            bad_request("%s", e.what());
        }
    }
    const bool thinks = ctx.tmpl_source.find("<think>") != std::string::npos;
    cp.reasoning = cp.format != ReasoningFormat::none && thinks;
    size_t end = cp.text.find_last_not_of(" \t\r\n");
    const std::string trimmed = end == std::string::npos ? "" : cp.text.substr(0, end + 1);
    cp.starts_in_reasoning = cp.reasoning && prefill.empty() && trimmed.size() >= 7 &&
                             trimmed.compare(trimmed.size() - 7, 7, "<think>") == 0;
    return cp;
}

ReasoningFormat parse_reasoning_format(const std::string& text, const char* where) {
    if (text == "none") return ReasoningFormat::none;
    if (text == "auto") return ReasoningFormat::auto_;
    if (text == "deepseek") return ReasoningFormat::deepseek;
    if (text == "deepseek-legacy") return ReasoningFormat::deepseek_legacy;
    fail("invalid value '%s' for %s: expected none, auto, deepseek or deepseek-legacy", text.c_str(), where);
}

}  // namespace bee::server
