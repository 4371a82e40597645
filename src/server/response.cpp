// server/response: results, timings, logprobs and the SSE driver.
#include "server/response.h"

#include <random>

#include "base/error.h"
#include "base/timer.h"

namespace bee::server {

TaskResult run_task(ServerContext& ctx, const httplib::Request& req, const std::shared_ptr<Task>& task) {
    ctx.scheduler->submit(task);
    TaskResult r;
    std::vector<TaskEvent> evs;
    double next_check = time_ms() + 500;
    for (;;) {
        evs.clear();
        task->channel->pop_all(evs, 500);
        if (time_ms() >= next_check) {  // twice a second: is the client still there?
            next_check = time_ms() + 500;
            if (peer_closed(req)) {
                task->channel->cancel();
                throw HttpError(499, "server_error", "the client closed the connection");
            }
        }
        for (TaskEvent& e : evs) {
            if (e.kind == TaskEvent::error) throw HttpError(e.http_status, e.error_type, e.error_message);
            r.content += e.content;
            r.reasoning += e.reasoning;
            for (TokenInfo& t : e.tokens) r.tokens.push_back(std::move(t));
            if (e.kind == TaskEvent::done) {
                r.finish = e.finish;
                return r;
            }
        }
    }
}

Json timings_json(const FinishInfo& f) {
    const double pn = f.n_prompt - f.n_cached, gn = f.n_predicted;
    Json t{{"cache_n", f.n_cached},
           {"prompt_n", f.n_prompt - f.n_cached},
           {"prompt_ms", f.prompt_ms},
           {"prompt_per_token_ms", pn > 0 ? f.prompt_ms / pn : 0.0},
           {"prompt_per_second", f.prompt_ms > 0 ? pn * 1000.0 / f.prompt_ms : 0.0},
           {"predicted_n", f.n_predicted},
           {"predicted_ms", f.predicted_ms},
           {"predicted_per_token_ms", gn > 0 ? f.predicted_ms / gn : 0.0},
           {"predicted_per_second", f.predicted_ms > 0 ? gn * 1000.0 / f.predicted_ms : 0.0}};
    if (f.draft_n > 0) {  // as llama-server: only when speculation drafted something
        t["draft_n"] = f.draft_n;
        t["draft_n_accepted"] = f.draft_n_accepted;
    }
    return t;
}

Json usage_json(const FinishInfo& f) {
    Json u = {{"completion_tokens", f.n_predicted},
              {"prompt_tokens", f.n_prompt},
              {"total_tokens", f.n_prompt + f.n_predicted},
              {"prompt_tokens_details", {{"cached_tokens", f.n_cached}}}};
    if (f.n_reasoning > 0)
        u["completion_tokens_details"] = {{"reasoning_tokens", f.n_reasoning},
                                          {"visible_tokens", f.n_predicted - f.n_reasoning}};
    return u;
}

const char* finish_reason(const FinishInfo& f) {
    return f.stop_type == StopType::eos || f.stop_type == StopType::word ? "stop" : "length";
}

const char* stop_type_name(StopType t) {
    switch (t) {
    case StopType::eos: return "eos";
    case StopType::limit: return "limit";
    case StopType::word: return "word";
    default: return "none";
    }
}

std::vector<Json> oai_final_chunks(Json last, Json usage_chunk, const FinishInfo& f, bool include_usage) {
    std::vector<Json> out;
    if (include_usage) {
        out.push_back(std::move(last));
        last = std::move(usage_chunk);
        last["usage"] = usage_json(f);
    }
    last["timings"] = timings_json(f);
    out.push_back(std::move(last));
    return out;
}

static Json byte_list(const std::string& s) {
    Json b = Json::array();
    for (unsigned char c : s) b.push_back((int)c);
    return b;
}

// One entry per generated token with its top alternatives; `native` gives /completion's shape
// (ids first, as llama-server), otherwise the OpenAI logprobs.content shape.
static Json token_probs(const std::vector<TokenInfo>& tokens, const Tokenizer& tok, bool native) {
    const auto entry = [&](int32_t id, float logprob) {
        const std::string piece = tok.token_to_piece(id, false);
        if (native) return Json{{"id", id}, {"token", piece}, {"bytes", byte_list(piece)}, {"logprob", logprob}};
        return Json{{"token", piece}, {"logprob", logprob}, {"bytes", byte_list(piece)}};
    };
    Json out = Json::array();
    for (const TokenInfo& t : tokens) {
        Json top = Json::array();
        for (const TokenProb& p : t.top) top.push_back(entry(p.id, p.logprob));
        Json e = entry(t.id, t.logprob);
        e["top_logprobs"] = std::move(top);
        out.push_back(std::move(e));
    }
    return out;
}

Json oai_logprobs_content(const std::vector<TokenInfo>& tokens, const Tokenizer& tok) {
    return token_probs(tokens, tok, false);
}

Json native_probs(const std::vector<TokenInfo>& tokens, const Tokenizer& tok) {
    return token_probs(tokens, tok, true);
}

namespace {

// The state of one SSE response; lives as long as httplib keeps calling the provider.
struct StreamState {
    std::shared_ptr<Task> task;
    StreamFormat fmt;
    bool started = false, finished = false;
};

bool write_all(httplib::DataSink& sink, const std::vector<Json>& payloads) {
    for (const Json& j : payloads) {
        const std::string s = sse_data(j);
        if (!sink.write(s.data(), s.size())) return false;
    }
    return true;
}

// One provider call: sends what the scheduler produced since the last call (or waits a little).
bool pump(StreamState& st, httplib::DataSink& sink) {
    if (st.finished) return false;
    if (!st.started) {
        st.started = true;
        if (st.fmt.start && !write_all(sink, st.fmt.start())) return false;
    }
    std::vector<TaskEvent> evs;
    if (!st.task->channel->pop_all(evs, 200)) return true;
    for (const TaskEvent& e : evs) {
        bool ok = true;
        if (e.kind == TaskEvent::error) {
            ok = write_all(sink, {error_json(e.http_status, e.error_type, e.error_message)});
            st.finished = true;
        } else {
            if (!e.content.empty() || !e.reasoning.empty() || !e.tokens.empty()) ok = write_all(sink, st.fmt.delta(e));
            if (ok && e.kind == TaskEvent::done) {
                ok = write_all(sink, st.fmt.done(e.finish));
                if (ok && st.fmt.done_sentinel) {
                    static const char kDone[] = "data: [DONE]\n\n";
                    ok = sink.write(kDone, sizeof kDone - 1);
                }
                st.finished = true;
            }
        }
        if (!ok) return false;
        if (st.finished) {
            sink.done();
            return true;
        }
    }
    return true;
}

}  // namespace

void stream_task(ServerContext& ctx, httplib::Response& res, std::shared_ptr<Task> task, StreamFormat fmt) {
    ctx.scheduler->submit(task);
    auto st = std::make_shared<StreamState>();
    st->task = task;
    st->fmt = std::move(fmt);
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [st](size_t, httplib::DataSink& sink) {
            const bool ok = pump(*st, sink);
            if (!ok && !st->finished) st->task->channel->cancel();  // the client went away
            return ok;
        },
        [st](bool success) {
            if (!success || !st->finished) st->task->channel->cancel();
        });
}

std::string random_id(const char* prefix) {
    static thread_local std::mt19937_64 rng(std::random_device{}());
    return strfmt("%s%016llx%08llx", prefix, (unsigned long long)rng(), (unsigned long long)(rng() & 0xffffffffu));
}

}  // namespace bee::server
