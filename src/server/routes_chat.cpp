// server/routes_chat: OpenAI chat completions — messages rendered with the chat template, reasoning
// split into reasoning_content, tool calls parsed into message.tool_calls (chat/tool_calls, in the
// format the template teaches), SSE chunks as the OpenAI client expects them.
#include <ctime>
#include <functional>

#include "chat/reasoning.h"
#include "server/chat_request.h"
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

// The SSE formatter of choice `index`. `include_usage`: this (single) choice closes with the usage chunk.
StreamFormat chat_stream_format(ServerContext& ctx, const std::string& id, int64_t created, const ToolMode& tools,
                                bool want_logprobs, int index, bool include_usage) {
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
    fmt.done = [&ctx, id, created, include_usage, ts, tool_chunk, empty, index](const FinishInfo& f) {
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
        for (Json& j : oai_final_chunks(std::move(last), chat_chunk(ctx, id, created, Json::array()), f, include_usage))
            out.push_back(std::move(j));
        return out;
    };
    return fmt;
}

void handle_chat(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req);
    const int32_t n = parse_n_choices(body);
    ChatRequest cr = prepare_chat(ctx, body);
    const ToolMode& tools = cr.tools;
    const ChatPrompt& cp = cr.prompt;
    const GenParams& g = cr.gen;
    auto tasks = make_tasks(ctx, cr.tokens, g, n);
    const std::string id = random_id("chatcmpl-");
    const int64_t created = (int64_t)time(nullptr);

    if (!get_bool(body, "stream", false)) {
        std::vector<TaskResult> rs = run_tasks(ctx, req, tasks);
        Json choices = Json::array();
        std::vector<FinishInfo> fs;
        for (size_t i = 0; i < rs.size(); i++) {
            choices.push_back(chat_choice(ctx, tools, cp, g, rs[i], i));
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
        if (!rs[0].finish.loop_guard_action.empty())
            j["loop_guard"] = {{"triggered", true},
                               {"action", rs[0].finish.loop_guard_action},
                               {"reason", rs[0].finish.loop_guard_reason}};
        send_json(res, j);
        return;
    }
    if (tools.parse && g.want_logprobs) bad_request("logprobs are not supported with tools in a streaming request");
    const bool include_usage = body.contains("stream_options") && body["stream_options"].is_object() &&
                               get_bool(body["stream_options"], "include_usage", false);
    std::vector<StreamFormat> fmts;
    for (int i = 0; i < n; i++)
        fmts.push_back(chat_stream_format(ctx, id, created, tools, g.want_logprobs, i, include_usage && n == 1));
    std::function<std::vector<Json>(const std::vector<FinishInfo>&)> after_all;
    if (include_usage && n > 1)  // one usage chunk for all the choices
        after_all = usage_after_all(chat_chunk(ctx, id, created, Json::array()));
    stream_tasks(ctx, res, std::move(tasks), std::move(fmts), std::move(after_all));
}

}  // namespace

void register_chat_routes(RouteTable& svr, ServerContext& ctx) {
    auto h = guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_chat(ctx, q, r); });
    svr.Post("/v1/chat/completions", h);
    svr.Post("/chat/completions", h);
}

}  // namespace bee::server
