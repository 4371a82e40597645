// server/wire_native: /completion and /infill requests, the native completion object and chunks, /tokenize,
// /detokenize and slot actions.
//
// /infill is llama-server's fill-in-the-middle completion (code editors such as llama.vim call it): the
// code before the cursor (input_prefix), after it (input_suffix), other files (input_extra [{filename,
// text}]) and text already typed at the cursor (prompt) become one FIM prompt,
//   [extra context] [FIM_PRE] prefix prompt [FIM_SUF] suffix [FIM_MID]
// with the repository form of the extra context where the vocabulary has FIM repo/file-separator tokens:
//   [FIM_REP] "myproject\n" ([FIM_SEP] filename "\n" text)... [FIM_SEP] "filename\n"
// (else each file after "\n\n--- snippet ---\n\n"). As llama-server does, the prefix keeps its last 3/4 of
// -b tokens, the suffix its first -b/4 minus the prompt, and the extra context what is left of the slot's
// context after -b and twice n_predict, its most recent tokens. The rest is /completion (n_indent and
// t_max_predict_ms are the usual stop rules for it).
#include "server/wire_native.h"

#include <algorithm>

namespace bee::server {

namespace {

// /completion's and /infill's fields once the prompts are tokens.
CompletionRequest native_completion(ServerContext& ctx, const Json& body,
                                    const std::vector<std::vector<int32_t>>& prompts) {
    CompletionRequest r;
    r.n = parse_n_choices(body);
    r.gen = parse_gen_params(body, ctx, Api::native);
    r.tasks = make_prompt_tasks(ctx, prompts, r.gen, r.n);
    r.stream = get_bool(body, "stream", false);
    return r;
}

std::string string_field(const Json& body, const char* key) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) return "";
    if (!it->is_string()) bad_request("'%s' must be a string", key);
    return it->get<std::string>();
}

std::vector<int32_t> infill_prompt(const Json& body, const ServerContext& ctx) {
    const Tokenizer& tok = ctx.tokenizer();
    const Tokenizer::Fim fim = tok.fim();
    if (fim.pre < 0 || fim.suf < 0 || fim.mid < 0)
        throw HttpError(501, "not_supported_error",
                        "Infill is not supported by this model: its vocabulary has no fill-in-the-middle prefix, "
                        "suffix and middle tokens");
    const auto text = [&tok](const std::string& s) { return tok.encode(s, false, false); };
    std::vector<int32_t> prefix = text(string_field(body, "input_prefix"));
    std::vector<int32_t> suffix = text(string_field(body, "input_suffix"));
    const std::vector<int32_t> typed = text(string_field(body, "prompt"));

    std::vector<int32_t> extra;
    const auto add = [&extra](const std::vector<int32_t>& t) { extra.insert(extra.end(), t.begin(), t.end()); };
    if (fim.rep >= 0) {
        extra.push_back(fim.rep);
        add(text("myproject\n"));
    }
    auto it = body.find("input_extra");
    if (it != body.end() && !it->is_null()) {
        if (!it->is_array()) bad_request("'input_extra' must be an array of {\"filename\", \"text\"} objects");
        for (const Json& chunk : *it) {
            if (!chunk.is_object()) bad_request("'input_extra' must be an array of {\"filename\", \"text\"} objects");
            const std::string name = string_field(chunk, "filename");
            if (fim.sep >= 0) {
                extra.push_back(fim.sep);
                add(text((name.empty() ? "tmp" : name) + "\n"));
            } else {
                add(text("\n\n--- snippet ---\n\n"));
            }
            add(text(string_field(chunk, "text")));
        }
    }
    if (fim.sep >= 0) {  // the file being edited
        extra.push_back(fim.sep);
        add(text("filename\n"));
    }

    const int32_t n_batch = ctx.params.sched.n_batch;
    const int32_t n_ctx = ctx.scheduler->n_ctx_slot();
    const int64_t n_predict = std::max<int64_t>(0, get_int(body, "n_predict", get_int(body, "max_tokens", 0)));
    const size_t take_prefix = std::min<size_t>(prefix.size(), (size_t)(3 * (n_batch / 4)));
    const size_t take_suffix =
        std::min<size_t>(suffix.size(), (size_t)std::max<int64_t>(0, n_batch / 4 - (2 + (int64_t)typed.size())));
    const size_t take_extra =
        std::min<size_t>(extra.size(), (size_t)std::max<int64_t>(0, (int64_t)n_ctx - n_batch - 2 * n_predict));

    std::vector<int32_t> out;
    if (tok.add_bos() && tok.bos() >= 0) out.push_back(tok.bos());
    out.insert(out.end(), extra.end() - (std::ptrdiff_t)take_extra, extra.end());
    out.push_back(fim.pre);
    out.insert(out.end(), prefix.end() - (std::ptrdiff_t)take_prefix, prefix.end());
    out.insert(out.end(), typed.begin(), typed.end());
    out.push_back(fim.suf);
    out.insert(out.end(), suffix.begin(), suffix.begin() + (std::ptrdiff_t)take_suffix);
    out.push_back(fim.mid);
    return out;
}

