// server/stream_sessions: the session buffers, the per-server table with its caps, the GET / DELETE /
// lookup routes over it and router mode's conversation → model map.
#include "server/stream_sessions.h"

#include <algorithm>
#include <chrono>
#include <ctime>

#include "base/log.h"
#include "server/http_util.h"

namespace bee::server {

namespace {

int64_t now_s() { return (int64_t)time(nullptr); }

constexpr size_t kMaxConvOwners = 4096;  // router mode: conversations remembered (the oldest go first)

}  // namespace

StreamSession::StreamSession(std::string conv_id) : conv_id_(std::move(conv_id)), started_at_(now_s()) {}

void StreamSession::append(const std::string& bytes) {
    if (bytes.empty()) return;
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (done_) return;
        buf_ += bytes;
        if (buf_.size() > kMaxSessionBytes) {
            const size_t drop = buf_.size() - kMaxSessionBytes;
            buf_.erase(0, drop);
            dropped_ += drop;
        }
    }
    cv_.notify_all();
}

void StreamSession::finish() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (done_) return;
        done_ = true;
        completed_at_ = now_s();
    }
    cv_.notify_all();
}

StreamSession::Read StreamSession::read(size_t offset, std::string& out, int wait_ms) {
    std::unique_lock<std::mutex> lk(mu_);
    const auto ready = [&] { return done_ || offset < dropped_ + buf_.size(); };
    if (!ready()) cv_.wait_for(lk, std::chrono::milliseconds(wait_ms), ready);
    if (offset < dropped_) return Read::lost;
    if (offset < dropped_ + buf_.size()) {
        out.append(buf_, offset - dropped_, std::string::npos);
        return Read::data;
    }
    return done_ ? Read::end : Read::data;  // data with nothing appended: wait again
}

StreamSession::Info StreamSession::info() const {
    std::lock_guard<std::mutex> lk(mu_);
    return {done_, dropped_ + buf_.size(), dropped_, completed_at_};
}

void StreamSessions::sweep_locked() {
    const int64_t cutoff = now_s() - kSessionTtlSeconds;
    for (auto it = sessions_.begin(); it != sessions_.end();) {
        const StreamSession::Info i = it->second->info();
        if (i.done && i.completed_at <= cutoff) it = sessions_.erase(it);
        else ++it;
    }
}

std::shared_ptr<StreamSession> StreamSessions::create(const std::string& conv_id) {
    if (conv_id.empty() || conv_id.size() > kMaxConvIdBytes) return nullptr;
    std::shared_ptr<StreamSession> previous, fresh = std::make_shared<StreamSession>(conv_id);
    {
        std::lock_guard<std::mutex> lk(mu_);
        sweep_locked();
        auto it = sessions_.find(conv_id);
        if (it != sessions_.end()) {
            previous = std::move(it->second);
            sessions_.erase(it);
        }
        while (sessions_.size() >= kMaxSessions) {  // make room: the finished session that ended first goes
            auto victim = sessions_.end();
            int64_t oldest = INT64_MAX;
            for (auto s = sessions_.begin(); s != sessions_.end(); ++s) {
                const StreamSession::Info i = s->second->info();
                if (i.done && i.completed_at < oldest) oldest = i.completed_at, victim = s;
            }
            if (victim == sessions_.end()) break;
            sessions_.erase(victim);
        }
        if (sessions_.size() < kMaxSessions) sessions_.emplace(conv_id, fresh);
        else fresh = nullptr;
    }
    if (previous) {  // one session per conversation: a new request stops the old generation
        previous->cancel();
        previous->finish();
    }
    if (!fresh)
        BEE_LOG_WARN("stream sessions: %zu generating, \"%s\" streams without one", kMaxSessions, conv_id.c_str());
    return fresh;
}

