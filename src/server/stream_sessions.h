// server/stream_sessions: llama-server's resumable streams. A streamed completion whose request carries
// `X-Conversation-Id` keeps a copy of its SSE bytes as a session under that id, so a client that lost the
// connection (a page reload) can replay it from a byte offset and follow it live (GET /v1/stream), stop it
// (DELETE /v1/stream) or ask which of its conversations have one (POST /v1/streams/lookup). Memory is
// bounded: at most kMaxSessions sessions of at most kMaxSessionBytes each (the oldest bytes go first), and
// a finished session is dropped kSessionTtlSeconds after its end.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/http_util.h"

namespace bee::server {

constexpr size_t kMaxSessions = 32;            // live and finished together
constexpr size_t kMaxSessionBytes = 4u << 20;  // per session (llama-server's ring size)
constexpr int64_t kSessionTtlSeconds = 300;    // a finished session's lifetime
constexpr size_t kMaxConvIdBytes = 512;        // a longer X-Conversation-Id gets no session
constexpr size_t kMaxLookupIds = 1024;         // ids read from one lookup body

// The SSE bytes of one streamed generation. The producer appends and finishes; any number of readers
// read from an offset, waiting for more until the end. Cancelling tells the producer to stop generating.
class StreamSession {
public:
    explicit StreamSession(std::string conv_id);

    const std::string& conv_id() const { return conv_id_; }
    int64_t started_at() const { return started_at_; }  // unix seconds

    // Keeps the bytes (dropping the oldest past kMaxSessionBytes); ignored once finished.
    void append(const std::string& bytes);
    // The generation ended (or was stopped): readers drain what is left and stop waiting.
    void finish();
    void cancel() { cancelled_.store(true); }
    bool cancelled() const { return cancelled_.load(); }

    enum class Read { data, end, lost };
    // The bytes from `offset` on: waits up to `wait_ms` for some when there are none yet. `end`: finished
    // and nothing past offset; `lost`: offset fell before the kept bytes (dropped by the size cap).
    Read read(size_t offset, std::string& out, int wait_ms);

    struct Info {
        bool done;
        size_t total_bytes;    // every byte ever appended
        size_t dropped_bytes;  // of those, dropped from the front by the size cap
        int64_t completed_at;  // unix seconds; 0 while generating
    };
    Info info() const;

private:
    const std::string conv_id_;
    const int64_t started_at_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::string buf_;  // bytes [dropped_, dropped_ + buf_.size())
    size_t dropped_ = 0;
    bool done_ = false;
    int64_t completed_at_ = 0;
    std::atomic<bool> cancelled_{false};
};

// Every session of one model's server, by conversation id (one session per id).
class StreamSessions {
public:
    // A new session for `conv_id`, cancelling and replacing one it had. Null when the id is empty or too
    // long, or when kMaxSessions are generating (the stream then runs without one).
    std::shared_ptr<StreamSession> create(const std::string& conv_id);
    std::shared_ptr<StreamSession> find(const std::string& conv_id);
    // The sessions of these ids, each id matching itself and "<id>::<model>" (the web UI's per-model ids).
    std::vector<std::shared_ptr<StreamSession>> lookup(const std::vector<std::string>& ids);
    // Stops the session's generation and forgets it; false when there was none.
    bool cancel(const std::string& conv_id);
    // Wakes every reader and stops every generation (server shutdown).
    void close_all();
    size_t size();

private:
    void sweep_locked();  // drops finished sessions past their lifetime
    std::mutex mu_;
    std::map<std::string, std::shared_ptr<StreamSession>> sessions_;
};

// The value of the X-Conversation-Id header ("" when absent).
std::string conversation_id(const httplib::Request& req);

// The routes over one server's sessions (router mode calls them with the owning model's).
// GET /v1/stream?conv_id=ID&from=N: the SSE bytes from offset N, then live ones until the end.
void handle_stream_get(StreamSessions& sessions, const httplib::Request& req, httplib::Response& res);
// DELETE /v1/stream?conv_id=ID: 204 whether or not there was a session.
void handle_stream_delete(StreamSessions& sessions, const httplib::Request& req, httplib::Response& res);
// The conversation ids of a lookup body {"conversation_ids": [...]} (non-strings and "" skipped).
std::vector<std::string> lookup_ids(const httplib::Request& req);
// POST /v1/streams/lookup's entries: [{conversation_id, is_done, total_bytes, started_at, completed_at}].
std::vector<Json> lookup_entries(StreamSessions& sessions, const std::vector<std::string>& ids);
// The conv_id query parameter; throws HttpError 400 when missing.
std::string conv_id_param(const httplib::Request& req);

// Router mode: which model serves each conversation's stream, remembered when a POST carrying the
// header is dispatched. A ticket identifies one remembering; forgetting the id (a stop) or remembering
// it again invalidates it, which is how a stop cancels a request still waiting for its model's load.
class ConvOwners {
public:
    uint64_t remember(const std::string& conv_id, const std::string& model);  // 0: id or model empty
    bool alive(const std::string& conv_id, uint64_t ticket);
    std::string owner(const std::string& conv_id);  // "" when unknown
    void forget(const std::string& conv_id);

private:
    struct Entry {
        std::string model;
        uint64_t ticket;
    };
    std::mutex mu_;
    uint64_t next_ticket_ = 1;
    std::map<std::string, Entry> map_;
};

}  // namespace bee::server
