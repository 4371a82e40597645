// server/mcp_client: an MCP server as a child process speaking JSON-RPC over stdio, and its configuration.
#include "server/mcp_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "base/log.h"

extern char** environ;

namespace bee::server {

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kProtocolVersion = "2024-11-05";  // what llama-server asks for; servers may answer newer
constexpr size_t kMaxLine = 64u << 20;                  // a longer line is dropped (a child that never ends one)
constexpr size_t kErrTail = 4096;                       // stderr kept for error messages
constexpr int kPollMs = 50;

void set_nonblocking(int fd) {
    const int fl = fcntl(fd, F_GETFL, 0);
    if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

std::string describe_status(int status) {
    if (WIFEXITED(status)) return strfmt("exited with status %d", WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return strfmt("was killed by signal %d", WTERMSIG(status));
    return "stopped";
}

// Waits up to `ms` for `pid` to end; true (and *status set) if it did.
bool wait_exit(pid_t pid, int ms, int* status) {
    for (int waited = 0;; waited += 10) {
        const pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD)) return true;
        if (waited >= ms) return false;
        usleep(10000);
    }
}

}  // namespace

void McpSession::spawn() {
    int in_p[2], out_p[2], err_p[2];
    if (pipe2(in_p, O_CLOEXEC) != 0) throw McpError(strfmt("pipe: %s", strerror(errno)), false);
    if (pipe2(out_p, O_CLOEXEC) != 0) {
        ::close(in_p[0]), ::close(in_p[1]);
        throw McpError(strfmt("pipe: %s", strerror(errno)), false);
    }
    if (pipe2(err_p, O_CLOEXEC) != 0) {
        for (int fd : {in_p[0], in_p[1], out_p[0], out_p[1]}) ::close(fd);
        throw McpError(strfmt("pipe: %s", strerror(errno)), false);
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in_p[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out_p[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err_p[1], 2);
    if (!cfg_.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cfg_.cwd.c_str());
#ifdef __GLIBC__
#if __GLIBC_PREREQ(2, 34)
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);  // the listening socket and clients' connections stay ours
#endif
#endif
    // Its own process group (close() signals the whole group), and the signals the server blocks (SIGINT,
    // SIGTERM: sigwait) or ignores (SIGPIPE) back to normal.
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&at, 0);
    sigset_t none, deflt;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&at, &none);
    sigemptyset(&deflt);
    for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP}) sigaddset(&deflt, s);
    posix_spawnattr_setsigdefault(&at, &deflt);

    std::vector<std::string> env_s;
    std::vector<char*> argv, envp;
    argv.push_back(const_cast<char*>(cfg_.command.c_str()));
    for (const std::string& a : cfg_.args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    char** env = environ;
    if (!cfg_.env.empty()) {
        for (char** e = environ; e && *e; ++e) {
            const std::string kv = *e;
            if (!cfg_.env.count(kv.substr(0, kv.find('=')))) env_s.push_back(kv);
        }
        for (const auto& [k, v] : cfg_.env) env_s.push_back(k + "=" + v);
        for (std::string& s : env_s) envp.push_back(s.data());
        envp.push_back(nullptr);
        env = envp.data();
    }
    const int rc = posix_spawnp(&pid_, cfg_.command.c_str(), &fa, &at, argv.data(), env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    for (int fd : {in_p[0], out_p[1], err_p[1]}) ::close(fd);
    if (rc != 0) {
        for (int fd : {in_p[1], out_p[0], err_p[0]}) ::close(fd);
        pid_ = -1;
        throw McpError(strfmt("cannot run '%s'%s: %s", cfg_.command.c_str(),
                              cfg_.cwd.empty() ? "" : (" in " + cfg_.cwd).c_str(), strerror(rc)),
                       false);
    }
    pgid_ = pid_;
    in_fd_ = in_p[1], out_fd_ = out_p[0], err_fd_ = err_p[0];
    for (int fd : {in_fd_, out_fd_, err_fd_}) set_nonblocking(fd);
}

void McpSession::start(Clock::time_point deadline, const std::atomic<bool>& cancel) {
    spawn();
    alive_ = true;
    io_ = std::thread([this] { io_loop(); });
    request("initialize",
            {{"protocolVersion", kProtocolVersion},
             {"capabilities", Json::object()},
             {"clientInfo", {{"name", "bee"}, {"version", "1.0"}}}},
            deadline, cancel);
    notify("notifications/initialized", Json());
}

// Reads stdout (replies) and stderr (logged, tail kept) until stdout ends, the child exits or close().
// Polled, so a grandchild that inherited the pipes and keeps them open cannot hold this thread.
void McpSession::io_loop() {
    std::string out_buf, err_buf;
    bool err_open = true, skipping = false;
    size_t scanned[2] = {0, 0};  // bytes of each buffer known to hold no newline
    auto take_lines = [&](std::string& buf, bool is_out) {
        size_t start = 0, pos;
        while ((pos = buf.find('\n', std::max(start, scanned[is_out]))) != std::string::npos) {
            std::string line = buf.substr(start, pos - start);
            start = pos + 1;
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (is_out && skipping) {
                skipping = false;
                continue;
            }
            if (line.empty()) continue;
            if (is_out) on_line(line);
            else {
                BEE_LOG_DEBUG("MCP '%s' stderr: %s", cfg_.name.c_str(), line.c_str());
                std::lock_guard<std::mutex> lk(mu_);
                err_tail_ += line + "\n";
                if (err_tail_.size() > kErrTail) err_tail_.erase(0, err_tail_.size() - kErrTail);
            }
        }
        buf.erase(0, start);
        scanned[is_out] = buf.size();
        if (buf.size() > kMaxLine) {
            if (is_out) {
                BEE_LOG_WARN("MCP '%s': dropped a line longer than %zu bytes", cfg_.name.c_str(), kMaxLine);
                skipping = true;
            }
            buf.clear();
            scanned[is_out] = 0;
        }
    };
    // Reads what is there; false at end of file or on an error.
    auto drain = [&](int fd, std::string& buf, bool is_out) {
        char chunk[65536];
        for (;;) {
            const ssize_t r = read(fd, chunk, sizeof chunk);
            if (r > 0) {
                buf.append(chunk, (size_t)r);
                take_lines(buf, is_out);
                continue;
            }
            if (r < 0 && errno == EINTR) continue;
            return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
        }
    };
    std::string why;
    while (!stop_.load()) {
        pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_open ? err_fd_ : -1, POLLIN, 0}};
        if (poll(fds, 2, kPollMs) < 0 && errno != EINTR) break;
        if (fds[1].revents && !drain(err_fd_, err_buf, false)) err_open = false;
        if (fds[0].revents && !drain(out_fd_, out_buf, true)) {
            int status = 0;
            why = "closed its stdout";
            if (wait_exit(pid_, 200, &status)) {  // it usually has just ended: say how
                why = describe_status(status);
                pid_ = -1;
            }
            break;
        }
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            drain(out_fd_, out_buf, true);  // the replies it wrote before it ended
            if (err_open) drain(err_fd_, err_buf, false);
            pid_ = -1;
            why = describe_status(status);
            break;
        }
    }
    std::lock_guard<std::mutex> lk(mu_);
    if (!stop_.load()) BEE_LOG_WARN("MCP server '%s' %s", cfg_.name.c_str(), why.c_str());
    if (!why.empty()) death_ = why;
    alive_ = false;
    cv_.notify_all();
}

