// server/http_conn: the connection stream, keep-alive loop and growing worker pool (see the header).
#include "server/http_conn.h"

#include <netdb.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <thread>

namespace bee::server {

namespace {

thread_local ConnStream* t_conn = nullptr;

using Clock = std::chrono::steady_clock;

int ms_until(Clock::time_point t) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
    return ms <= 0 ? 0 : (int)std::min<int64_t>(ms, INT32_MAX);
}

// poll() for `events` on fd; the revents (0 on timeout or error).
short poll_fd(int fd, short events, int timeout_ms) {
    pollfd p{fd, events, 0};
    for (;;) {
        const int r = poll(&p, 1, timeout_ms);
        if (r > 0) return p.revents;
        if (r == 0 || errno != EINTR) return 0;
    }
}

void name_of(int fd, bool peer, std::string& ip, int& port) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    const int r = peer ? getpeername(fd, (sockaddr*)&a, &len) : getsockname(fd, (sockaddr*)&a, &len);
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    if (r != 0 ||
        getnameinfo((sockaddr*)&a, len, host, sizeof host, serv, sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return;
    ip = host;
    port = atoi(serv);
}

// After refusing a request whose body was not read: send FIN, then read and drop what the client is
// still sending for a moment, so closing does not reset the connection before it reads the answer.
void lingering_close(int fd) {
    shutdown(fd, SHUT_WR);
    char sink[16384];
    const Clock::time_point end = Clock::now() + std::chrono::milliseconds(500);
    for (size_t total = 0; total < (1u << 20);) {
        const int wait = ms_until(end);
        if (wait == 0 || !(poll_fd(fd, POLLIN, wait) & (POLLIN | POLLHUP | POLLERR))) break;
        const ssize_t n = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n <= 0) break;
        total += (size_t)n;
    }
    close(fd);
}

}  // namespace

ConnStream* current_conn() { return t_conn; }

bool ConnStream::wait_readable(int timeout_ms) const {
    if (deadline_armed_) timeout_ms = std::min(timeout_ms, ms_until(deadline_));
    if (timeout_ms <= 0) return false;
    return poll_fd(fd_, POLLIN, timeout_ms) != 0;
}

bool ConnStream::is_readable() const { return has_buffered() || wait_readable(lim_.idle_read_timeout_ms); }

bool ConnStream::is_writable() const {
    const short r = poll_fd(fd_, POLLOUT | POLLRDHUP, lim_.write_timeout_ms);
    return (r & POLLOUT) && !(r & (POLLERR | POLLHUP | POLLRDHUP));
}

void ConnStream::begin_request() {
    phase_ = Phase::headers;
    deadline_ = Clock::now() + std::chrono::milliseconds(lim_.header_timeout_ms);
    deadline_armed_ = true;
    phase_bytes_ = 0;
    body_too_large_ = false;
    raw_.clear();
}

void ConnStream::headers_done() {
    phase_ = Phase::body;
    deadline_ = Clock::now() + std::chrono::milliseconds(lim_.body_timeout_ms);
    phase_bytes_ = 0;
}

ssize_t ConnStream::read(char* ptr, size_t size) {
    if (buf_at_ == buf_len_) {
        // A read that times out or fails ends the connection (httplib would answer 400 and keep it).
        if (!wait_readable(lim_.idle_read_timeout_ms)) {
            close_after_ = true;
            return -1;
        }
        ssize_t n;
        do n = recv(fd_, buf_, sizeof buf_, 0);
        while (n < 0 && errno == EINTR);
        if (n <= 0) {
            close_after_ = true;
            return n;
        }
        buf_at_ = 0;
        buf_len_ = (size_t)n;
    }
    const size_t n = std::min(size, buf_len_ - buf_at_);
    if (phase_ == Phase::headers) {
        if (raw_.size() + n > lim_.max_header_bytes) {
            close_after_ = true;
            return -1;
        }
        raw_.append(buf_ + buf_at_, n);
    } else if (phase_ == Phase::body) {
        // note: raw bytes include the chunked framing; the decoded body is checked exactly in the handler.
        phase_bytes_ += n;
        if (phase_bytes_ > lim_.max_body_bytes + lim_.max_body_bytes / 8 + 65536) {
            body_too_large_ = close_after_ = true;
            return -1;
        }
    }
    memcpy(ptr, buf_ + buf_at_, n);
    buf_at_ += n;
    return (ssize_t)n;
}

