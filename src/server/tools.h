// server/tools: tools the server runs itself for a client (llama-server's agent tools): GET /tools lists
// them, POST /tools {"tool", "params", "stream"?} calls one. Two kinds of provider fill the registry:
// the built-in tools (--tools: files, search, shell) and the tools of MCP servers (--mcp-servers-config /
// --mcp-servers-json). With no provider both routes answer 403, as llama-server's.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/http_util.h"

namespace bee::server {

// Where a call runs: the x-tool-cwd and x-tool-runtime headers (empty: the server's own directory and
// this machine), and, for "stream": true, where output chunks go as they come (false: the client left).
struct ToolCall {
    std::string cwd;
    std::string runtime;
    std::string resp_type;  // x-resp-type ("base64": read_file answers the file's bytes in base64)
    std::function<bool(const std::string& chunk)> emit;  // empty unless the client asked for a stream
};

class ToolProvider {
public:
    virtual ~ToolProvider() = default;
    // One GET /tools entry per tool: {"tool": name, "display_name", "type", "permissions": {"write"},
    // "definition": {"type": "function", "function": {"name", "description", "parameters"}}}.
    virtual std::vector<Json> list() = 0;
    virtual bool has(const std::string& name) = 0;
    // Whether tool `name` answers "stream": true (false: POST /tools with it gets 404, as llama-server).
    virtual bool streams(const std::string& /*name*/) { return true; }
    // Runs tool `name` with `params`; the answer body: {"plain_text_response": ...} or {"result": ...}, or
    // {"error": message} for a call that failed (the answer is still 200). Throws HttpError for a bad request.
    virtual Json call(const std::string& name, const Json& params, const ToolCall& how) = 0;
    // The server is stopping: calls in progress should return soon (an error is fine). Called before the
    // HTTP server drains its handlers; the provider is destroyed after.
    virtual void shutdown() {}
};

class ToolRegistry {
public:
    void add(std::unique_ptr<ToolProvider> p) { providers_.push_back(std::move(p)); }
    bool empty() const { return providers_.empty(); }
    std::vector<Json> list() const;
    // The provider of `name`, or nullptr.
    ToolProvider* find(const std::string& name) const;
    void shutdown() {
        for (auto& p : providers_) p->shutdown();
    }

private:
    std::vector<std::unique_ptr<ToolProvider>> providers_;
};

// GET /tools and POST /tools on `svr` (a RouteTable or httplib::Server), served from `tools`.
void register_tool_routes(httplib::Server& svr, ToolRegistry& tools);

}  // namespace bee::server
