// server/http_util: errors, JSON body and field parsing, SSE framing.
#include "server/http_util.h"

#include "server/http_conn.h"

#include <arpa/inet.h>
#include <cmath>
#include <dirent.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace bee::server {

void bad_request(const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    throw HttpError(400, "invalid_request_error", buf);
}

Json error_json(int status, const std::string& type, const std::string& message, const Json& extra) {
    Json e = {{"code", status}, {"message", message}, {"type", type}};
    for (auto it = extra.begin(); it != extra.end(); ++it) e[it.key()] = it.value();
    return Json{{"error", e}};
}

std::string dump_json(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string base64_encode(const uint8_t* p, size_t n) {
    static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((n + 2) / 3 * 4);
    for (size_t i = 0; i < n; i += 3) {
        const uint32_t b =
            (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        out += kAlphabet[b >> 18 & 63];
        out += kAlphabet[b >> 12 & 63];
        out += i + 1 < n ? kAlphabet[b >> 6 & 63] : '=';
        out += i + 2 < n ? kAlphabet[b & 63] : '=';
    }
    return out;
}

void send_json(httplib::Response& res, const Json& j, int status) {
    res.status = status;
    res.set_content(dump_json(j), "application/json; charset=utf-8");
}

void send_error(httplib::Response& res, const HttpError& e) {
    send_json(res, error_json(e.status, e.type, e.what(), e.extra), e.status);
}

static const Json* field(const Json& body, const char* key) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) return nullptr;
    return &*it;
}

bool get_bool(const Json& body, const char* key, bool def) {
    const Json* v = field(body, key);
    if (!v) return def;
    if (!v->is_boolean()) bad_request("'%s' must be a boolean (true or false)", key);
    return v->get<bool>();
}

int64_t get_int(const Json& body, const char* key, int64_t def, int64_t lo, int64_t hi) {
    const Json* v = field(body, key);
    if (!v) return def;
    int64_t x = 0;
    // note: values past int64's range are refused before any conversion (a double's is undefined, a
    // uint64's wraps: 2^64 - 1 would read as -1).
    constexpr double kTwo63 = 9223372036854775808.0;
    if (v->is_number_unsigned() && v->get<uint64_t>() > (uint64_t)INT64_MAX) {
        bad_request("'%s' is %llu but must be in [%lld, %lld]", key, (unsigned long long)v->get<uint64_t>(),
                    (long long)lo, (long long)hi);
    } else if (v->is_number_integer()) {
        x = v->get<int64_t>();
    } else if (v->is_number_float() && v->get<double>() == std::trunc(v->get<double>())) {
        const double d = v->get<double>();  // 64.0 is accepted as 64, as JSON encoders sometimes write it
        if (!(d >= -kTwo63 && d < kTwo63))
            bad_request("'%s' is %g but must be in [%lld, %lld]", key, d, (long long)lo, (long long)hi);
        x = (int64_t)d;
    } else {
        bad_request("'%s' must be an integer", key);
    }
    if (x < lo || x > hi)
        bad_request("'%s' is %lld but must be in [%lld, %lld]", key, (long long)x, (long long)lo, (long long)hi);
    return x;
}

double get_number(const Json& body, const char* key, double def) {
    const Json* v = field(body, key);
    if (!v) return def;
    if (!v->is_number()) bad_request("'%s' must be a number", key);
    return v->get<double>();
}

std::string get_string(const Json& body, const char* key, const std::string& def) {
    const Json* v = field(body, key);
    if (!v) return def;
    if (!v->is_string()) bad_request("'%s' must be a string", key);
    return v->get<std::string>();
}