std::shared_ptr<StreamSession> StreamSessions::find(const std::string& conv_id) {
    std::lock_guard<std::mutex> lk(mu_);
    sweep_locked();
    auto it = sessions_.find(conv_id);
    return it == sessions_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<StreamSession>> StreamSessions::lookup(const std::vector<std::string>& ids) {
    std::vector<std::shared_ptr<StreamSession>> out;
    std::lock_guard<std::mutex> lk(mu_);
    sweep_locked();
    for (const std::string& id : ids) {
        const std::string prefix = id + "::";
        for (const auto& [key, s] : sessions_)
            if (key == id || key.compare(0, prefix.size(), prefix) == 0) out.push_back(s);
    }
    return out;
}

bool StreamSessions::cancel(const std::string& conv_id) {
    std::shared_ptr<StreamSession> s;
    {
        std::lock_guard<std::mutex> lk(mu_);
        auto it = sessions_.find(conv_id);
        if (it == sessions_.end()) return false;
        s = std::move(it->second);
        sessions_.erase(it);
    }
    s->cancel();  // the producer stops its tasks at its next look
    s->finish();  // readers drain what is there and end
    return true;
}

void StreamSessions::close_all() {
    std::map<std::string, std::shared_ptr<StreamSession>> all;
    {
        std::lock_guard<std::mutex> lk(mu_);
        all.swap(sessions_);
    }
    for (auto& [id, s] : all) {
        s->cancel();
        s->finish();
    }
}

size_t StreamSessions::size() {
    std::lock_guard<std::mutex> lk(mu_);
    return sessions_.size();
}

std::string conversation_id(const httplib::Request& req) { return req.get_header_value("X-Conversation-Id"); }

std::string conv_id_param(const httplib::Request& req) {
    std::string id = req.get_param_value("conv_id");
    if (id.empty())
        throw HttpError(400, "invalid_request_error",
                        "Missing conversation id: pass it as ?conv_id=<X-Conversation-Id>");
    return id;
}

void handle_stream_get(StreamSessions& sessions, const httplib::Request& req, httplib::Response& res) {
    const std::string id = conv_id_param(req);
    std::shared_ptr<StreamSession> s = sessions.find(id);
    if (!s) throw HttpError(404, "not_found_error", "Stream not found or expired");
    size_t from = 0;
    if (req.has_param("from")) {
        const std::string f = req.get_param_value("from");
        const bool digits = !f.empty() && f.size() <= 18 &&
                            std::all_of(f.begin(), f.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!digits)
            throw HttpError(400, "invalid_request_error", "Invalid 'from' offset: a byte offset (0 or more) expected");
        from = (size_t)std::stoull(f);
    }
    if (from < s->info().dropped_bytes)
        throw HttpError(400, "invalid_request_error", "Stream offset lost, please restart");
    auto offset = std::make_shared<size_t>(from);
    res.set_header("Cache-Control", "no-cache");
    // note: httplib calls the provider only while it writes this response, when `req` is still alive
    res.set_chunked_content_provider("text/event-stream", [s, offset, &req](size_t, httplib::DataSink& sink) {
        std::string out;
        switch (s->read(*offset, out, 200)) {
            case StreamSession::Read::lost: return false;  // overtaken by the size cap while reading
            case StreamSession::Read::end: sink.done(); return true;
            case StreamSession::Read::data: break;
        }
        *offset += out.size();
        if (out.empty()) return !peer_closed(req);  // nothing new: stop waiting for a reader that left
        return sink.write(out.data(), out.size());
    });
}

void handle_stream_delete(StreamSessions& sessions, const httplib::Request& req, httplib::Response& res) {
    const std::string id = conv_id_param(req);
    if (!sessions.cancel(id)) BEE_LOG_INFO("stream stop: no session for conversation \"%s\"", id.c_str());
    res.status = 204;
}

std::vector<std::string> lookup_ids(const httplib::Request& req) {
    const Json body = parse_body(req);
    std::vector<std::string> ids;
    const Json* list = opt_field(body, "conversation_ids");
    if (!list || !list->is_array()) return ids;
    for (const Json& v : *list) {
        if (ids.size() >= kMaxLookupIds) break;
        if (v.is_string() && !v.get_ref<const std::string&>().empty()) ids.push_back(v.get<std::string>());
    }
    return ids;
}

std::vector<Json> lookup_entries(StreamSessions& sessions, const std::vector<std::string>& ids) {
    std::vector<Json> out;
    for (const auto& s : sessions.lookup(ids)) {
        const StreamSession::Info i = s->info();
        out.push_back({{"conversation_id", s->conv_id()},
                       {"is_done", i.done},
                       {"total_bytes", i.total_bytes},
                       {"started_at", s->started_at()},
                       {"completed_at", i.completed_at}});
    }
    return out;
}

uint64_t ConvOwners::remember(const std::string& conv_id, const std::string& model) {
    if (conv_id.empty() || conv_id.size() > kMaxConvIdBytes || model.empty()) return 0;
    std::lock_guard<std::mutex> lk(mu_);
    if (map_.size() >= kMaxConvOwners && !map_.count(conv_id)) {  // forget the one remembered first
        auto oldest = std::min_element(map_.begin(), map_.end(),
                                       [](const auto& a, const auto& b) { return a.second.ticket < b.second.ticket; });
        map_.erase(oldest);
    }
    const uint64_t ticket = next_ticket_++;
    map_[conv_id] = {model, ticket};
    return ticket;
}

bool ConvOwners::alive(const std::string& conv_id, uint64_t ticket) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = map_.find(conv_id);
    return it != map_.end() && it->second.ticket == ticket;
}

std::string ConvOwners::owner(const std::string& conv_id) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = map_.find(conv_id);
    return it == map_.end() ? "" : it->second.model;
}

void ConvOwners::forget(const std::string& conv_id) {
    std::lock_guard<std::mutex> lk(mu_);
    map_.erase(conv_id);
}

}  // namespace bee::server
