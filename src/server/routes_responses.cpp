// server/routes_responses: the OpenAI Responses API — POST /v1/responses (one response object or SSE
// events) and /v1/responses/input_tokens — translated onto the chat pipeline (server/chat_request) and
// answered in the Responses shapes (server/responses_api).
#include <ctime>
#include <memory>

#include "server/chat_request.h"
#include "server/response.h"
#include "server/responses_api.h"
#include "server/routes.h"

namespace bee::server {

namespace {

// The output items of one streamed response, opened one at a time in generation order (reasoning,
// message, function calls), each finished before the next starts; every event carries sequence_number.
struct ResponsesStream {
    ResponsesStream(const ToolMode& m, std::string id, int64_t created, std::string model)
        : tools(m), id(std::move(id)), created(created), model(std::move(model)) {
        if (m.parse) parser = std::make_unique<chat::ToolCallParser>(m.format);
    }
    ToolMode tools;
    std::string id;
    int64_t created;
    std::string model;
    std::unique_ptr<chat::ToolCallParser> parser;  // with tools: holds text that may be a call
    Json output = Json::array();                   // finished items
    std::string open_kind, open_id, open_text;     // the item being streamed ("reasoning" or "message")
    int64_t seq = 0;
    size_t n_calls = 0;

    Json ev(const char* type, Json fields) {
        Json e = {{"type", type}, {"sequence_number", seq++}};
        for (auto it = fields.begin(); it != fields.end(); ++it) e[it.key()] = it.value();
        return e;
    }
    Json shell() { return responses_object(id, created, model, Json::array(), nullptr); }
    int index() const { return (int)output.size(); }  // output_index of the open (or next) item

