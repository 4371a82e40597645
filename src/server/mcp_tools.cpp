// server/mcp_tools: MCP servers' tools behind GET/POST /tools.
#include "server/mcp_tools.h"

#include <map>
#include <thread>

#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"

namespace bee::server {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kWarmup = std::chrono::seconds(10);   // start + initialize (+ tools/list at start-up)
constexpr auto kCooldown = std::chrono::seconds(5);  // after a failed start, calls fail at once for this long
constexpr int kMaxListPages = 100;

// A tools/call result as POST /tools answers it: the text parts joined by newlines, or "error" when the
// tool reported one (isError).
Json call_response(const Json& result) {
    std::string text;
    auto add = [&text](const std::string& s) {
        if (!text.empty()) text += "\n";
        text += s;
    };
    if (result.is_object() && result.contains("content") && result["content"].is_array())
        for (const Json& part : result["content"]) {
            if (!part.is_object()) continue;
            const std::string type = part.value("type", "");
            if (type == "text" && part.contains("text") && part["text"].is_string())
                add(part["text"].get<std::string>());
            else if (type == "resource" && part.contains("resource") && part["resource"].is_object() &&
                     part["resource"].contains("text") && part["resource"]["text"].is_string())
                add(part["resource"]["text"].get<std::string>());
        }
    if (text.empty() && result.is_object() && result.contains("structuredContent"))
        text = dump_json(result["structuredContent"]);
    if (result.is_object() && result.value("isError", false) == true)
        return {{"error", text.empty() ? "the MCP tool reported an error" : text}};
    return {{"plain_text_response", text}};
}

class McpTools : public ToolProvider {
public:
    explicit McpTools(std::vector<McpServerConfig> configs) {
        for (McpServerConfig& c : configs) {
            servers_.push_back(std::make_unique<Server>());
            servers_.back()->cfg = std::move(c);
        }
    }

    ~McpTools() override {
        stopping_ = true;
        for (auto& s : servers_) {
            std::lock_guard<std::mutex> lk(s->mu);
            if (s->session) s->session->close();
            s->session.reset();
        }
    }

    void warm_up(const std::function<bool(const std::string&)>& taken) {
        std::vector<std::vector<Json>> found(servers_.size());
        std::vector<std::thread> threads;
        for (size_t i = 0; i < servers_.size(); i++)
            threads.emplace_back([this, i, &found] { found[i] = discover(*servers_[i]); });
        for (std::thread& t : threads) t.join();
        for (size_t i = 0; i < servers_.size(); i++) {
            Server& s = *servers_[i];
            for (const Json& t : found[i]) {
                const std::string bare = t["name"].get<std::string>();
                const std::string name = s.cfg.name + "_" + bare;
                if (by_name_.count(name) || (taken && taken(name))) {
                    BEE_LOG_WARN("MCP tool '%s' of server '%s' has the name of another tool: left out", bare.c_str(),
                                 s.cfg.name.c_str());
                    continue;
                }
                by_name_[name] = tools_.size();
                tools_.push_back({&s, bare, entry(name, t)});
            }
        }
        BEE_LOG_INFO("MCP: %zu tools from %zu servers", tools_.size(), servers_.size());
    }

    std::vector<Json> list() override {
        std::vector<Json> out;
        for (const Tool& t : tools_) out.push_back(t.entry);
        return out;
    }

    bool has(const std::string& name) override { return by_name_.count(name) > 0; }

    Json call(const std::string& name, const Json& params, const ToolCall& how) override {
        const Tool& t = tools_.at(by_name_.at(name));
        Server& s = *t.server;
        const std::string where = "MCP server '" + s.cfg.name + "', tool '" + t.bare + "'";
        for (int attempt = 0;; attempt++) {
            std::shared_ptr<McpSession> session;
            try {
                session = get_session(s);
            } catch (const McpError& e) {
                return {{"error", where + ": " + e.what()}};
            }
            try {
                const Json r = session->request("tools/call", {{"name", t.bare}, {"arguments", params}},
                                                Clock::now() + std::chrono::milliseconds(s.cfg.timeout_ms), stopping_);
                Json out = call_response(r);
                // note: MCP results come whole; a client that asked for a stream gets the text as one chunk
                if (how.emit && out.contains("plain_text_response"))
                    how.emit(out["plain_text_response"].get<std::string>());
                return out;
            } catch (const McpError& e) {
                // A request that never reached the server (it had just died) is safe to send again, once.
                if (!e.delivered && attempt == 0 && !stopping_.load()) continue;
                std::string msg = where + ": " + e.what();
                if (e.timed_out) msg += strfmt(" (timeout_ms %d)", s.cfg.timeout_ms);
                BEE_LOG_WARN("%s", msg.c_str());
                return {{"error", msg}};
            }
        }
    }

    void shutdown() override { stopping_ = true; }

private:
    struct Server {
        McpServerConfig cfg;
        std::mutex mu;  // guards session and retry_after; held while a fresh session starts
        std::shared_ptr<McpSession> session;
        Clock::time_point retry_after{};
    };
    struct Tool {
        Server* server;
        std::string bare;  // the server's own name of the tool
        Json entry;        // its GET /tools entry
    };