// llama-server's generation_settings of a task: its sampling fields, n_predict, stop, n_ctx, model, ...
Json generation_settings(const ServerContext& ctx, const GenParams& g) {
    Json j = sampling_json(g.sampling);
    j.update(Json{{"n_predict", g.n_predict},
                  {"stop", g.stop},
                  {"ignore_eos", g.ignore_eos},
                  {"n_keep", g.n_keep},
                  {"n_probs", g.n_probs},
                  {"cache_prompt", g.cache_prompt},
                  {"lora", lora_scales_json(g.lora)},
                  {"n_ctx", ctx.scheduler->n_ctx_slot()},
                  {"model", ctx.model_name}});
    return j;
}

// llama-server's response_fields: only the listed paths of the result ("generation_settings/n_predict"),
// each under its path as the key; paths that do not exist are left out.
Json only_fields(Json j, const std::vector<std::string>& paths) {
    if (paths.empty()) return j;
    Json out = Json::object();
    for (const std::string& path : paths) {
        const Json* cur = &j;
        for (size_t at = 0; cur && at <= path.size();) {
            const size_t end = std::min(path.find('/', at), path.size());
            const std::string key = path.substr(at, end - at);
            cur = cur->is_object() && cur->contains(key) ? &(*cur)[key] : nullptr;
            at = end + 1;
        }
        if (cur) out[path] = *cur;
    }
    return out;
}

bool valid_utf8(const std::string& s) {
    size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = (unsigned char)s[i];
        const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (int k = 1; k < n; k++)
            if (((unsigned char)s[i + k] >> 6) != 2) return false;
        i += n;
    }
    return true;
}

}  // namespace

CompletionRequest read_native_completion_request(ServerContext& ctx, const Json& body) {
    if (!body.contains("prompt")) bad_request("'prompt' is required");
    return native_completion(ctx, body, tokenize_prompts(body["prompt"], ctx.tokenizer()));
}

CompletionRequest read_infill_request(ServerContext& ctx, const Json& body) {
    return native_completion(ctx, body, {infill_prompt(body, ctx)});
}

Json native_final(const ServerContext& ctx, const Task& t, const TaskResult& r, bool stream, size_t index) {
    const FinishInfo& f = r.finish;
    Json j = {{"index", index},
              {"content", stream ? std::string() : r.content},
              {"id_slot", f.id_slot},
              {"stop", true},
              {"model", ctx.model_name},
              {"tokens_predicted", f.n_predicted},
              {"tokens_evaluated", f.n_prompt},
              {"generation_settings", generation_settings(ctx, t.params)},
              {"prompt", ctx.tokenizer().decode(t.prompt, true)},
              {"has_new_line", r.content.find('\n') != std::string::npos},
              {"truncated", f.truncated},
              {"stop_type", stop_type_name(f.stop_type)},
              {"stopping_word", f.stopping_word},
              {"tokens_cached", f.n_prompt + std::max(0, f.n_predicted - 1)},  // tokens in the slot's KV
              {"timings", timings_json(f)}};
    if (!stream) {
        Json ids = Json::array();
        for (const TokenInfo& ti : r.tokens) ids.push_back(ti.id);
        j["tokens"] = ids;
        if (t.params.want_logprobs) j["completion_probabilities"] = native_probs(r.tokens, ctx.tokenizer());
    }
    if (!f.stop_detail.empty()) j["stop_detail"] = f.stop_detail;
    if (!f.stop_message.empty()) j["stop_message"] = f.stop_message;
    return j;
}

Json native_completion_json(const ServerContext& ctx, const Task& t, const TaskResult& r, bool stream, size_t index) {
    Json j = native_final(ctx, t, r, stream, index);
    return stream ? j : only_fields(std::move(j), t.params.response_fields);
}

StreamFormat native_stream_format(const ServerContext& ctx, std::shared_ptr<Task> task, size_t i) {
    auto text = std::make_shared<std::string>();
    StreamFormat fmt;
    fmt.done_sentinel = false;
    fmt.delta = [&ctx, task, text, i](const TaskEvent& e) {
        Json ids = Json::array();
        for (const TokenInfo& ti : e.tokens) ids.push_back(ti.id);
        *text += e.content;
        Json j = {{"index", i}, {"content", e.content}, {"tokens", ids}, {"stop", false}, {"id_slot", -1}};
        if (task->params.want_logprobs) j["completion_probabilities"] = native_probs(e.tokens, ctx.tokenizer());
        return std::vector<Json>{j};
    };
    fmt.progress = [i](const TaskEvent& e) {
        return Json{{"index", i},    {"content", ""}, {"tokens", Json::array()},
                    {"stop", false}, {"id_slot", -1}, {"prompt_progress", progress_json(e)}};
    };
    fmt.done = [&ctx, task, text, i](const FinishInfo& f) {
        TaskResult r;
        r.content = *text;
        r.finish = f;
        return std::vector<Json>{native_final(ctx, *task, r, true, i)};
    };
    return fmt;
}

