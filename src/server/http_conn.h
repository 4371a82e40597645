// server/http_conn: Bee's own connection handling under cpp-httplib — the socket stream with read
// deadlines and a raw byte limit per request, the keep-alive loop, the worker pool that grows with the
// connections, and what a handler may ask about the connection it runs on (raw headers, liveness).
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include <httplib.h>

namespace bee::server {

// note: Debian's cpp-httplib 0.11 reads a request with a per-read timeout only (a client sending one
// byte every few seconds holds a worker forever), skips an oversized Content-Length by reading all of
// it, reads chunked bodies without --max-body-bytes, and percent-decodes header values. Its
// Server::process_request is protected and Stream is a public interface, so the reading side is ours.
struct ConnLimits {
    int header_timeout_ms = 10'000;      // request line + headers complete within this, from the first byte
    int body_timeout_ms = 60'000;        // the whole body within this, once the headers are in
    int idle_read_timeout_ms = 5'000;    // no byte for this long while reading a request: dropped
    int keep_alive_timeout_ms = 5'000;   // an idle keep-alive connection is closed after this
    size_t keep_alive_max = 100;         // requests per connection
    int write_timeout_ms = 600'000;      // --timeout: one write may wait this long for the client
    size_t max_header_bytes = 64 << 10;  // request line + headers
    size_t max_body_bytes = 16 << 20;    // --max-body-bytes (decoded); the raw read is bounded a bit above
};

// One connection; lives on the worker thread that serves it.
class ConnStream : public httplib::Stream {
public:
    ConnStream(int fd, const ConnLimits& limits) : fd_(fd), lim_(limits) {}

    bool is_readable() const override;
    bool is_writable() const override;
    ssize_t read(char* ptr, size_t size) override;
    ssize_t write(const char* ptr, size_t size) override;
    void get_remote_ip_and_port(std::string& ip, int& port) const override;
    void get_local_ip_and_port(std::string& ip, int& port) const override;
    int socket() const override { return fd_; }

    // Phases of one request: headers (deadline from the first byte) -> body -> handler (no reads).
    void begin_request();
    void headers_done();
    void body_done() { phase_ = Phase::handling; }
    bool has_buffered() const { return buf_at_ < buf_len_; }
    // The request line and header bytes exactly as received (for the API key: no percent-decoding).
    const std::string& raw_headers() const { return raw_; }
    bool body_too_large() const { return body_too_large_; }
    void close_after() { close_after_ = true; }
    bool closing() const { return close_after_; }
    // The peer reset or closed (FIN) its side; a handler waiting on inference asks this.
    bool peer_gone() const;
    const ConnLimits& limits() const { return lim_; }

private:
    enum class Phase { headers, body, handling };
    bool wait_readable(int timeout_ms) const;
    int fd_;
    const ConnLimits& lim_;
    char buf_[4096];
    size_t buf_at_ = 0, buf_len_ = 0;
    Phase phase_ = Phase::headers;
    std::chrono::steady_clock::time_point deadline_{};
    bool deadline_armed_ = false;
    size_t phase_bytes_ = 0;
    bool body_too_large_ = false;
    bool close_after_ = false;
    std::string raw_;
};

// The connection the calling thread is serving (null outside a request, e.g. in tests).
ConnStream* current_conn();

// An httplib::Server whose sockets are served by ConnStream and Bee's keep-alive loop.
class BeeHttplibServer : public httplib::Server {
public:
    ConnLimits limits;

private:
    bool process_and_close_socket(int sock) override;
};

// A worker pool for connections: a thread per connection in flight, up to `n_max` (then jobs queue);
// threads above `n_keep` leave after a few idle seconds. Idle or slow connections cannot starve
// /health while the pool can grow, and the read deadlines bound how long each holds a thread.
class GrowingThreadPool : public httplib::TaskQueue {
public:
    GrowingThreadPool(size_t n_keep, size_t n_max) : n_keep_(n_keep), n_max_(n_max < 1 ? 1 : n_max) {}
    void enqueue(std::function<void()> fn) override;
    void shutdown() override;

private:
    void worker();
    std::mutex mu_;
    std::condition_variable cv_, exit_cv_;
    std::deque<std::function<void()>> jobs_;
    size_t n_keep_, n_max_, n_threads_ = 0, n_idle_ = 0;
    bool stop_ = false;
};

// Constant-time equality of the key a client sent and a configured key (no early exit on a mismatch).
bool key_equals(std::string_view given, std::string_view key);
// The value of header `name` (case-insensitive) in raw request bytes, exactly as sent after the colon
// and optional whitespace; `found` false if absent.
std::string raw_header_value(std::string_view raw, std::string_view name, bool* found);

}  // namespace bee::server
