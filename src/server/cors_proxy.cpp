// server/cors_proxy: the web page's proxy to MCP servers over HTTP (llama-server's --ui-mcp-proxy).
#include "server/cors_proxy.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "base/log.h"
#include "server/routes.h"

namespace bee::server {

namespace {

constexpr const char* kHeaderPrefix = "x-llama-server-proxy-header-";
constexpr size_t kMaxBuffered = 4u << 20;  // the target is paused while this much waits for the client

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return (char)std::tolower(c); });
    return s;
}

// The url parameter, read from the raw request target: this httplib splits a decoded query at every '=',
// which would cut an encoded URL that has a query of its own.
std::string url_param(const httplib::Request& req) {
    const size_t q = req.target.find('?');
    if (q != std::string::npos) {
        const std::string query = req.target.substr(q + 1);
        for (size_t pos = 0; pos <= query.size();) {
            size_t amp = query.find('&', pos);
            if (amp == std::string::npos) amp = query.size();
            if (query.compare(pos, 4, "url=") == 0)
                return httplib::detail::decode_url(query.substr(pos + 4, amp - pos - 4), false);
            pos = amp + 1;
        }
    }
    return req.get_param_value("url");
}

struct Target {
    std::string host;  // without brackets for IPv6
    int port = 80;
    std::string path;  // with the query
};

// http://[user@]host[:port][/path][?query] (the fragment dropped); 400 for anything else.
Target parse_target(const std::string& url) {
    auto bad = [&url](const std::string& why) {
        throw HttpError(400, "invalid_request_error", "/cors-proxy: url '" + url.substr(0, 200) + "': " + why);
    };
    if (url.empty()) bad("missing: give the target as ?url=http://host:port/path");
    const size_t sep = url.find("://");
    if (sep == std::string::npos) bad("no scheme (expected http://...)");
    const std::string scheme = lower(url.substr(0, sep));
    if (scheme == "https") bad("https is not supported: this build has no TLS client (use an http:// URL)");
    if (scheme != "http") bad("unsupported scheme '" + scheme + "' (only http)");
    std::string rest = url.substr(sep + 3);
    rest = rest.substr(0, rest.find('#'));
    const size_t end = rest.find_first_of("/?");
    std::string authority = rest.substr(0, end);
    Target t;
    t.path = end == std::string::npos ? "/" : rest.substr(end);
    if (t.path[0] == '?') t.path = "/" + t.path;
    if (const size_t at = authority.rfind('@'); at != std::string::npos) {
        if (authority.substr(0, at).find(':') != std::string::npos) bad("a password in the URL is not supported");
        authority = authority.substr(at + 1);
    }
    std::string port;
    if (!authority.empty() && authority[0] == '[') {
        const size_t close = authority.find(']');
        if (close == std::string::npos) bad("unterminated IPv6 address");
        t.host = authority.substr(1, close - 1);
        if (close + 1 < authority.size()) {
            if (authority[close + 1] != ':') bad("unexpected text after the IPv6 address");
            port = authority.substr(close + 2);
        }
    } else {
        const size_t colon = authority.find(':');
        t.host = authority.substr(0, colon);
        if (colon != std::string::npos) port = authority.substr(colon + 1);
    }
    if (t.host.empty()) bad("no host");
    if (!port.empty()) {
        const bool digits = port.size() <= 5 && std::all_of(port.begin(), port.end(), ::isdigit);
        if (!digits || std::stoi(port) < 1 || std::stoi(port) > 65535) bad("invalid port '" + port + "'");
        t.port = std::stoi(port);
    }
    return t;
}

// What the client thread hands to the handler: the head, then body chunks, then the end.
struct Relay {
    std::mutex mu;
    std::condition_variable cv;
    bool head = false, done = false, cancelled = false;
    int status = 0;
    httplib::Headers headers;
    std::deque<std::string> chunks;
    size_t buffered = 0;
    std::string error;

    void set_head(const httplib::Response& r) {
        head = true;
        status = r.status;
        headers = r.headers;
    }
};

// Headers of the target's answer that the proxy must not copy: its own framing, and CORS (ours applies).
bool skip_response_header(const std::string& lowered) {
    return lowered == "content-length" || lowered == "transfer-encoding" || lowered == "connection" ||
           lowered == "keep-alive" || lowered == "server" || lowered == "content-type" ||
           lowered.rfind("access-control-", 0) == 0;
}

