// server/routes_embeddings: /v1/embeddings (OpenAI), /embedding and /embeddings (llama-server's native
// shapes) with --embedding, and /rerank (/v1/rerank, /reranking, /v1/reranking) with --reranking. Each
// input becomes one Task whose engine_action (runtime/embed) decodes it on the inference thread.
#include <algorithm>
#include <cmath>
#include <memory>

#include "base/error.h"
#include "base/log.h"
#include "runtime/embed.h"
#include "server/request.h"
#include "server/response.h"
#include "server/routes.h"

namespace bee::server {

namespace {

constexpr size_t kMaxInputs = 2048;  // inputs per request (OpenAI's limit for one embeddings call)

// One input's tokens and what the engine made of them: (rows, width) floats.
struct EmbedJob {
    std::vector<int32_t> tokens;
    std::vector<float> values;
};

// Runs every job as a task (in parallel over the idle slots) and fills its values.
void run_jobs(ServerContext& ctx, const httplib::Request& req, std::vector<std::shared_ptr<EmbedJob>>& jobs) {
    const Pooling pooling = ctx.params.pooling;
    const int32_t n_ctx = ctx.scheduler->n_ctx_slot();
    std::vector<std::shared_ptr<Task>> tasks;
    for (const auto& job : jobs) {
        if (job->tokens.empty()) bad_request("Input content cannot be empty");
        if ((int64_t)job->tokens.size() > n_ctx)
            throw HttpError(400, "exceed_context_size_error",
                            strfmt("input (%zu tokens) is larger than the slot context (%d tokens), try increasing it",
                                   job->tokens.size(), n_ctx),
                            Json{{"n_prompt_tokens", job->tokens.size()}, {"n_ctx", n_ctx}});
        auto t = std::make_shared<Task>();
        t->id = ctx.next_task_id++;
        t->prompt = job->tokens;
        // Last-token poolings reuse a cached prefix: prefer the slot that shares most of it.
        t->params.cache_prompt = pooling == Pooling::last || pooling == Pooling::rank;
        t->params.lora = ctx.lora_scales();  // as llama-server: embeddings run under the server's LoRA scales
        t->engine_action = [job, pooling, channel = t->channel](Engine& eng, int32_t seq, std::vector<int32_t>& cache) {
            job->values = embed_tokens(eng, seq, cache, job->tokens, pooling);
            TaskEvent done;
            done.kind = TaskEvent::done;
            channel->push(std::move(done));
        };
        tasks.push_back(std::move(t));
    }
    run_tasks(ctx, req, tasks);
}

// llama.cpp's embd_normalize: -1 none, 0 max absolute (int16 range), 2 Euclidean, else p-norm (1: taxicab).
void normalize(float* v, size_t n, int64_t mode) {
    double sum = 0;
    if (mode == -1) {
        sum = 1;
    } else if (mode == 0) {
        for (size_t i = 0; i < n; i++) sum = std::max(sum, (double)std::fabs(v[i]));
        sum /= 32760.0;
    } else if (mode == 2) {
        for (size_t i = 0; i < n; i++) sum += (double)v[i] * v[i];
        sum = std::sqrt(sum);
    } else {
        for (size_t i = 0; i < n; i++) sum += std::pow(std::fabs((double)v[i]), (double)mode);
        sum = std::pow(sum, 1.0 / (double)mode);
    }
    const double scale = sum > 0 ? 1.0 / sum : 0.0;
    for (size_t i = 0; i < n; i++) v[i] = (float)(v[i] * scale);
}

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

// `input` / `content` as llama-server reads it: a string, token ids, or a mix is one input; an array of
// strings, token arrays or mixed arrays is several.
std::vector<std::vector<int32_t>> tokenize_inputs(const Json& input, const Tokenizer& tok) {
    const char* shape = "'input' must be a string, an array of strings, or an array of token arrays";
    if (input.is_string()) return {tokenize_prompt(input, tok)};
    if (!input.is_array() || input.empty()) bad_request("%s", shape);
    if (std::any_of(input.begin(), input.end(), [](const Json& x) { return x.is_number(); }))
        return {tokenize_prompt(input, tok)};  // one prompt of ids (or ids and strings mixed)
    if (input.size() > kMaxInputs)
        bad_request("'input' holds %zu inputs; at most %zu per request", input.size(), kMaxInputs);
    std::vector<std::vector<int32_t>> out;
    for (const Json& x : input) {
        if (!x.is_string() && !x.is_array()) bad_request("%s", shape);
        if (x.is_array() && x.empty()) bad_request("Input content cannot be empty");
        if (x.is_array() &&
            std::any_of(x.begin(), x.end(), [](const Json& y) { return y.is_array() || y.is_object(); }))
            bad_request("%s", shape);
        out.push_back(tokenize_prompt(x, tok));
    }
    return out;
}

void handle_embeddings(ServerContext& ctx, const httplib::Request& req, httplib::Response& res, bool oai) {
    const ServerParams& sp = ctx.params;
    if (!sp.embedding)
        throw HttpError(501, "not_supported_error",
                        "This server does not support embeddings. Start it with `--embeddings`");
    if (oai && sp.pooling == Pooling::none)
        bad_request("Pooling type 'none' is not OAI compatible. Please use a different pooling type");
    const Json body = parse_body(req);
    Json input;
    if (body.contains("input")) {
        input = body["input"];
    } else if (body.contains("content")) {
        input = body["content"];
        oai = false;  // "content" is llama-server's native field: native response shape
    } else {
        bad_request("\"input\" or \"content\" must be provided");
    }
    bool base64 = false;
    if (body.contains("encoding_format") && !body["encoding_format"].is_null()) {
        const Json& f = body["encoding_format"];
        if (!f.is_string() || (f != "float" && f != "base64"))
            bad_request("The format to return the embeddings in. Can be either float or base64");
        base64 = f == "base64";
    }
    const int64_t norm = get_int(body, "embd_normalize", sp.embd_normalize, -1, 64);
    std::vector<std::shared_ptr<EmbedJob>> jobs;
    for (auto& tokens : tokenize_inputs(input, ctx.tokenizer())) {
        jobs.push_back(std::make_shared<EmbedJob>());
        jobs.back()->tokens = std::move(tokens);
    }
    run_jobs(ctx, req, jobs);

    const size_t width = (size_t)pooled_width(*ctx.model, sp.pooling);
    Json data = Json::array();
    int64_t n_tokens = 0;
    for (size_t i = 0; i < jobs.size(); i++) {
        EmbedJob& job = *jobs[i];
        n_tokens += (int64_t)job.tokens.size();
        const size_t rows = job.values.size() / width;
        if (sp.pooling != Pooling::none) normalize(job.values.data(), width, norm);  // per-token rows stay raw
        if (oai) {
            Json e = {{"embedding", nullptr}, {"index", i}, {"object", "embedding"}};
            if (base64) {
                e["embedding"] = base64_encode((const uint8_t*)job.values.data(), width * sizeof(float));
                e["encoding_format"] = "base64";
            } else {
                e["embedding"] = std::vector<float>(job.values.begin(), job.values.begin() + (std::ptrdiff_t)width);
            }
            data.push_back(std::move(e));
            continue;
        }
        Json rows_json = Json::array();
        for (size_t r = 0; r < rows; r++)
            rows_json.push_back(std::vector<float>(job.values.begin() + (std::ptrdiff_t)(r * width),
                                                   job.values.begin() + (std::ptrdiff_t)((r + 1) * width)));
        data.push_back({{"index", i}, {"embedding", std::move(rows_json)}});
    }
    if (!oai) return send_json(res, data);
    send_json(res, {{"model", get_string(body, "model", ctx.model_name)},
                    {"object", "list"},
                    {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}},
                    {"data", std::move(data)}});
}

// A reranker's input for one document: the model's `rerank` template when it has one ({query} and
// {document} replaced, special tokens parsed), else [BOS] query [EOS] [SEP] document [EOS], each marker
// where the vocabulary adds it (llama.cpp's format; SEP stands in for a missing EOS).
std::vector<int32_t> rerank_tokens(const ServerContext& ctx, const std::string& tmpl, const std::string& query,
                                   const std::string& doc) {
    const Tokenizer& tok = ctx.tokenizer();
    if (!tmpl.empty()) {
        std::string text;
        for (size_t i = 0; i < tmpl.size();) {
            if (tmpl.compare(i, 7, "{query}") == 0) {
                text += query;
                i += 7;
            } else if (tmpl.compare(i, 10, "{document}") == 0) {
                text += doc;
                i += 10;
            } else {
                text += tmpl[i++];
            }
        }
        return tok.encode(text, false, true);
    }
    const GgufFile& f = ctx.model->gguf();
    const int32_t sep = (int32_t)f.get_int("tokenizer.ggml.seperator_token_id", -1);
    const bool add_sep = f.get_bool("tokenizer.ggml.add_sep_token", false) && sep >= 0;
    const int32_t eos = tok.eos() >= 0 ? tok.eos() : sep;
    const bool add_eos = tok.add_eos() && eos >= 0;
    std::vector<int32_t> out;
    if (tok.add_bos() && tok.bos() >= 0) out.push_back(tok.bos());
    for (int32_t id : tok.encode(query, false, false)) out.push_back(id);
    if (add_eos) out.push_back(eos);
    if (add_sep) out.push_back(sep);
    for (int32_t id : tok.encode(doc, false, false)) out.push_back(id);
    if (add_eos) out.push_back(eos);
    return out;
}

void handle_rerank(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    if (!ctx.params.reranking)
        throw HttpError(501, "not_supported_error",
                        "This server does not support reranking. Start it with `--reranking`");
    const Json body = parse_body(req);
    const bool tei = body.contains("texts");  // Hugging Face TEI's shape; else Jina's / Cohere's
    if (!body.contains("query")) bad_request("\"query\" must be provided");
    if (!body["query"].is_string()) bad_request("\"query\" must be a string");
    const std::string query = body["query"];
    const Json& docs_json = body.contains("documents") ? body["documents"] : tei ? body["texts"] : Json();
    if (!docs_json.is_array() || docs_json.empty() ||
        !std::all_of(docs_json.begin(), docs_json.end(), [](const Json& d) { return d.is_string(); }))
        bad_request("\"documents\" must be a non-empty string array");
    if (docs_json.size() > kMaxInputs)
        bad_request("\"documents\" holds %zu documents; at most %zu", docs_json.size(), kMaxInputs);
    const std::vector<std::string> docs = docs_json.get<std::vector<std::string>>();
    const int64_t top_n = get_int(body, "top_n", (int64_t)docs.size(), 0, INT32_MAX);
    const bool return_text = tei && get_bool(body, "return_text", false);
    const bool return_documents = get_bool(body, "return_documents", false);

    const std::string tmpl = ctx.model->gguf().get_str("tokenizer.chat_template.rerank", "");
    std::vector<std::shared_ptr<EmbedJob>> jobs;
    for (const std::string& d : docs) {
        jobs.push_back(std::make_shared<EmbedJob>());
        jobs.back()->tokens = rerank_tokens(ctx, tmpl, query, d);
    }
    run_jobs(ctx, req, jobs);

    const char* label = tei ? "score" : "relevance_score";
    std::vector<size_t> order(docs.size());
    int64_t n_tokens = 0;
    for (size_t i = 0; i < docs.size(); i++) {
        order[i] = i;
        n_tokens += (int64_t)jobs[i]->tokens.size();
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return jobs[a]->values[0] > jobs[b]->values[0]; });
    order.resize(std::min<size_t>(order.size(), (size_t)top_n));
    Json results = Json::array();
    for (size_t i : order) {
        Json r = {{"index", i}, {label, jobs[i]->values[0]}};
        if (return_text) r["text"] = docs[i];
        if (return_documents) r["document"] = {{"text", docs[i]}};
        results.push_back(std::move(r));
    }
    if (tei) return send_json(res, results);
    send_json(res, {{"model", get_string(body, "model", ctx.model_name)},
                    {"object", "list"},
                    {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}},
                    {"results", std::move(results)}});
}

}  // namespace