// note: one hash lookup in the kernel. Reading /proc/net/tcp instead walks the whole established hash
// table whatever it holds; on a large host that is ~20 ms of kernel time per read, twice a second per
// waiting request, taken from the inference threads (measured: 2.3% of a single-stream server's CPU
// profile).
int tcp_state(const httplib::Request& req) {
    const int family = req.local_addr.find(':') != std::string::npos ? AF_INET6 : AF_INET;
    struct {
        nlmsghdr nlh;
        inet_diag_req_v2 r;
    } msg{};
    msg.nlh.nlmsg_len = sizeof msg;
    msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    msg.nlh.nlmsg_flags = NLM_F_REQUEST;
    msg.r.sdiag_family = (uint8_t)family;
    msg.r.sdiag_protocol = IPPROTO_TCP;
    msg.r.idiag_states = ~0u;
    msg.r.id.idiag_sport = htons((uint16_t)req.local_port);  // "source": the socket's own end
    msg.r.id.idiag_dport = htons((uint16_t)req.remote_port);
    msg.r.id.idiag_cookie[0] = msg.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    if (req.local_port < 0 || req.remote_port < 0 ||
        inet_pton(family, req.local_addr.c_str(), msg.r.id.idiag_src) != 1 ||
        inet_pton(family, req.remote_addr.c_str(), msg.r.id.idiag_dst) != 1)
        return -1;
    const int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0) return -1;
    timeval tv{1, 0};  // never hang a request on a kernel that does not answer
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_nl nl{};
    nl.nl_family = AF_NETLINK;
    int state = -1;
    alignas(nlmsghdr) char buf[4096];
    if (sendto(fd, &msg, sizeof msg, 0, (sockaddr*)&nl, sizeof nl) == (ssize_t)sizeof msg) {
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        const nlmsghdr* h = (const nlmsghdr*)buf;
        if (n >= (ssize_t)sizeof(nlmsghdr) && NLMSG_OK(h, (size_t)n) && h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
            h->nlmsg_len >= NLMSG_LENGTH(sizeof(inet_diag_msg)))
            state = ((const inet_diag_msg*)NLMSG_DATA(h))->idiag_state;
    }
    close(fd);
    return state;
}

bool peer_closed(const httplib::Request& req) {
    if (const ConnStream* c = current_conn()) return c->peer_gone();  // a reset too, not only a close
    if (req.local_port < 0 || req.remote_port < 0) return false;
    const int known = tcp_state(req);
    if (known >= 0) return known == kTcpCloseWait;
    for (const char* path : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        FILE* f = fopen(path, "r");
        if (!f) continue;
        char line[512];
        bool closed = false;
        while (fgets(line, sizeof line, f)) {
            // "  sl: LOCALADDR:PORT REMADDR:PORT ST ..." with addresses and ports in hex
            char local[64], remote[64];
            unsigned state = 0;
            if (sscanf(line, " %*d: %63s %63s %x", local, remote, &state) != 3) continue;
            const char* lp = strrchr(local, ':');
            const char* rp = strrchr(remote, ':');
            if (!lp || !rp) continue;
            if ((int)strtol(lp + 1, nullptr, 16) == req.local_port &&
                (int)strtol(rp + 1, nullptr, 16) == req.remote_port) {
                closed = (int)state == kTcpCloseWait;
                break;
            }
        }
        fclose(f);
        if (closed) return true;
    }
    return false;
}

std::string sse_data(const Json& j) { return "data: " + dump_json(j) + "\n\n"; }

// note: cpp-httplib 0.11 keeps no list of its connections, so they are found among the process's
// file descriptors: connected sockets whose local port is the server's.
void shutdown_accepted_connections(int port) {
    DIR* dir = opendir("/proc/self/fd");
    if (!dir) return;
    while (const dirent* e = readdir(dir)) {
        const int fd = atoi(e->d_name);
        struct stat st;
        if (fd <= 2 || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
        sockaddr_storage local{}, peer{};
        socklen_t n_local = sizeof local, n_peer = sizeof peer;
        if (getsockname(fd, (sockaddr*)&local, &n_local) != 0 || getpeername(fd, (sockaddr*)&peer, &n_peer) != 0)
            continue;  // not a connection (the listening socket, a pipe-like socket)
        int local_port = -1;
        if (local.ss_family == AF_INET) local_port = ntohs(((const sockaddr_in*)&local)->sin_port);
        if (local.ss_family == AF_INET6) local_port = ntohs(((const sockaddr_in6*)&local)->sin6_port);
        if (local_port == port) shutdown(fd, SHUT_RDWR);
    }
    closedir(dir);
}

const Json* opt_field(const Json& o, const char* key) {
    auto it = o.find(key);
    return it == o.end() || it->is_null() ? nullptr : &*it;
}

std::string need_string(const Json& o, const char* key, const std::string& where) {
    const Json* v = opt_field(o, key);
    if (!v || !v->is_string()) bad_request("%s.%s must be a string", where.c_str(), key);
    return v->get<std::string>();
}

Json function_tool(const Json& o, const char* schema_key, const std::string& where) {
    Json fn = {{"name", need_string(o, "name", where)}};
    if (opt_field(o, "description")) fn["description"] = need_string(o, "description", where);
    const Json* schema = opt_field(o, schema_key);
    if (schema && !schema->is_object()) bad_request("%s.%s must be an object", where.c_str(), schema_key);
    fn["parameters"] = schema ? *schema : Json{{"type", "object"}};
    return {{"type", "function"}, {"function", std::move(fn)}};
}

}  // namespace bee::server
