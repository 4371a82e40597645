// server/response: results, timings, logprobs and the SSE driver.
#include "server/response.h"

#include <algorithm>
#include <random>

#include "base/error.h"
#include "base/timer.h"
#include "server/stream_sessions.h"

namespace bee::server {

std::vector<TaskResult> run_tasks(ServerContext& ctx, const httplib::Request& req,
                                  const std::vector<std::shared_ptr<Task>>& tasks) {
    for (const auto& t : tasks) ctx.scheduler->submit(t);
    auto cancel_all = [&] {
        for (const auto& t : tasks) t->channel->cancel();
    };
    std::vector<TaskResult> results(tasks.size());
    std::vector<bool> done(tasks.size(), false);
    size_t n_done = 0;
    std::vector<TaskEvent> evs;
    double next_check = time_ms() + 100;
    while (n_done < tasks.size()) {
        size_t first = 0;  // wait on the first unfinished task; poll the others
        while (done[first]) first++;
        for (size_t i = first; i < tasks.size(); i++) {
            if (done[i]) continue;
            evs.clear();
            tasks[i]->channel->pop_all(evs, i == first ? 100 : 0);
            for (TaskEvent& e : evs) {
                if (e.kind == TaskEvent::error) {
                    cancel_all();
                    throw HttpError(e.http_status, e.error_type, e.error_message);
                }
                TaskResult& r = results[i];
                r.content += e.content;
                r.reasoning += e.reasoning;
                for (TokenInfo& t : e.tokens) r.tokens.push_back(std::move(t));
                if (e.kind == TaskEvent::done) {
                    r.finish = e.finish;
                    done[i] = true;
                    n_done++;
                }
            }
        }
        if (time_ms() >= next_check) {  // ten times a second: is the client still there? (one poll())
            next_check = time_ms() + 100;
            if (peer_closed(req)) {
                cancel_all();
                throw HttpError(499, "server_error", "the client closed the connection");
            }
        }
    }
    return results;
}

TaskResult run_task(ServerContext& ctx, const httplib::Request& req, const std::shared_ptr<Task>& task) {
    return std::move(run_tasks(ctx, req, {task})[0]);
}

std::function<std::vector<Json>(const std::vector<FinishInfo>&)> usage_after_all(Json empty_chunk, size_t per_prompt) {
    return [empty_chunk = std::move(empty_chunk), per_prompt](const std::vector<FinishInfo>& fs) {
        const FinishInfo f = merge_finish(fs, per_prompt);
        Json u = empty_chunk;
        u["usage"] = usage_json(f);
        u["timings"] = timings_json(f);
        return std::vector<Json>{u};
    };
}

FinishInfo merge_finish(const std::vector<FinishInfo>& fs, size_t per_prompt) {
    FinishInfo m = fs.at(0);
    for (size_t i = 1; i < fs.size(); i++) {
        if (per_prompt > 0 && i % per_prompt == 0) {  // the first choice of another prompt
            m.n_prompt += fs[i].n_prompt;
            m.n_cached += fs[i].n_cached;
            m.prompt_ms = std::max(m.prompt_ms, fs[i].prompt_ms);
        }
        m.n_predicted += fs[i].n_predicted;
        m.n_reasoning += fs[i].n_reasoning;
        m.predicted_ms = std::max(m.predicted_ms, fs[i].predicted_ms);
        m.draft_n += fs[i].draft_n;
        m.draft_n_accepted += fs[i].draft_n_accepted;
        m.draft_rounds += fs[i].draft_rounds;
        m.draft_n_grammar_cut += fs[i].draft_n_grammar_cut;
    }
    return m;
}

Json sampling_json(const SamplingParams& s) {
    Json samplers = Json::array();
    const std::string names = sampler_order_name(s.order.empty() ? default_sampler_order() : s.order);
    for (size_t at = 0; at < names.size();) {
        const size_t end = std::min(names.find(';', at), names.size());
        samplers.push_back(names.substr(at, end - at));
        at = end + 1;
    }
    Json logit_bias = Json::array();  // llama-server's [{bias, token}]; a banned token's -inf is JSON null
    for (const auto& [token, bias] : s.logit_bias) logit_bias.push_back({{"bias", bias}, {"token", token}});
    return Json{{"seed", s.seed},
                {"temperature", s.temp},
                {"dynatemp_range", s.dynatemp_range},
                {"dynatemp_exponent", s.dynatemp_exponent},
                {"top_k", s.top_k},
                {"top_p", s.top_p},
                {"min_p", s.min_p},
                {"top_n_sigma", s.top_n_sigma},
                {"xtc_probability", s.xtc_probability},
                {"xtc_threshold", s.xtc_threshold},
                {"typical_p", s.typical_p},
                {"repeat_last_n", s.repeat_last_n},
                {"repeat_penalty", s.repeat_penalty},
                {"presence_penalty", s.presence_penalty},
                {"frequency_penalty", s.frequency_penalty},
                {"dry_multiplier", s.dry_multiplier},
                {"dry_base", s.dry_base},
                {"dry_allowed_length", s.dry_allowed_length},
                {"dry_penalty_last_n", s.dry_penalty_last_n},
                {"dry_sequence_breakers", s.dry_sequence_breakers},
                {"mirostat", s.mirostat},
                {"mirostat_tau", s.mirostat_tau},
                {"mirostat_eta", s.mirostat_eta},
                {"min_keep", s.min_keep},
                {"logit_bias", logit_bias},
                {"samplers", samplers}};
}

Json progress_json(const TaskEvent& e) {
    const TaskEvent::Progress& p = e.progress;
    return Json{{"total", p.total}, {"cache", p.cache}, {"processed", p.processed}, {"time_ms", p.time_ms}};
}

Json timings_json(const FinishInfo& f) {
    // llama-server's n - 1 rule: the first token comes from the last prompt batch's logits, so the
    // generation rate is over the decode steps after it
    const double pn = f.n_prompt - f.n_cached, gn = f.n_predicted > 0 ? f.n_predicted - 1 : 0;
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
    if (f.draft_n_grammar_cut > 0) t["draft_n_grammar_cut"] = f.draft_n_grammar_cut;  // Bee's own: never verified
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

void add_stop_detail(Json& choice, const FinishInfo& f) {
    if (f.stop_message.empty()) return;
    choice["stop_detail"] = f.stop_detail;
    choice["stop_message"] = f.stop_message;
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
// With post_sampling_probs the keys are "prob" and "top_probs" (probabilities after the sampler chain).
static Json token_probs(const std::vector<TokenInfo>& tokens, const Tokenizer& tok, bool native) {
    Json out = Json::array();
    for (const TokenInfo& t : tokens) {
        const char* key = t.post ? "prob" : "logprob";
        const auto entry = [&](int32_t id, float value) {
            const std::string piece = tok.token_to_piece(id, false);
            if (native) return Json{{"id", id}, {"token", piece}, {"bytes", byte_list(piece)}, {key, value}};
            return Json{{"token", piece}, {key, value}, {"bytes", byte_list(piece)}};
        };
        Json top = Json::array();
        for (const TokenLogprob& p : t.top) top.push_back(entry(p.id, p.logprob));
        Json e = entry(t.id, t.logprob);
        e[t.post ? "top_probs" : "top_logprobs"] = std::move(top);
        out.push_back(std::move(e));
    }
    return out;
}

Json oai_logprobs_content(const std::vector<TokenInfo>& tokens, const Tokenizer& tok) {
    return token_probs(tokens, tok, false);
}

Json native_probs(const std::vector<TokenInfo>& tokens, const Tokenizer& tok) { return token_probs(tokens, tok, true); }

namespace {

// The state of one SSE response; lives as long as httplib keeps the provider (and its releaser).
struct StreamState {
    std::vector<std::shared_ptr<Task>> tasks;
    std::vector<StreamFormat> fmts;  // fmts[i] formats tasks[i]
    std::function<std::vector<Json>(const std::vector<FinishInfo>&)> after_all;
    std::vector<FinishInfo> finish;
    std::vector<bool> task_done;
    size_t n_done = 0;
    bool started = false, finished = false;
    // X-Conversation-Id's session (server/stream_sessions): every byte sent is kept there too, and the
    // generation outlives its client; only a stop (DELETE /v1/stream, a newer request of the id) ends it.
    std::shared_ptr<StreamSession> session;
    ~StreamState() {
        if (session) session->finish();
    }
    void cancel_all() {
        for (const auto& t : tasks) t->channel->cancel();
    }
};

void write_all(std::string& out, const std::vector<Json>& payloads, const StreamFormat& fmt) {
    for (const Json& j : payloads) {
        if (fmt.event_names && j.contains("type") && j["type"].is_string())
            out += "event: " + j["type"].get<std::string>() + "\n";
        out += sse_data(j);
    }
}

// Task i's events into `out`; sets st.finished on an error or when the last task ends.
void pump_events(StreamState& st, size_t i, const std::vector<TaskEvent>& evs, std::string& out) {
    const StreamFormat& fmt = st.fmts[i];
    for (const TaskEvent& e : evs) {
        if (e.kind == TaskEvent::error) {
            write_all(out, {fmt.error ? fmt.error(e) : error_json(e.http_status, e.error_type, e.error_message)}, fmt);
            st.finished = true;
            st.cancel_all();
        } else if (e.has_progress) {
            if (fmt.progress) {
                Json j = fmt.progress(e);
                if (e.has_timings) j["timings"] = timings_json(e.finish);
                write_all(out, {j}, fmt);
            }
        } else {
            if (!e.content.empty() || !e.reasoning.empty() || !e.tokens.empty()) {
                std::vector<Json> chunks = fmt.delta(e);
                if (e.has_timings && !chunks.empty()) chunks.back()["timings"] = timings_json(e.finish);
                write_all(out, chunks, fmt);
            }
            if (e.kind == TaskEvent::done) {
                write_all(out, fmt.done(e.finish), fmt);
                st.finish[i] = e.finish;
                st.task_done[i] = true;
                if (++st.n_done == st.tasks.size()) {
                    if (st.after_all) write_all(out, st.after_all(st.finish), fmt);
                    if (fmt.done_sentinel) out += "data: [DONE]\n\n";
                    st.finished = true;
                }
            }
        }
        if (st.finished) return;
    }
}

// What the scheduler produced since the last call (waits a little for it), as SSE bytes in `out`; the
// session keeps a copy.
void pump(StreamState& st, std::string& out) {
    if (!st.started) {
        st.started = true;
        for (const StreamFormat& f : st.fmts)
            if (f.start) write_all(out, f.start(), f);
    }
    size_t first = 0;  // wait on the first unfinished task; poll the others
    while (st.task_done[first]) first++;
    for (size_t i = first; i < st.tasks.size() && !st.finished; i++) {
        if (st.task_done[i]) continue;
        std::vector<TaskEvent> evs;
        if (!st.tasks[i]->channel->pop_all(evs, i == first ? 200 : 0)) continue;
        pump_events(st, i, evs, out);
    }
    if (st.session) st.session->append(out);
}

// A session whose client left: the rest of the generation goes to the session alone (on the HTTP
// worker that served the request), unless it is stopped meanwhile.
void drain_into_session(StreamState& st) {
    std::string out;
    while (!st.finished && !st.session->cancelled()) {
        out.clear();
        pump(st, out);
    }
}

}  // namespace

void stream_tasks(ServerContext& ctx, const httplib::Request& req, httplib::Response& res,
                  std::vector<std::shared_ptr<Task>> tasks, std::vector<StreamFormat> fmts,
                  std::function<std::vector<Json>(const std::vector<FinishInfo>&)> after_all) {
    auto st = std::make_shared<StreamState>();
    const std::string conv_id = conversation_id(req);
    if (!conv_id.empty() && ctx.streams) st->session = ctx.streams->create(conv_id);
    for (const auto& t : tasks) ctx.scheduler->submit(t);
    st->finish.resize(tasks.size());
    st->task_done.assign(tasks.size(), false);
    st->tasks = std::move(tasks);
    st->fmts = std::move(fmts);
    st->after_all = std::move(after_all);
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [st](size_t, httplib::DataSink& sink) {
            if (st->finished) return false;
            if (st->session && st->session->cancelled()) {  // stopped: end this stream too
                st->cancel_all();
                st->finished = true;
                sink.done();
                return true;
            }
            std::string out;
            pump(*st, out);
            if (!out.empty() && !sink.write(out.data(), out.size())) {
                if (!st->session) st->cancel_all();  // the client went away (with a session: see the releaser)
                return false;
            }
            if (st->finished) {
                if (st->session) st->session->finish();
                sink.done();
            }
            return true;
        },
        [st](bool) {
            if (!st->finished && st->session) drain_into_session(*st);
            if (!st->finished) st->cancel_all();
            if (st->session) st->session->finish();
        });
}

void stream_task(ServerContext& ctx, const httplib::Request& req, httplib::Response& res, std::shared_ptr<Task> task,
                 StreamFormat fmt) {
    stream_tasks(ctx, req, res, {std::move(task)}, {std::move(fmt)});
}

std::string random_id(const char* prefix) {
    static thread_local std::mt19937_64 rng(std::random_device{}());
    return strfmt("%s%016llx%08llx", prefix, (unsigned long long)rng(), (unsigned long long)(rng() & 0xffffffffu));
}

}  // namespace bee::server