void resolve_embedding_options(ServerContext& ctx) {
    ServerParams& p = ctx.params;
    const char* flag = p.reranking                         ? "--reranking"
                       : p.pooling == Pooling::unspecified ? "rank pooling (the file's pooling_type)"
                                                           : "--pooling rank";
    if (p.reranking) {
        p.embedding = true;
        p.pooling = Pooling::rank;
    }
    if (p.pooling == Pooling::unspecified)  // the file's default, else none (as llama.cpp)
        p.pooling = ctx.model->hparams().pooling == Pooling::unspecified ? Pooling::none : ctx.model->hparams().pooling;
    if (!p.embedding) return;
    p.reranking = p.pooling == Pooling::rank;  // --embedding --pooling rank serves /rerank too (as llama-server)
    if (p.reranking && !has_rank_head(*ctx.model))
        fail("%s: %s needs a classification head (cls.weight or cls.output.weight), which this model does not have",
             p.model_path.c_str(), flag);
    BEE_LOG_INFO("embeddings: pooling %s, %d values per embedding%s", pooling_name(p.pooling),
                 pooled_width(*ctx.model, p.pooling), p.reranking ? ", /rerank on" : "");
}

void register_embedding_routes(httplib::Server& svr, ServerContext& ctx) {
    auto native =
        guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_embeddings(ctx, q, r, false); });
    svr.Post("/embedding", native);
    svr.Post("/embeddings", native);
    svr.Post("/v1/embeddings",
             guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_embeddings(ctx, q, r, true); }));
    auto rerank = guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_rerank(ctx, q, r); });
    for (const char* path : {"/rerank", "/reranking", "/v1/rerank", "/v1/reranking"}) svr.Post(path, rerank);
}

}  // namespace bee::server