void proxy(const httplib::Request& req, httplib::Response& res, int timeout_s) {
    const Target t = parse_target(url_param(req));
    httplib::Request out;
    out.method = req.method;
    out.path = t.path;
    out.body = req.body;
    bool has_type = false;
    for (const auto& [key, value] : req.headers) {
        const std::string k = lower(key);
        if (k.rfind(kHeaderPrefix, 0) != 0 || k.size() == strlen(kHeaderPrefix)) continue;
        const std::string name = key.substr(strlen(kHeaderPrefix));
        const std::string n = lower(name);
        if (n == "host" || n == "content-length" || n == "transfer-encoding" || n == "accept-encoding" ||
            n == "connection")
            continue;
        has_type |= n == "content-type";
        out.headers.emplace(name, value);
    }
    if (!has_type && !req.body.empty() && req.has_header("Content-Type"))
        out.headers.emplace("Content-Type", req.get_header_value("Content-Type"));
    BEE_LOG_INFO("cors-proxy: %s http://%s:%d%s", req.method.c_str(), t.host.c_str(), t.port, t.path.c_str());

    auto relay = std::make_shared<Relay>();
    out.response_handler = [relay](const httplib::Response& r) {
        std::lock_guard<std::mutex> lk(relay->mu);
        relay->set_head(r);
        relay->cv.notify_all();
        return !relay->cancelled;
    };
    out.content_receiver = [relay](const char* data, size_t n, uint64_t, uint64_t) {
        std::unique_lock<std::mutex> lk(relay->mu);
        relay->cv.wait(lk, [&] { return relay->buffered < kMaxBuffered || relay->cancelled; });
        if (relay->cancelled) return false;
        relay->chunks.emplace_back(data, n);
        relay->buffered += n;
        relay->cv.notify_all();
        return true;
    };
    // The target is asked on a thread of its own, so that its head can be answered before its body ends.
    std::thread([relay, t, out = std::move(out), timeout_s]() mutable {
        httplib::Client cli(t.host, t.port);
        cli.set_connection_timeout(std::min(timeout_s, 30), 0);
        cli.set_read_timeout(timeout_s, 0);
        cli.set_write_timeout(timeout_s, 0);
        cli.set_follow_location(true);
        httplib::Result r = cli.send(out);
        std::lock_guard<std::mutex> lk(relay->mu);
        if (!r) relay->error = httplib::to_string(r.error());
        else if (!relay->head) relay->set_head(*r);  // no response_handler call for a body-less answer (204)
        relay->done = true;
        relay->cv.notify_all();
    }).detach();

    std::unique_lock<std::mutex> lk(relay->mu);
    relay->cv.wait(lk, [&] { return relay->head || relay->done; });
    if (!relay->head) {
        BEE_LOG_WARN("cors-proxy: http://%s:%d%s: %s", t.host.c_str(), t.port, t.path.c_str(), relay->error.c_str());
        throw HttpError(502, "server_error", "/cors-proxy: the target could not be reached: " + relay->error);
    }
    res.status = relay->status;
    std::string type = "application/octet-stream";
    for (const auto& [key, value] : relay->headers) {
        const std::string k = lower(key);
        if (k == "content-type") type = value;
        if (!skip_response_header(k)) res.set_header(key, value);
    }
    if (relay->status == 204 || relay->status == 304 || relay->status < 200) return;  // no body
    if (relay->done) {  // all of it is here already: one plain response
        std::string body;
        for (const std::string& c : relay->chunks) body += c;
        res.set_content(body, type.c_str());
        return;
    }
    lk.unlock();
    res.set_chunked_content_provider(
        type,
        [relay](size_t, httplib::DataSink& sink) {
            std::unique_lock<std::mutex> lk(relay->mu);
            while (relay->chunks.empty() && !relay->done) {
                relay->cv.wait_for(lk, std::chrono::milliseconds(100));
                if (!sink.is_writable()) return false;
            }
            if (relay->chunks.empty()) {  // done
                sink.done();
                return true;
            }
            std::string c = std::move(relay->chunks.front());
            relay->chunks.pop_front();
            relay->buffered -= c.size();
            relay->cv.notify_all();
            lk.unlock();
            return sink.write(c.data(), c.size());
        },
        [relay](bool) {
            std::lock_guard<std::mutex> lk(relay->mu);
            relay->cancelled = true;  // the client left (or all was sent): stop reading the target
            relay->cv.notify_all();
        });
}

}  // namespace

void register_cors_proxy_routes(httplib::Server& svr, bool enabled, int timeout_s) {
    auto handler = [enabled, timeout_s](const httplib::Request& req, httplib::Response& res) {
        if (!enabled)
            throw HttpError(403, "permission_error", "the CORS proxy is off: start the server with --ui-mcp-proxy");
        proxy(req, res, timeout_s);
    };
    svr.Get("/cors-proxy", guarded(handler));
    svr.Post("/cors-proxy", guarded(handler));
}

}  // namespace bee::server