void McpSession::on_line(const std::string& line) {
    Json msg;
    try {
        msg = parse_json_bounded(line, kMaxJsonDepth);
    } catch (const std::exception&) {
        BEE_LOG_DEBUG("MCP '%s': skipped a line that is not JSON: %.200s", cfg_.name.c_str(), line.c_str());
        return;
    }
    if (!msg.is_object()) return;
    const auto id = msg.find("id");
    const bool has_id = id != msg.end() && !id->is_null();
    if (msg.contains("method")) {  // a notification (skipped), or a request of the server's own
        if (!has_id) return;
        Json reply = {{"jsonrpc", "2.0"}, {"id", *id}};
        if (msg["method"] == "ping") reply["result"] = Json::object();
        else reply["error"] = {{"code", -32601}, {"message", "method not supported by this client"}};
        std::atomic<bool> no_cancel{false};
        write_line(dump_json(reply), Clock::now() + std::chrono::seconds(1), no_cancel);
        return;
    }
    if (!has_id || !id->is_number_integer()) return;
    std::lock_guard<std::mutex> lk(mu_);
    auto it = pending_.find(id->get<int64_t>());
    if (it == pending_.end()) return;  // the reply to a request that timed out
    it->second.reply = std::move(msg);
    it->second.done = true;
    cv_.notify_all();
}