ssize_t ConnStream::write(const char* ptr, size_t size) {
    if (!(poll_fd(fd_, POLLOUT, lim_.write_timeout_ms) & POLLOUT)) return -1;
    ssize_t n;
    do n = send(fd_, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
}

void ConnStream::get_remote_ip_and_port(std::string& ip, int& port) const { name_of(fd_, true, ip, port); }
void ConnStream::get_local_ip_and_port(std::string& ip, int& port) const { name_of(fd_, false, ip, port); }

bool ConnStream::peer_gone() const { return poll_fd(fd_, POLLRDHUP, 0) & (POLLRDHUP | POLLERR | POLLHUP); }

bool BeeHttplibServer::process_and_close_socket(int sock) {
    ConnStream strm(sock, limits);
    t_conn = &strm;
    for (size_t left = limits.keep_alive_max; left > 0 && svr_sock_ != -1; left--) {
        if (!strm.has_buffered() &&
            !(poll_fd(sock, POLLIN, limits.keep_alive_timeout_ms) & (POLLIN | POLLHUP | POLLERR)))
            break;
        strm.begin_request();
        bool closed = false;
        if (!process_request(strm, left == 1, closed, nullptr) || closed || strm.closing()) break;
    }
    t_conn = nullptr;
    if (strm.closing()) {
        lingering_close(sock);
    } else {
        shutdown(sock, SHUT_RDWR);
        close(sock);
    }
    return true;
}

void GrowingThreadPool::enqueue(std::function<void()> fn) {
    std::unique_lock<std::mutex> lk(mu_);
    jobs_.push_back(std::move(fn));
    if (jobs_.size() > n_idle_ && n_threads_ < n_max_) {
        n_threads_++;
        std::thread([this] { worker(); }).detach();
    }
    lk.unlock();
    cv_.notify_one();
}

void GrowingThreadPool::worker() {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
        n_idle_++;
        const bool woke = cv_.wait_for(lk, std::chrono::seconds(10), [&] { return stop_ || !jobs_.empty(); });
        n_idle_--;
        if (jobs_.empty()) {
            if (stop_ || (!woke && n_threads_ > n_keep_)) break;
            continue;
        }
        std::function<void()> fn = std::move(jobs_.front());
        jobs_.pop_front();
        lk.unlock();
        fn();
        lk.lock();
    }
    if (--n_threads_ == 0) exit_cv_.notify_all();
}

void GrowingThreadPool::shutdown() {
    std::unique_lock<std::mutex> lk(mu_);
    stop_ = true;
    cv_.notify_all();
    exit_cv_.wait(lk, [&] { return n_threads_ == 0; });
}

bool key_equals(std::string_view given, std::string_view key) {
    unsigned diff = given.size() != key.size();
    for (size_t i = 0; i < key.size(); i++)
        diff |= (unsigned char)key[i] ^ (unsigned char)(i < given.size() ? given[i] : 0);
    return diff == 0;
}

std::string raw_header_value(std::string_view raw, std::string_view name, bool* found) {
    *found = false;
    size_t at = raw.find('\n');  // skip the request line
    while (at != std::string_view::npos && at + 1 < raw.size()) {
        const size_t begin = at + 1;
        size_t end = raw.find('\n', begin);
        if (end == std::string_view::npos) end = raw.size();
        std::string_view line = raw.substr(begin, end - begin);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) break;  // end of the headers
        const size_t colon = line.find(':');
        if (colon == name.size() && strncasecmp(line.data(), name.data(), name.size()) == 0) {
            std::string_view v = line.substr(colon + 1);
            while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
            while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
            *found = true;
            return std::string(v);
        }
        at = end;
    }
    return "";
}

}  // namespace bee::server
