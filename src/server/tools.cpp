// server/tools: the registry of server-side tools and its two routes (GET /tools, POST /tools).
#include "server/tools.h"

#include "server/routes.h"

namespace bee::server {

std::vector<Json> ToolRegistry::list() const {
    std::vector<Json> out;
    for (const auto& p : providers_)
        for (Json& t : p->list()) out.push_back(std::move(t));
    return out;
}

ToolProvider* ToolRegistry::find(const std::string& name) const {
    for (const auto& p : providers_)
        if (p->has(name)) return p.get();
    return nullptr;
}

namespace {

// POST /tools with "stream": true: the call runs inside the response's content provider; each chunk of
// output is one SSE event {"chunk"}, and the last one {"done": true} with "error" when the call failed.
void stream_call(httplib::Response& res, ToolProvider& p, std::string name, Json params, ToolCall how) {
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider("text/event-stream",
                                     [&p, name = std::move(name), params = std::move(params),
                                      how = std::move(how)](size_t, httplib::DataSink& sink) mutable {
                                         how.emit = [&sink](const std::string& chunk) {
                                             if (chunk.empty()) return sink.is_writable();
                                             const std::string ev = sse_data({{"chunk", chunk}});
                                             return sink.is_writable() && sink.write(ev.data(), ev.size());
                                         };
                                         Json done = {{"done", true}};
                                         try {
                                             Json r = p.call(name, params, how);
                                             if (r.contains("error")) done["error"] = r["error"];
                                         } catch (const std::exception& e) {
                                             done["error"] = e.what();
                                         }
                                         const std::string ev = sse_data(done);
                                         if (sink.is_writable()) sink.write(ev.data(), ev.size());
                                         sink.done();
                                         return true;
                                     });
}

}  // namespace

void register_tool_routes(httplib::Server& svr, ToolRegistry& tools) {
    auto forbidden = [](httplib::Response& res) {
        send_error(res, HttpError(403, "permission_error",
                                  "no server tools: start the server with --tools or --mcp-servers-config"));
    };
    svr.Get("/tools", guarded([&tools, forbidden](const httplib::Request&, httplib::Response& res) {
                if (tools.empty()) return forbidden(res);
                send_json(res, Json(tools.list()));
            }));
    svr.Post("/tools", guarded([&tools, forbidden](const httplib::Request& req, httplib::Response& res) {
                 if (tools.empty()) return forbidden(res);
                 Json body = parse_body(req);
                 if (!body.contains("tool") || !body["tool"].is_string())
                     throw HttpError(400, "invalid_request_error", "\"tool\" must be the name of a tool (a string)");
                 const std::string name = body["tool"].get<std::string>();
                 Json params = body.value("params", Json::object());
                 if (!params.is_object()) throw HttpError(400, "invalid_request_error", "\"params\" must be an object");
                 ToolProvider* p = tools.find(name);
                 if (!p)
                     throw HttpError(404, "invalid_request_error",
                                     "no tool named '" + name + "' (GET /tools lists them)");
                 ToolCall how;
                 how.cwd = req.get_header_value("x-tool-cwd");
                 how.runtime = req.get_header_value("x-tool-runtime");
                 how.resp_type = req.get_header_value("x-resp-type");
                 const Json stream = body.value("stream", Json(false));
                 if (stream.is_boolean() && stream.get<bool>()) {
                     if (!p->streams(name))
                         throw HttpError(404, "invalid_request_error",
                                         "tool \"" + name + "\" does not support stream = true");
                     return stream_call(res, *p, name, std::move(params), std::move(how));
                 }
                 send_json(res, p->call(name, params, how));
             }));
}

}  // namespace bee::server
