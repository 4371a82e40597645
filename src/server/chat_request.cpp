// server/chat_request: tool mode, forced-call grammar, prompt and generation parameters of a chat body.
#include "server/chat_request.h"

#include "base/error.h"
#include "sample/json_schema.h"

namespace bee::server {

namespace {

ToolMode tool_mode(const ServerContext& ctx, const Json& body) {
    ToolMode m;
    const bool has_tools = body.contains("tools") && body["tools"].is_array() && !body["tools"].empty();
    std::string choice = "auto";
    if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
        const Json& tc = body["tool_choice"];
        if (tc.is_string()) choice = tc.get<std::string>();
        else if (!tc.is_object()) bad_request("'tool_choice' must be \"none\", \"auto\", \"required\" or an object");
        if (tc.is_string() && choice != "none" && choice != "auto" && choice != "required")
            bad_request("invalid tool_choice '%s': expected none, auto or required", choice.c_str());
        if (tc.is_object()) {
            const Json* fn = tc.contains("function") && tc["function"].is_object() ? &tc["function"] : nullptr;
            if (!fn || !fn->contains("name") || !(*fn)["name"].is_string())
                bad_request("'tool_choice' object must be {\"type\": \"function\", \"function\": {\"name\": \"...\"}}");
            m.only = (*fn)["name"].get<std::string>();
            choice = "required";
        }
        if (choice == "required" && !has_tools)
            bad_request("tool_choice '%s' needs a non-empty 'tools' list", choice.c_str());
        m.force = choice == "required";
    }
    m.parse = has_tools && choice != "none" && get_bool(body, "parse_tool_calls", true);
    m.parallel = get_bool(body, "parallel_tool_calls", true);
    m.format = chat::detect_tool_call_format(ctx.tmpl_source);
    m.syntax = chat::tool_call_syntax(m.format, ctx.tmpl_source);
    return m;
}

// A format marker in GBNF: the whole token `<[id]>` when the vocabulary has it as a control token (its
// text is never generated as text, e.g. Mistral's [TOOL_CALLS]), else the literal text.
std::string marker_gbnf(const std::string& text, const Tokenizer& tok) {
    if (text.empty()) return "";
    const int32_t id = tok.find_token(text);
    if (id >= 0 && tok.token_type(id) == TokenType::control) return strfmt("<[%d]>", id);
    return gbnf_literal(text);
}

// The ids of those texts that the vocabulary has as control tokens (the slot decodes them as text).
std::vector<int32_t> control_tokens(const std::vector<std::string>& texts, const Tokenizer& tok) {
    std::vector<int32_t> ids;
    for (const std::string& t : texts) {
        const int32_t id = t.empty() ? -1 : tok.find_token(t);
        if (id >= 0 && tok.token_type(id) == TokenType::control) ids.push_back(id);
    }
    return ids;
}

// The grammar that forces tool_choice "required" / a named function: one call (several if parallel calls
// are on and the format can write them) of the listed tools, each with arguments valid for its
// `parameters` schema, in the template's tool-call format.
std::string tool_call_gbnf(const Json& tools, const ToolMode& m, const Tokenizer& tok) {
    const chat::ToolCallSyntax& sx = m.syntax;
    std::string calls, rules;
    for (size_t i = 0; i < tools.size(); i++) {
        const Json& t = tools[i];
        const Json* fn =
            t.is_object() && t.contains("function") && t["function"].is_object() ? &t["function"] : nullptr;
        if (!fn || !fn->contains("name") || !(*fn)["name"].is_string())
            bad_request(
                "tools[%zu] must be {\"type\": \"function\", \"function\": {\"name\": ..., \"parameters\": {...}}}", i);
        const std::string name = (*fn)["name"].get<std::string>();
        if (!m.only.empty() && name != m.only) continue;
        const Json params = fn->contains("parameters") ? (*fn)["parameters"] : Json{{"type", "object"}};
        std::string args;
        try {
            JsonSchemaGbnf conv(params, strfmt("tool%zu-", i));
            args = conv.expr(params, strfmt("tools[%zu].function.parameters", i));
            rules += conv.rules(false);
        } catch (const Error& e) {
            bad_request("%s", e.what());
        }
        if (!sx.args_open.empty()) {  // Mistral: [TOOL_CALLS]name[ARGS]{...}
            calls += (calls.empty() ? "" : " | ") + strfmt("( %s %s %s %s )", marker_gbnf(sx.call_open, tok).c_str(),
                                                           gbnf_literal(name).c_str(),
                                                           marker_gbnf(sx.args_open, tok).c_str(), args.c_str());
            continue;
        }
        calls += (calls.empty() ? "" : " | ") +
                 strfmt(
                     "( %s \"{\" json-ws %s json-ws \":\" json-ws %s json-ws \",\" json-ws %s json-ws \":\" json-ws %s "
                     "json-ws \"}\" %s )",
                     gbnf_literal(sx.call_open).c_str(), gbnf_literal("\"name\"").c_str(),
                     gbnf_literal(Json(name).dump()).c_str(), gbnf_literal("\"" + sx.args_key + "\"").c_str(),
                     args.c_str(), gbnf_literal(sx.call_close).c_str());
    }
    if (calls.empty()) bad_request("tool_choice names function '%s', which is not in 'tools'", m.only.c_str());
    std::string root = "root ::= " + gbnf_literal(sx.list_open) + " call ";
    if (m.parallel && !sx.args_open.empty() && m.only.empty()) root += "call* ";  // each call has its own opener
    if (m.parallel && !sx.separator.empty() && m.only.empty()) root += "( " + gbnf_literal(sx.separator) + " call )* ";
    root += gbnf_literal(sx.list_close) + "\n";
    JsonSchemaGbnf prims(Json::object());
    return root + "call ::= " + calls + "\n" + rules + prims.rules(true);
}

}  // namespace