TokenizeRequest read_tokenize_request(const Json& body) {
    TokenizeRequest r;
    r.content = get_string(body, "content", "");
    r.add_special = get_bool(body, "add_special", false);
    r.parse_special = get_bool(body, "parse_special", true);
    r.with_pieces = get_bool(body, "with_pieces", false);
    return r;
}

Json tokenize_json(const Tokenizer& tok, const std::vector<int32_t>& ids, bool with_pieces) {
    Json out = Json::array();
    for (int32_t id : ids) {
        if (!with_pieces) {
            out.push_back(id);
            continue;
        }
        const std::string piece = tok.token_to_piece(id, true);
        Json p;
        if (valid_utf8(piece)) {
            p = piece;
        } else {  // a piece that is part of a UTF-8 character: its bytes
            p = Json::array();
            for (unsigned char c : piece) p.push_back((int)c);
        }
        out.push_back({{"id", id}, {"piece", p}});
    }
    return {{"tokens", out}};
}

std::vector<int32_t> read_detokenize_request(const Json& body, const Tokenizer& tok) {
    std::vector<int32_t> ids;
    if (body.contains("tokens")) {
        const Json& t = body["tokens"];
        if (!t.is_array()) bad_request("'tokens' must be an array of token ids");
        for (const Json& x : t) {
            if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= tok.n_vocab())
                bad_request("'tokens' must hold token ids in [0, %d)", tok.n_vocab());
            ids.push_back(x.get<int32_t>());
        }
    }
    return ids;
}

SlotActionRequest read_slot_action_request(const ServerContext& ctx, const httplib::Request& req) {
    SlotActionRequest r;
    const std::string id_text = req.matches[1];
    if (id_text.empty() || id_text.size() > 4 || id_text.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(id_text) >= ctx.scheduler->n_parallel())
        bad_request("Invalid slot ID '%s': slots are 0..%d", id_text.c_str(), ctx.scheduler->n_parallel() - 1);
    r.id_slot = std::stoi(id_text);
    r.action = req.get_param_value("action");
    if (r.action != "save" && r.action != "restore" && r.action != "erase")
        bad_request("Invalid action '%s': expected ?action=save, restore or erase", r.action.c_str());
    if (r.action == "erase") return r;
    const Json body = parse_body(req);
    r.filename = get_string(body, "filename", "");
    if (r.filename.empty()) bad_request("'filename' is required for action=%s", r.action.c_str());
    if (!valid_slot_filename(r.filename))
        bad_request("Invalid filename '%s': give a plain file name (no path separators, no '..')", r.filename.c_str());
    return r;
}

Json slot_action_json(const SlotActionRequest& r, const SlotActionResult& result) {
    if (r.action == "save")
        return {{"id_slot", r.id_slot},
                {"filename", r.filename},
                {"n_saved", result.n_tokens},
                {"n_written", result.n_bytes},
                {"timings", {{"save_ms", result.ms}}}};
    if (r.action == "restore")
        return {{"id_slot", r.id_slot},
                {"filename", r.filename},
                {"n_restored", result.n_tokens},
                {"n_read", result.n_bytes},
                {"timings", {{"restore_ms", result.ms}}}};
    return {{"id_slot", r.id_slot}, {"n_erased", result.n_tokens}};
}

Json lora_scales_json(const std::vector<float>& scales) {
    Json out = Json::array();
    for (size_t i = 0; i < scales.size(); i++) out.push_back({{"id", i}, {"scale", scales[i]}});
    return out;
}

Json lora_adapters_json(const ServerContext& ctx) {
    const std::vector<float> scales = ctx.lora_scales();
    const auto& adapters = ctx.engine->lora_adapters();
    Json out = Json::array();
    for (size_t i = 0; i < adapters.size(); i++)
        out.push_back({{"id", i},
                       {"path", adapters[i]->path()},
                       {"scale", scales[i]},
                       {"task_name", adapters[i]->task_name()},
                       {"prompt_prefix", adapters[i]->prompt_prefix()}});
    return out;
}

std::vector<float> read_lora_adapters_request(const ServerContext& ctx, const httplib::Request& req) {
    const Json body = parse_json_bounded(req.body, kMaxJsonDepth);
    if (!body.is_array()) bad_request("Request body must be an array");
    return parse_lora_list(body, ctx.engine->lora_adapters().size(), "the body");
}

}  // namespace bee::server
