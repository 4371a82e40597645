// server/routes_chat: OpenAI chat completions — messages rendered with the chat template, reasoning
// split into reasoning_content, tool calls parsed into message.tool_calls (chat/tool_calls, in the
// format the template teaches), SSE chunks as the OpenAI client expects them.
#include <ctime>

#include "base/error.h"
#include "chat/reasoning.h"
#include "chat/tool_calls.h"
#include "server/chat_prompt.h"
#include "server/request.h"
#include "server/response.h"
#include "server/routes.h"

namespace bee::server {

namespace {

Json chat_chunk(const ServerContext& ctx, const std::string& id, int64_t created, Json choices) {
    return Json{{"id", id},
                {"object", "chat.completion.chunk"},
                {"created", created},
                {"model", ctx.model_name},
                {"system_fingerprint", "bee"},
                {"choices", std::move(choices)}};
}

// How the request wants tool calls handled: parse them out of the reply (tools given, tool_choice not
// "none", parse_tool_calls not false), and whether more than one call may be returned.
struct ToolMode {
    bool parse = false;
    bool parallel = true;
    chat::ToolCallFormat format = chat::ToolCallFormat::generic;
};

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
    }
    m.parse = has_tools && choice != "none" && get_bool(body, "parse_tool_calls", true);
    m.parallel = get_bool(body, "parallel_tool_calls", true);
    m.format = chat::detect_tool_call_format(ctx.tmpl_source);
    return m;
}

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

// Keeps only the first call when the request turned parallel calls off. Returns the calls to send.
std::vector<chat::ToolCall> limit_calls(std::vector<chat::ToolCall> calls, const ToolMode& m, size_t n_sent) {
    if (m.parallel) return calls;
    if (n_sent > 0) return {};
    if (calls.size() > 1) calls.resize(1);
    return calls;
}

void handle_chat(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req);
    const ToolMode tools = tool_mode(ctx, body);
    ChatPrompt cp = render_chat_prompt(ctx, body);
    GenParams g = parse_gen_params(body, ctx, Api::oai_chat);
    const bool legacy = cp.format == ReasoningFormat::deepseek_legacy;
    g.reasoning = cp.reasoning && !legacy;
    g.starts_in_reasoning = cp.starts_in_reasoning;
    if (!cp.reasoning) g.loop_guard.mode = chat::LoopGuardMode::Off;
    auto task = make_task(ctx, ctx.tokenizer().encode(cp.text, true, true), std::move(g));
    const std::string id = random_id("chatcmpl-");
    const int64_t created = (int64_t)time(nullptr);

    if (!get_bool(body, "stream", false)) {
        TaskResult r = run_task(ctx, req, task);
        Json msg = {{"role", "assistant"}, {"content", r.content}};
        const char* finish = finish_reason(r.finish);
        if (tools.parse) {
            chat::ToolCallDelta d = chat::parse_tool_calls(tools.format, r.content);
            std::vector<chat::ToolCall> calls = limit_calls(std::move(d.calls), tools, 0);
            if (!calls.empty()) {
                msg["content"] = d.content.find_first_not_of(" \t\r\n") == std::string::npos ? Json(nullptr) : Json(d.content);
                msg["tool_calls"] = tool_calls_json(calls);
                if (std::string(finish) == "stop") finish = "tool_calls";
            }
        }
        if (legacy) {  // keep the tags inline and also report the reasoning separately
            chat::ReasoningParser p("<think>", "</think>", cp.starts_in_reasoning);
            chat::ReasoningDelta a = p.feed(r.content), b = p.flush();
            if (!(a.reasoning + b.reasoning).empty()) msg["reasoning_content"] = a.reasoning + b.reasoning;
        } else if (!r.reasoning.empty()) {
            msg["reasoning_content"] = r.reasoning;
        }
        Json choice = {{"index", 0}, {"finish_reason", finish}, {"message", msg}};
        if (task->params.want_logprobs) choice["logprobs"] = {{"content", oai_logprobs_content(r.tokens, ctx.tokenizer())}};
        Json j = {{"id", id},
                  {"object", "chat.completion"},
                  {"created", created},
                  {"model", ctx.model_name},
                  {"system_fingerprint", "bee"},
                  {"choices", Json::array({choice})},
                  {"usage", usage_json(r.finish)},
                  {"timings", timings_json(r.finish)}};
        if (!r.finish.loop_guard_action.empty())
            j["loop_guard"] = {{"triggered", true}, {"action", r.finish.loop_guard_action}, {"reason", r.finish.loop_guard_reason}};
        send_json(res, j);
        return;
    }
    if (tools.parse && task->params.want_logprobs)
        bad_request("logprobs are not supported with tools in a streaming request");
    const bool include_usage = body.contains("stream_options") && body["stream_options"].is_object() &&
                               get_bool(body["stream_options"], "include_usage", false);
    StreamFormat fmt;
    fmt.start = [&ctx, id, created] {
        Json delta = {{"role", "assistant"}, {"content", nullptr}};
        return std::vector<Json>{chat_chunk(ctx, id, created, Json::array({{{"index", 0}, {"finish_reason", nullptr}, {"delta", delta}}}))};
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
    fmt.delta = [&ctx, task, id, created, ts, tool_chunk](const TaskEvent& e) {
        std::vector<Json> out;
        Json choice = {{"index", 0}, {"finish_reason", nullptr}, {"delta", Json::object()}};
        if (!e.reasoning.empty()) choice["delta"]["reasoning_content"] = e.reasoning;
        if (ts) choice = tool_chunk(ts->parser.feed(e.content), std::move(choice));
        else if (!e.content.empty()) choice["delta"]["content"] = e.content;
        const bool has_probs = task->params.want_logprobs && !e.tokens.empty();
        if (choice["delta"].empty() && !has_probs) return out;
        if (has_probs) choice["logprobs"] = {{"content", oai_logprobs_content(e.tokens, ctx.tokenizer())}};
        out.push_back(chat_chunk(ctx, id, created, Json::array({choice})));
        return out;
    };
    fmt.done = [&ctx, id, created, include_usage, ts, tool_chunk](const FinishInfo& f) {
        std::vector<Json> out;
        if (ts) {  // what the parser still held: the last call(s) or text that was not a call
            Json choice = tool_chunk(ts->parser.finish(), {{"index", 0}, {"finish_reason", nullptr}, {"delta", Json::object()}});
            if (!choice["delta"].empty()) out.push_back(chat_chunk(ctx, id, created, Json::array({choice})));
        }
        std::string reason = finish_reason(f);
        if (ts && ts->n_sent > 0 && reason == "stop") reason = "tool_calls";
        Json last = chat_chunk(ctx, id, created, Json::array({{{"index", 0}, {"finish_reason", reason}, {"delta", Json::object()}}}));
        for (Json& j : oai_final_chunks(std::move(last), chat_chunk(ctx, id, created, Json::array()), f, include_usage))
            out.push_back(std::move(j));
        return out;
    };
    stream_task(ctx, res, task, std::move(fmt));
}

}  // namespace

void register_chat_routes(httplib::Server& svr, ServerContext& ctx) {
    auto h = guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_chat(ctx, q, r); });
    svr.Post("/v1/chat/completions", h);
    svr.Post("/chat/completions", h);
}

}  // namespace bee::server
