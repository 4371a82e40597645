// server/routes_embeddings: /v1/embeddings (OpenAI), /embedding and /embeddings (llama-server's native
// shapes) with --embedding, and /rerank (/v1/rerank, /reranking, /v1/reranking) with --reranking. The
// bodies are read and the replies shaped by server/wire_embeddings; each input becomes one Task whose
// engine_action (runtime/embed) decodes it on the inference thread.
#include <algorithm>
#include <cmath>
#include <memory>

#include "base/error.h"
#include "base/log.h"
#include "runtime/embed.h"
#include "server/response.h"
#include "server/routes.h"
#include "server/wire_embeddings.h"

namespace bee::server {

namespace {

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

// Jobs for the inputs' tokens.
std::vector<std::shared_ptr<EmbedJob>> jobs_for(const std::vector<std::vector<int32_t>>& inputs) {
    std::vector<std::shared_ptr<EmbedJob>> jobs;
    for (const std::vector<int32_t>& tokens : inputs) {
        jobs.push_back(std::make_shared<EmbedJob>());
        jobs.back()->tokens = tokens;
    }
    return jobs;
}

void handle_embeddings(ServerContext& ctx, const httplib::Request& req, httplib::Response& res, bool oai) {
    const ServerParams& sp = ctx.params;
    if (!sp.embedding)
        throw HttpError(501, "not_supported_error",
                        "This server does not support embeddings. Start it with `--embeddings`");
    if (oai && sp.pooling == Pooling::none)
        bad_request("Pooling type 'none' is not OAI compatible. Please use a different pooling type");
    const EmbeddingsRequest er = read_embeddings_request(ctx, parse_body(req), oai);
    std::vector<std::shared_ptr<EmbedJob>> jobs = jobs_for(er.inputs);
    run_jobs(ctx, req, jobs);
    const size_t width = (size_t)pooled_width(*ctx.model, sp.pooling);
    std::vector<std::vector<float>> values;
    for (auto& job : jobs) {
        if (sp.pooling != Pooling::none) normalize(job->values.data(), width, er.normalize);  // per-token rows stay raw
        values.push_back(std::move(job->values));
    }
    send_json(res, embeddings_json(er, values, width));
}

void handle_rerank(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    if (!ctx.params.reranking)
        throw HttpError(501, "not_supported_error",
                        "This server does not support reranking. Start it with `--reranking`");
    const RerankRequest rr = read_rerank_request(ctx, parse_body(req));
    std::vector<std::shared_ptr<EmbedJob>> jobs = jobs_for(rr.inputs);
    run_jobs(ctx, req, jobs);
    std::vector<float> scores;
    for (const auto& job : jobs) scores.push_back(job->values[0]);
    send_json(res, rerank_json(rr, scores));
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

void register_embedding_routes(RouteTable& svr, ServerContext& ctx) {
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