    // The GET /tools entry of MCP tool `t` (a tools/list item) under the name `name`.
    static Json entry(const std::string& name, const Json& t) {
        Json schema = t.contains("inputSchema") && t["inputSchema"].is_object() ? t["inputSchema"] : Json::object();
        if (!schema.contains("type")) schema["type"] = "object";
        if (schema["type"] == "object" && !schema.contains("properties")) schema["properties"] = Json::object();
        const std::string desc =
            t.contains("description") && t["description"].is_string() ? t["description"].get<std::string>() : "";
        return {{"tool", name},
                {"display_name", name},
                {"type", "mcp"},
                {"permissions", {{"write", false}}},
                {"uses_cwd", false},
                {"definition",
                 {{"type", "function"},
                  {"function", {{"name", name}, {"description", desc}, {"parameters", schema}}}}}};
    }

    // Starts `s`, lists its tools (every page) and keeps the session; logs and returns none on failure.
    std::vector<Json> discover(Server& s) {
        std::vector<Json> out;
        const auto deadline = Clock::now() + kWarmup;
        auto session = std::make_shared<McpSession>(s.cfg);
        try {
            session->start(deadline, stopping_);
            Json cursor;
            for (int page = 0; page < kMaxListPages; page++) {
                Json params = Json::object();
                if (!cursor.is_null()) params["cursor"] = cursor;
                const Json r = session->request("tools/list", params, deadline, stopping_);
                if (r.is_object() && r.contains("tools") && r["tools"].is_array())
                    for (const Json& t : r["tools"])
                        if (t.is_object() && t.contains("name") && t["name"].is_string() &&
                            !t["name"].get<std::string>().empty())
                            out.push_back(t);
                cursor =
                    r.is_object() && r.contains("nextCursor") && r["nextCursor"].is_string() ? r["nextCursor"] : Json();
                if (cursor.is_null()) break;
            }
        } catch (const McpError& e) {
            BEE_LOG_WARN("MCP server '%s' left out (no tools): %s", s.cfg.name.c_str(), e.what());
            session->close();
            return {};
        }
        BEE_LOG_INFO("MCP server '%s': %zu tools", s.cfg.name.c_str(), out.size());
        std::lock_guard<std::mutex> lk(s.mu);
        s.session = std::move(session);
        return out;
    }

    // The running session of `s`, started (again) if it is not; throws McpError.
    std::shared_ptr<McpSession> get_session(Server& s) {
        std::lock_guard<std::mutex> lk(s.mu);
        if (s.session && s.session->alive()) return s.session;
        if (stopping_.load()) throw McpError("cancelled: the server is shutting down", false);
        const auto now = Clock::now();
        if (now < s.retry_after) throw McpError("it failed to start a moment ago (retried after 5 s)", false);
        if (s.session) {
            BEE_LOG_WARN("MCP server '%s' has stopped: starting it again", s.cfg.name.c_str());
            s.session->close();
            s.session.reset();
        }
        auto fresh = std::make_shared<McpSession>(s.cfg);
        try {
            fresh->start(now + kWarmup, stopping_);
        } catch (const McpError& e) {
            fresh->close();
            s.retry_after = Clock::now() + kCooldown;
            throw McpError(std::string("could not start it: ") + e.what(), false);
        }
        s.session = fresh;
        return fresh;
    }

    std::vector<std::unique_ptr<Server>> servers_;
    std::vector<Tool> tools_;                // fixed after warm_up()
    std::map<std::string, size_t> by_name_;  // SERVER_TOOL -> index in tools_
    std::atomic<bool> stopping_{false};
};

}  // namespace

std::vector<McpServerConfig> load_mcp_servers(const std::string& config_path, const std::string& json_text) {
    std::vector<McpServerConfig> all;
    auto add = [&all](std::vector<McpServerConfig> v) {
        for (McpServerConfig& c : v) {
            bool dup = false;
            for (const McpServerConfig& a : all) dup |= a.name == c.name;
            if (dup) BEE_LOG_WARN("MCP server '%s' is configured twice: the first one is kept", c.name.c_str());
            else all.push_back(std::move(c));
        }
    };
    if (!config_path.empty()) {
        std::string text;
        try {
            text = read_file(config_path);
        } catch (const Error& e) {
            fail("--mcp-servers-config: cannot read %s: %s", config_path.c_str(), e.what());
        }
        add(parse_mcp_servers(text, "--mcp-servers-config " + config_path));
    }
    if (!json_text.empty()) add(parse_mcp_servers(json_text, "--mcp-servers-json"));
    return all;
}

std::unique_ptr<ToolProvider> start_mcp_tools(std::vector<McpServerConfig> servers,
                                              const std::function<bool(const std::string&)>& taken) {
    auto p = std::make_unique<McpTools>(std::move(servers));
    p->warm_up(taken);
    return p;
}

}  // namespace bee::server
