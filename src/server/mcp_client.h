// server/mcp_client: one MCP server run as a child process, spoken to in JSON-RPC 2.0 over its stdio
// (one message per line, the MCP stdio transport), and the Cursor-style configuration that names them:
// {"mcpServers": {NAME: {"command", "args", "env", "cwd", "timeout_ms"}}}.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/http_util.h"

namespace bee::server {

struct McpServerConfig {
    std::string name;  // the key under "mcpServers": tools are listed as NAME_TOOL
    std::string command;
    std::vector<std::string> args;
    std::map<std::string, std::string> env;  // set over the server's own environment
    std::string cwd;                         // empty: the server's working directory
    int timeout_ms = 30000;                  // per request (tools/call, tools/list)
};

// The servers of one configuration text; `where` names its source in errors ("--mcp-servers-json",
// "--mcp-servers-config FILE"). Throws bee::Error for text that is not JSON or fields of the wrong type;
// entries without a "command" (remote servers given by "url") are skipped with a warning, as llama-server.
std::vector<McpServerConfig> parse_mcp_servers(const std::string& text, const std::string& where);

// A failed request: the server could not be started, died, timed out, or answered with an error.
// `delivered` is false when the request never reached the server (a retry cannot run a tool twice).
struct McpError : std::runtime_error {
    McpError(const std::string& what, bool delivered, bool timed_out = false)
        : std::runtime_error(what), delivered(delivered), timed_out(timed_out) {}
    bool delivered;
    bool timed_out;
};

// One running MCP server. start() spawns it (its own process group, a clean signal mask, no other
// descriptors of ours) and does the initialize handshake; request() may be called from many threads at
// once (replies are matched by id; notifications and lines that are not JSON are skipped). close() ends it:
// stdin closed, SIGTERM, then SIGKILL to its whole process group, so grandchildren holding the pipes go too.
class McpSession {
public:
    explicit McpSession(McpServerConfig cfg) : cfg_(std::move(cfg)) {}
    ~McpSession() { close(); }
    McpSession(const McpSession&) = delete;
    McpSession& operator=(const McpSession&) = delete;

    // Spawns the process and initializes the session by `deadline`; throws McpError.
    void start(std::chrono::steady_clock::time_point deadline, const std::atomic<bool>& cancel);
    // The reply's "result" for `method`; throws McpError on a JSON-RPC error, timeout, death or cancel.
    Json request(const std::string& method, const Json& params, std::chrono::steady_clock::time_point deadline,
                 const std::atomic<bool>& cancel);
    void notify(const std::string& method, const Json& params);
    bool alive() const { return alive_.load(); }
    void close();
    const McpServerConfig& config() const { return cfg_; }
    // The last lines the server wrote to stderr (for error messages).
    std::string stderr_tail() const;

private:
    void spawn();
    void io_loop();
    void on_line(const std::string& line);
    bool write_line(const std::string& line, std::chrono::steady_clock::time_point deadline,
                    const std::atomic<bool>& cancel);
    std::string describe_death() const;

    McpServerConfig cfg_;
    pid_t pid_ = -1;   // -1 once reaped
    pid_t pgid_ = -1;  // its process group (= its first pid), signalled at close()
    int in_fd_ = -1, out_fd_ = -1, err_fd_ = -1;
    std::thread io_;
    std::atomic<bool> alive_{false}, stop_{false};
    std::mutex write_mu_, close_mu_;
    mutable std::mutex mu_;  // guards pending_, err_tail_, death_, next_id_
    std::condition_variable cv_;
    struct Pending {
        bool done = false;
        Json reply;
    };
    std::map<int64_t, Pending> pending_;
    int64_t next_id_ = 1;
    std::string err_tail_;
    std::string death_;  // how it ended ("exited with status 1"), once it has
};

}  // namespace bee::server
