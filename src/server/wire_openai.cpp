// server/wire_openai: chat and text completion requests (tool mode, forced-call grammar, prompt, generation
// parameters, tasks) and their replies and SSE chunks.
#include "server/wire_openai.h"

#include "base/error.h"
#include "chat/reasoning.h"
#include "sample/json_schema.h"
#include "server/wire_native.h"

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

// Whether an OpenAI stream asked for a closing usage chunk (stream_options.include_usage).
bool include_usage(const Json& body) {
    return body.contains("stream_options") && body["stream_options"].is_object() &&
           get_bool(body["stream_options"], "include_usage", false);
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

TranslatedChatRequest prepare_translated_chat(ServerContext& ctx, const Json& chat_body, bool allow_empty_messages) {
    TranslatedChatRequest r;
    r.chat = prepare_chat(ctx, chat_body, allow_empty_messages);
    r.task = make_task(ctx, r.chat.tokens, r.chat.gen);
    r.stream = get_bool(chat_body, "stream", false);
    return r;
}

std::vector<int32_t> chat_prompt_tokens(const ServerContext& ctx, const Json& chat_body, bool allow_empty_messages) {
    const ChatPrompt cp = render_chat_prompt(ctx, chat_body, allow_empty_messages);
    return ctx.tokenizer().encode(cp.text, true, true);
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

ChatCompletionRequest read_chat_completion_request(ServerContext& ctx, const Json& body) {
    ChatCompletionRequest r;
    r.n = parse_n_choices(body);
    r.chat = prepare_chat(ctx, body);
    r.tasks = make_tasks(ctx, r.chat.tokens, r.chat.gen, r.n);
    r.stream = get_bool(body, "stream", false);
    r.verbose = get_bool(body, "verbose", ctx.params.verbose);
    if (!r.stream) return r;
    if (r.chat.tools.parse && r.chat.gen.want_logprobs)
        bad_request("logprobs are not supported with tools in a streaming request");
    r.include_usage = include_usage(body);
    return r;
}

CompletionRequest read_oai_completion_request(ServerContext& ctx, const Json& body) {
    if (!body.contains("prompt")) bad_request("'prompt' is required");
    CompletionRequest r;
    r.n = parse_n_choices(body);
    r.gen = parse_gen_params(body, ctx, Api::oai_completion);
    r.tasks = make_prompt_tasks(ctx, tokenize_prompts(body["prompt"], ctx.tokenizer()), r.gen, r.n);
    r.stream = get_bool(body, "stream", false);
    r.verbose = get_bool(body, "verbose", ctx.params.verbose);  // llama-server's __verbose
    if (r.stream) r.include_usage = include_usage(body);
    return r;
}

std::vector<int32_t> read_chat_input_tokens_request(ServerContext& ctx, const Json& body) {
    return prepare_chat(ctx, body).tokens;
}

Json chat_chunk(const ServerContext& ctx, const std::string& id, int64_t created, Json choices) {
    return Json{{"id", id},
                {"object", "chat.completion.chunk"},
                {"created", created},
                {"model", ctx.model_name},
                {"system_fingerprint", "bee"},
                {"choices", std::move(choices)}};
}

namespace {

// OpenAI's tool_calls entries; `index0` >= 0 adds the stream's per-call "index".
Json tool_calls_json(const std::vector<chat::ToolCall>& calls, int index0 = -1) {
    Json out = Json::array();
    for (size_t i = 0; i < calls.size(); i++) {
        const chat::ToolCall& c = calls[i];
        Json j = Json::object();
        if (index0 >= 0) j["index"] = index0 + (int)i;
        j["id"] = c.id.empty() ? random_id("call_") : c.id;
        j["type"] = "function";
        j["function"] = {{"name", c.name}, {"arguments", c.arguments}};
        out.push_back(std::move(j));
    }
    return out;
}

// One choice of a non-streaming reply.
Json chat_choice(const ServerContext& ctx, const ToolMode& tools, const ChatPrompt& cp, const GenParams& g,
                 const TaskResult& r, size_t index) {
    Json msg = {{"role", "assistant"}, {"content", r.content}};
    const char* finish = finish_reason(r.finish);
    if (tools.parse) {
        chat::ToolCallDelta d = chat::parse_tool_calls(tools.format, r.content);
        std::vector<chat::ToolCall> calls = limit_calls(std::move(d.calls), tools, 0);
        if (!calls.empty()) {
            msg["content"] =
                d.content.find_first_not_of(" \t\r\n") == std::string::npos ? Json(nullptr) : Json(d.content);
            msg["tool_calls"] = tool_calls_json(calls);
            if (std::string(finish) == "stop") finish = "tool_calls";
        }
    }
    if (cp.format == ReasoningFormat::deepseek_legacy) {  // keep the tags inline and also report the reasoning
        chat::ReasoningParser p("<think>", "</think>", cp.starts_in_reasoning);
        chat::ReasoningDelta a = p.feed(r.content), b = p.flush();
        if (!(a.reasoning + b.reasoning).empty()) msg["reasoning_content"] = a.reasoning + b.reasoning;
    } else if (!r.reasoning.empty()) {
        msg["reasoning_content"] = r.reasoning;
    }
    Json choice = {{"index", index}, {"finish_reason", finish}, {"message", msg}};
    add_stop_detail(choice, r.finish);
    if (g.want_logprobs) choice["logprobs"] = {{"content", oai_logprobs_content(r.tokens, ctx.tokenizer())}};
    return choice;
}

}  // namespace

StreamFormat chat_stream_format(ServerContext& ctx, const std::string& id, int64_t created, const ToolMode& tools,
                                bool want_logprobs, int index, bool include_usage, std::shared_ptr<Task> verbose) {
    StreamFormat fmt;
    fmt.start = [&ctx, id, created, index] {
        Json delta = {{"role", "assistant"}, {"content", nullptr}};
        return std::vector<Json>{
            chat_chunk(ctx, id, created,
                       Json::array({{{"index", index}, {"finish_reason", nullptr}, {"delta", delta}}}))};
    };
    // With tools, text that may be a call is held back by the parser; calls go out as they complete.
    struct ToolStream {
        explicit ToolStream(chat::ToolCallFormat f) : parser(f) {}
        chat::ToolCallParser parser;
        size_t n_sent = 0;
    };
    auto ts = tools.parse ? std::make_shared<ToolStream>(tools.format) : nullptr;
    // A delta chunk with `content` and/or `tool_calls` (null if it has nothing to say).
    auto tool_chunk = [ts, tools](chat::ToolCallDelta d, Json choice) {
        if (!d.content.empty()) choice["delta"]["content"] = d.content;
        std::vector<chat::ToolCall> calls = limit_calls(std::move(d.calls), tools, ts->n_sent);
        if (!calls.empty()) {
            choice["delta"]["tool_calls"] = tool_calls_json(calls, (int)ts->n_sent);
            ts->n_sent += calls.size();
        }
        return choice;
    };
    fmt.progress = [&ctx, id, created](const TaskEvent& e) {
        Json j = chat_chunk(ctx, id, created, Json::array());
        j["prompt_progress"] = progress_json(e);
        return j;
    };
    const Json empty = {{"index", index}, {"finish_reason", nullptr}, {"delta", Json::object()}};
    fmt.delta = [&ctx, want_logprobs, id, created, ts, tool_chunk, empty](const TaskEvent& e) {
        std::vector<Json> out;
        Json choice = empty;
        if (!e.reasoning.empty()) choice["delta"]["reasoning_content"] = e.reasoning;
        if (ts) choice = tool_chunk(ts->parser.feed(e.content), std::move(choice));
        else if (!e.content.empty()) choice["delta"]["content"] = e.content;
        const bool has_probs = want_logprobs && !e.tokens.empty();
        if (choice["delta"].empty() && !has_probs) return out;
        if (has_probs) choice["logprobs"] = {{"content", oai_logprobs_content(e.tokens, ctx.tokenizer())}};
        out.push_back(chat_chunk(ctx, id, created, Json::array({choice})));
        return out;
    };
    fmt.done = [&ctx, id, created, include_usage, ts, tool_chunk, empty, index, verbose](const FinishInfo& f) {
        std::vector<Json> out;
        if (ts) {  // what the parser still held: the last call(s) or text that was not a call
            Json choice = tool_chunk(ts->parser.finish(), empty);
            if (!choice["delta"].empty()) out.push_back(chat_chunk(ctx, id, created, Json::array({choice})));
        }
        std::string reason = finish_reason(f);
        if (ts && ts->n_sent > 0 && reason == "stop") reason = "tool_calls";
        Json choice = {{"index", index}, {"finish_reason", reason}, {"delta", Json::object()}};
        add_stop_detail(choice, f);
        Json last = chat_chunk(ctx, id, created, Json::array({std::move(choice)}));
        const size_t first_closing = out.size();
        for (Json& j : oai_final_chunks(std::move(last), chat_chunk(ctx, id, created, Json::array()), f, include_usage))
            out.push_back(std::move(j));
        if (verbose)
            out[first_closing]["__verbose"] = native_final(ctx, *verbose, TaskResult{{}, {}, {}, f}, true, index);
        return out;
    };
    return fmt;
}

Json chat_completion_json(const ServerContext& ctx, const std::string& id, int64_t created, const ChatRequest& cr,
                          const std::vector<TaskResult>& rs, const Task* verbose) {
    Json choices = Json::array();
    std::vector<FinishInfo> fs;
    for (size_t i = 0; i < rs.size(); i++) {
        choices.push_back(chat_choice(ctx, cr.tools, cr.prompt, cr.gen, rs[i], i));
        fs.push_back(rs[i].finish);
    }
    const FinishInfo f = merge_finish(fs);
    Json j = {{"id", id},
              {"object", "chat.completion"},
              {"created", created},
              {"model", ctx.model_name},
              {"system_fingerprint", "bee"},
              {"choices", std::move(choices)},
              {"usage", usage_json(f)},
              {"timings", timings_json(f)}};
    if (verbose) j["__verbose"] = native_final(ctx, *verbose, rs[0], false, 0);
    if (!rs[0].finish.loop_guard_action.empty())
        j["loop_guard"] = {{"triggered", true},
                           {"action", rs[0].finish.loop_guard_action},
                           {"reason", rs[0].finish.loop_guard_reason}};
    return j;
}

namespace {

Json oai_text_logprobs(const ServerContext& ctx, const std::vector<TokenInfo>& toks) {
    Json tokens = Json::array(), lps = Json::array(), tops = Json::array();
    for (const TokenInfo& t : toks) {
        tokens.push_back(ctx.tokenizer().token_to_piece(t.id, false));
        lps.push_back(t.logprob);
        Json top = Json::object();
        for (const TokenLogprob& p : t.top) top[ctx.tokenizer().token_to_piece(p.id, false)] = p.logprob;
        tops.push_back(top);
    }
    return Json{{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}};
}

}  // namespace

Json oai_text_chunk(const ServerContext& ctx, const std::string& id, int64_t created, Json choice) {
    Json choices = choice.is_array() ? std::move(choice) : Json::array({std::move(choice)});
    return Json{{"id", id},
                {"object", "text_completion"},
                {"created", created},
                {"model", ctx.model_name},
                {"system_fingerprint", "bee"},
                {"choices", std::move(choices)}};
}

Json oai_text_completion_json(const ServerContext& ctx, const std::string& id, int64_t created,
                              const std::vector<TaskResult>& rs, int32_t n, bool want_logprobs, const Task* verbose) {
    Json choices = Json::array();
    std::vector<FinishInfo> fs;
    for (size_t i = 0; i < rs.size(); i++) {
        Json choice = {{"text", rs[i].content},
                       {"index", i},
                       {"logprobs", nullptr},
                       {"finish_reason", finish_reason(rs[i].finish)}};
        if (want_logprobs) choice["logprobs"] = oai_text_logprobs(ctx, rs[i].tokens);
        add_stop_detail(choice, rs[i].finish);
        choices.push_back(std::move(choice));
        fs.push_back(rs[i].finish);
    }
    const FinishInfo f = merge_finish(fs, (size_t)n);
    Json j = oai_text_chunk(ctx, id, created, std::move(choices));
    j["usage"] = usage_json(f);
    j["timings"] = timings_json(f);
    if (verbose) j["__verbose"] = native_final(ctx, *verbose, rs[0], false, 0);
    return j;
}

StreamFormat oai_text_stream_format(ServerContext& ctx, const std::string& id, int64_t created, bool want_logprobs,
                                    int index, bool include_usage, std::shared_ptr<Task> verbose) {
    StreamFormat fmt;
    fmt.delta = [&ctx, want_logprobs, id, created, index](const TaskEvent& e) {
        Json choice = {{"text", e.content}, {"index", index}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
        if (want_logprobs) choice["logprobs"] = oai_text_logprobs(ctx, e.tokens);
        return std::vector<Json>{oai_text_chunk(ctx, id, created, choice)};
    };
    fmt.progress = [&ctx, id, created](const TaskEvent& e) {
        Json j = oai_text_chunk(ctx, id, created, Json::array());
        j["prompt_progress"] = progress_json(e);
        return j;
    };
    fmt.done = [&ctx, id, created, include_usage, index, verbose](const FinishInfo& f) {
        Json choice = {{"text", ""}, {"index", index}, {"logprobs", nullptr}, {"finish_reason", finish_reason(f)}};
        add_stop_detail(choice, f);
        Json last = oai_text_chunk(ctx, id, created, std::move(choice));
        if (verbose) last["__verbose"] = native_final(ctx, *verbose, TaskResult{{}, {}, {}, f}, true, index);
        return oai_final_chunks(std::move(last), oai_text_chunk(ctx, id, created, Json::array()), f, include_usage);
    };
    return fmt;
}

}  // namespace bee::server