ChatRequest prepare_chat(ServerContext& ctx, const Json& body, bool allow_empty_messages) {
    ChatRequest r;
    r.tools = tool_mode(ctx, body);
    r.prompt = render_chat_prompt(ctx, body, allow_empty_messages);
    GenParams& g = r.gen;
    g = parse_gen_params(body, ctx, Api::oai_chat);
    if (r.tools.force) {
        if (g.grammar)
            bad_request("tool_choice '%s' cannot be combined with a grammar or response_format",
                        r.tools.only.empty() ? "required" : "function");
        set_grammar(g, tool_call_gbnf(body["tools"], r.tools, ctx.tokenizer()), ctx.tokenizer());
    }
    const ChatPrompt& cp = r.prompt;
    const bool legacy = cp.format == ReasoningFormat::deepseek_legacy;
    g.reasoning = cp.reasoning && !legacy;
    g.starts_in_reasoning = cp.starts_in_reasoning;
    if (!cp.reasoning) g.loop_guard.mode = chat::LoopGuardMode::Off;
    std::vector<std::string> markers;
    if (r.tools.parse) markers = chat::tool_call_markers(r.tools.format);
    if (cp.reasoning) markers.insert(markers.end(), {g.think_open, g.think_close});
    g.shown_tokens = control_tokens(markers, ctx.tokenizer());
    r.tokens = ctx.tokenizer().encode(cp.text, true, true);
    return r;
}

// Keeps only the first call when the request turned parallel calls off. Returns the calls to send.
std::vector<chat::ToolCall> limit_calls(std::vector<chat::ToolCall> calls, const ToolMode& m, size_t n_sent) {
    if (m.parallel) return calls;
    if (n_sent > 0) return {};
    if (calls.size() > 1) calls.resize(1);
    return calls;
}

chat::ToolCallDelta split_tool_calls(const ToolMode& m, const std::string& content) {
    if (!m.parse) return {content, {}};
    chat::ToolCallDelta d = chat::parse_tool_calls(m.format, content);
    d.calls = limit_calls(std::move(d.calls), m, 0);
    return d;
}

}  // namespace bee::server