bool McpSession::write_line(const std::string& line, Clock::time_point deadline, const std::atomic<bool>& cancel) {
    std::lock_guard<std::mutex> lk(write_mu_);
    const std::string data = line + "\n";
    size_t done = 0;
    while (done < data.size()) {
        if (in_fd_ < 0 || stop_.load() || !alive_.load() || cancel.load() || Clock::now() >= deadline) break;
        const ssize_t n = write(in_fd_, data.data() + done, data.size() - done);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break;  // EPIPE: it is gone
        pollfd p = {in_fd_, POLLOUT, 0};
        poll(&p, 1, kPollMs);
    }
    if (done == data.size()) return true;
    if (done > 0) alive_ = false;  // half a message went out: the stream cannot be resynchronized
    return false;
}

void McpSession::notify(const std::string& method, const Json& params) {
    Json msg = {{"jsonrpc", "2.0"}, {"method", method}};
    if (!params.is_null()) msg["params"] = params;
    std::atomic<bool> no_cancel{false};
    write_line(dump_json(msg), Clock::now() + std::chrono::milliseconds(cfg_.timeout_ms), no_cancel);
}

Json McpSession::request(const std::string& method, const Json& params, Clock::time_point deadline,
                         const std::atomic<bool>& cancel) {
    int64_t id;
    {
        std::lock_guard<std::mutex> lk(mu_);
        id = next_id_++;
        pending_[id];
    }
    Json msg = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
    if (!write_line(dump_json(msg), deadline, cancel)) {
        std::lock_guard<std::mutex> lk(mu_);
        pending_.erase(id);
        if (cancel.load()) throw McpError("cancelled: the server is shutting down", false);
        throw McpError(alive_.load() ? "could not send '" + method + "' in time" : describe_death(), false);
    }
    std::unique_lock<std::mutex> lk(mu_);
    Json reply;
    for (;;) {
        Pending& p = pending_[id];
        if (p.done) {
            reply = std::move(p.reply);
            pending_.erase(id);
            break;
        }
        std::string err;
        const bool late = Clock::now() >= deadline;
        if (!alive_.load()) err = describe_death();
        else if (cancel.load()) err = "cancelled: the server is shutting down";
        else if (late) err = strfmt("no reply to '%s' in time", method.c_str());
        if (!err.empty()) {
            pending_.erase(id);
            throw McpError(err, true, late && alive_.load());
        }
        cv_.wait_for(lk, std::chrono::milliseconds(kPollMs));
    }
    if (const auto e = reply.find("error"); e != reply.end() && !e->is_null()) {
        const std::string m = e->is_object() && (*e).contains("message") && (*e)["message"].is_string()
                                  ? (*e)["message"].get<std::string>()
                                  : e->dump();
        throw McpError(m, true);
    }
    return reply.value("result", Json());
}

std::string McpSession::describe_death() const {
    // note: called with mu_ held or not; death_ and err_tail_ are read without taking it again
    std::string s = "the MCP server " + (death_.empty() ? std::string("has stopped") : death_);
    std::string tail = err_tail_;
    while (!tail.empty() && tail.back() == '\n') tail.pop_back();
    if (const size_t nl = tail.rfind('\n'); nl != std::string::npos) tail = tail.substr(nl + 1);
    if (!tail.empty()) s += " (stderr: " + tail.substr(0, 300) + ")";
    return s;
}