    void close(std::vector<Json>& out) {
        if (open_kind.empty()) return;
        const Json loc = {{"item_id", open_id}, {"output_index", index()}, {"content_index", 0}};
        Json item;
        if (open_kind == "reasoning") {
            Json f = loc;
            f["text"] = open_text;
            out.push_back(ev("response.reasoning_text.done", std::move(f)));
            item = responses_reasoning_item(open_id, open_text, "completed");
        } else {
            Json f = loc;
            f["text"] = open_text;
            f["logprobs"] = Json::array();
            out.push_back(ev("response.output_text.done", std::move(f)));
            item = responses_message_item(open_id, open_text, "completed");
            Json p = loc;
            p["part"] = item["content"][0];
            out.push_back(ev("response.content_part.done", std::move(p)));
        }
        out.push_back(ev("response.output_item.done", {{"output_index", index()}, {"item", item}}));
        output.push_back(std::move(item));
        open_kind.clear();
        open_text.clear();
    }
    void open(std::vector<Json>& out, const char* kind) {
        close(out);
        open_kind = kind;
        open_id = random_id(open_kind == "reasoning" ? "rs_" : "msg_");
        const Json item = open_kind == "reasoning" ? responses_reasoning_item(open_id, "", "in_progress")
                                                   : responses_message_item(open_id, "", "in_progress");
        out.push_back(ev("response.output_item.added", {{"output_index", index()}, {"item", item}}));
        if (open_kind == "message") {
            const Json part = {{"type", "output_text"}, {"text", ""}, {"annotations", Json::array()}};
            out.push_back(ev("response.content_part.added",
                             {{"item_id", open_id}, {"output_index", index()}, {"content_index", 0}, {"part", part}}));
        }
    }
    void reasoning(std::vector<Json>& out, const std::string& text) {
        if (open_kind != "reasoning") open(out, "reasoning");
        open_text += text;
        out.push_back(ev("response.reasoning_text.delta",
                         {{"item_id", open_id}, {"output_index", index()}, {"content_index", 0}, {"delta", text}}));
    }
    void text(std::vector<Json>& out, const std::string& text) {
        if (open_kind != "message") {
            if (n_calls > 0 && text.find_first_not_of(" \t\r\n") == std::string::npos) return;  // blank after a call
            open(out, "message");
        }
        open_text += text;
        out.push_back(ev("response.output_text.delta", {{"item_id", open_id},
                                                        {"output_index", index()},
                                                        {"content_index", 0},
                                                        {"delta", text},
                                                        {"logprobs", Json::array()}}));
    }
    // Text and whole calls released by the parser; each call is one function_call item, arguments at once.
    void content(std::vector<Json>& out, chat::ToolCallDelta d) {
        if (!d.content.empty()) text(out, d.content);
        for (const chat::ToolCall& c : limit_calls(std::move(d.calls), tools, n_calls)) {
            close(out);
            Json item = responses_call_item(c, "in_progress");
            item["arguments"] = "";
            out.push_back(ev("response.output_item.added", {{"output_index", index()}, {"item", item}}));
            const Json loc = {{"item_id", item["id"]}, {"output_index", index()}};
            Json delta = loc, done = loc;
            delta["delta"] = c.arguments;
            out.push_back(ev("response.function_call_arguments.delta", std::move(delta)));
            done["name"] = c.name;
            done["arguments"] = c.arguments;
            out.push_back(ev("response.function_call_arguments.done", std::move(done)));
            item["status"] = "completed";
            item["arguments"] = c.arguments;
            out.push_back(ev("response.output_item.done", {{"output_index", index()}, {"item", item}}));
            output.push_back(std::move(item));
            n_calls++;
        }
    }
};

StreamFormat responses_stream_format(const ServerContext& ctx, const ChatRequest& cr, const std::string& id) {
    auto st = std::make_shared<ResponsesStream>(cr.tools, id, (int64_t)time(nullptr), ctx.model_name);
    StreamFormat fmt;
    fmt.done_sentinel = false;
    fmt.event_names = true;
    fmt.start = [st] {
        return std::vector<Json>{st->ev("response.created", {{"response", st->shell()}}),
                                 st->ev("response.in_progress", {{"response", st->shell()}})};
    };
    fmt.progress = [st](const TaskEvent& e) {
        return st->ev("response.in_progress", {{"response", st->shell()}, {"prompt_progress", progress_json(e)}});
    };
    fmt.delta = [st](const TaskEvent& e) {
        std::vector<Json> out;
        if (!e.reasoning.empty()) st->reasoning(out, e.reasoning);
        if (!e.content.empty())
            st->content(out, st->parser ? st->parser->feed(e.content) : chat::ToolCallDelta{e.content, {}});
        return out;
    };
    fmt.done = [st](const FinishInfo& f) {
        std::vector<Json> out;
        if (st->parser) st->content(out, st->parser->finish());
        st->close(out);
        Json done = st->ev("response.completed",
                           {{"response", responses_object(st->id, st->created, st->model, st->output, &f)}});
        done["timings"] = timings_json(f);
        out.push_back(std::move(done));
        return out;
    };
    fmt.error = [st](const TaskEvent& e) {
        return st->ev("error", {{"code", e.error_type},
                                {"message", e.error_message},
                                {"param", nullptr},
                                {"error", error_json(e.http_status, e.error_type, e.error_message)["error"]}});
    };
    return fmt;
}

// The output items of a finished reply: reasoning, the message, then each call.
Json output_items(const std::string& reasoning, const chat::ToolCallDelta& d) {
    Json out = Json::array();
    if (!reasoning.empty()) out.push_back(responses_reasoning_item(random_id("rs_"), reasoning, "completed"));
    const bool blank = d.content.find_first_not_of(" \t\r\n") == std::string::npos;
    if (!d.content.empty() && !(blank && !d.calls.empty()))
        out.push_back(responses_message_item(random_id("msg_"), d.content, "completed"));
    for (const chat::ToolCall& c : d.calls) out.push_back(responses_call_item(c, "completed"));
    return out;
}

void handle_responses(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const Json chat = responses_to_chat(parse_body(req));
    const ChatRequest cr = prepare_chat(ctx, chat);
    auto task = make_task(ctx, cr.tokens, cr.gen);
    const std::string id = random_id("resp_");
    if (get_bool(chat, "stream", false)) {
        stream_task(ctx, res, std::move(task), responses_stream_format(ctx, cr, id));
        return;
    }
    const int64_t created = (int64_t)time(nullptr);
    const TaskResult r = run_task(ctx, req, task);
    const chat::ToolCallDelta d = split_tool_calls(cr.tools, r.content);
    send_json(res, responses_object(id, created, ctx.model_name, output_items(r.reasoning, d), &r.finish));
}

// The prompt's token count through the template, as /v1/responses would run it.
void handle_input_tokens(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const ChatPrompt cp = render_chat_prompt(ctx, responses_to_chat(parse_body(req)));
    send_json(res, {{"object", "response.input_tokens"},
                    {"input_tokens", (int64_t)ctx.tokenizer().encode(cp.text, true, true).size()}});
}

}  // namespace

void register_responses_routes(RouteTable& svr, ServerContext& ctx) {
    auto h = guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_responses(ctx, q, r); });
    auto t = guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_input_tokens(ctx, q, r); });
    svr.Post("/v1/responses", h);
    svr.Post("/responses", h);
    svr.Post("/v1/responses/input_tokens", t);
    svr.Post("/responses/input_tokens", t);
}

}  // namespace bee::server