std::string McpSession::stderr_tail() const {
    std::lock_guard<std::mutex> lk(mu_);
    return err_tail_;
}

void McpSession::close() {
    std::lock_guard<std::mutex> close_lk(close_mu_);
    stop_ = true;
    if (io_.joinable()) io_.join();
    {
        std::lock_guard<std::mutex> lk(mu_);
        alive_ = false;
        cv_.notify_all();
    }
    {
        std::lock_guard<std::mutex> lk(write_mu_);
        close_fd(in_fd_);  // EOF on its stdin: the polite way to end an MCP stdio server
    }
    if (pid_ > 0) {
        int status = 0;
        if (!wait_exit(pid_, 100, &status)) {
            kill(-pid_, SIGTERM);
            if (!wait_exit(pid_, 300, &status)) {
                kill(-pid_, SIGKILL);
                waitpid(pid_, &status, 0);
            }
        }
        pid_ = -1;
    }
    if (pgid_ > 0) kill(-pgid_, SIGKILL);  // what is left of its process group (grandchildren holding the pipes)
    pgid_ = -1;
    close_fd(out_fd_);
    close_fd(err_fd_);
}

// --- configuration ---

std::vector<McpServerConfig> parse_mcp_servers(const std::string& text, const std::string& where) {
    Json j;
    try {
        j = Json::parse(text);
    } catch (const std::exception& e) {
        fail("%s: not valid JSON (%s); expected {\"mcpServers\": {\"NAME\": {\"command\": ..., \"args\": [...]}}}",
             where.c_str(), e.what());
    }
    if (!j.is_object()) fail("%s: expected a JSON object {\"mcpServers\": {...}}", where.c_str());
    std::vector<McpServerConfig> out;
    if (!j.contains("mcpServers")) {
        BEE_LOG_WARN("%s: no \"mcpServers\" object: no MCP servers", where.c_str());
        return out;
    }
    const Json& servers = j["mcpServers"];
    if (!servers.is_object()) fail("%s: \"mcpServers\" must be an object of NAME: {\"command\", ...}", where.c_str());
    for (const auto& [name, e] : servers.items()) {
        const std::string at = where + ": mcpServers." + name;
        if (name.empty()) fail("%s: a server name cannot be empty", where.c_str());
        if (!e.is_object()) fail("%s must be an object with \"command\" and \"args\"", at.c_str());
        McpServerConfig c;
        c.name = name;
        auto str = [&](const char* key, std::string& dst) {
            if (!e.contains(key) || e[key].is_null()) return;
            if (!e[key].is_string()) fail("%s.%s must be a string", at.c_str(), key);
            dst = e[key].get<std::string>();
        };
        str("command", c.command);
        str("cwd", c.cwd);
        if (c.command.empty()) {
            BEE_LOG_WARN("%s: no \"command\" (only servers run over stdio are supported): skipped", at.c_str());
            continue;
        }
        if (e.contains("args") && !e["args"].is_null()) {
            if (!e["args"].is_array()) fail("%s.args must be an array of strings", at.c_str());
            for (const Json& a : e["args"]) {
                if (!a.is_string())
                    fail("%s.args must be an array of strings (found %s)", at.c_str(), a.dump().c_str());
                c.args.push_back(a.get<std::string>());
            }
        }
        if (e.contains("env") && !e["env"].is_null()) {
            if (!e["env"].is_object()) fail("%s.env must be an object of strings", at.c_str());
            for (const auto& [k, v] : e["env"].items()) {
                if (!v.is_string()) fail("%s.env.%s must be a string", at.c_str(), k.c_str());
                c.env[k] = v.get<std::string>();
            }
        }
        if (e.contains("timeout_ms") && !e["timeout_ms"].is_null()) {
            const Json& t = e["timeout_ms"];
            if (!t.is_number_integer() || t.get<int64_t>() < 1 || t.get<int64_t>() > 86400000)
                fail("%s.timeout_ms must be a whole number of milliseconds (1 to 86400000)", at.c_str());
            c.timeout_ms = t.get<int>();
        }
        out.push_back(std::move(c));
    }
    return out;
}

}  // namespace bee::server
