// server/routes_metrics: GET /metrics in Prometheus text format with llama-server's metric names
// (llamacpp:*), so existing dashboards keep working, plus the speculative-decoding totals llama-server
// lacks (llamacpp:n_drafted_total, llamacpp:n_drafted_accepted_total, llamacpp:n_drafted_grammar_cut_total)
// in the same style.
#include <ctime>

#include "base/error.h"
#include "server/http_util.h"
#include "server/idle_sleep.h"
#include "server/routes.h"

namespace bee::server {

namespace {

struct Metric {
    const char* name;
    const char* type;
    const char* help;
    double value;
};

std::string prometheus_text(const SchedulerMetrics& m) {
    const double busy_per_decode = m.n_decode_total ? (double)m.n_busy_slots_total / (double)m.n_decode_total : 0.0;
    const Metric metrics[] = {
        {"prompt_tokens_total", "counter", "Number of prompt tokens processed.", (double)m.prompt_tokens_total},
        {"prompt_tokens_cached_total", "counter", "Number of prompt tokens reused from the cache",
         (double)m.prompt_tokens_cached_total},
        {"prompt_seconds_total", "counter", "Prompt process time", m.prompt_seconds_total},
        {"tokens_predicted_total", "counter", "Number of generation tokens processed.",
         (double)m.tokens_predicted_total},
        {"tokens_predicted_seconds_total", "counter", "Predict process time", m.tokens_predicted_seconds_total},
        {"n_decode_total", "counter", "Total number of llama_decode() calls", (double)m.n_decode_total},
        {"n_tokens_max", "counter", "Largest observed n_tokens.", (double)m.n_tokens_max},
        {"n_busy_slots_per_decode", "gauge", "Average number of busy slots per llama_decode() call", busy_per_decode},
        {"prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s.",
         m.bucket_prompt_seconds > 0 ? (double)m.bucket_prompt_tokens / m.bucket_prompt_seconds : 0.0},
        {"predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s.",
         m.bucket_predicted_seconds > 0 ? (double)m.bucket_predicted_tokens / m.bucket_predicted_seconds : 0.0},
        {"n_drafted_total", "counter", "Speculative draft tokens proposed (finished requests).",
         (double)m.n_drafted_total},
        {"n_drafted_accepted_total", "counter", "Speculative draft tokens accepted (finished requests).",
         (double)m.n_drafted_accepted_total},
        {"n_drafted_grammar_cut_total", "counter",
         "Speculative draft tokens a request's grammar rejected before verification (finished requests).",
         (double)m.n_drafted_grammar_cut_total},
        // llama-server's names for the speculative counters
        {"spec_decode_num_draft_tokens_total", "counter", "Number of speculative draft tokens proposed.",
         (double)m.n_drafted_total},
        {"spec_decode_num_accepted_tokens_total", "counter", "Number of speculative draft tokens accepted.",
         (double)m.n_drafted_accepted_total},
        {"spec_decode_num_drafts_total", "counter", "Number of speculative drafts verified.",
         (double)m.n_draft_rounds_total},
        {"requests_processing", "gauge", "Number of requests processing.", (double)m.requests_processing},
        {"requests_deferred", "gauge", "Number of requests deferred.", (double)m.requests_deferred},
    };
    std::string out;
    for (const Metric& x : metrics)
        out += strfmt("# HELP llamacpp:%s %s\n# TYPE llamacpp:%s %s\nllamacpp:%s %.17g\n", x.name, x.help, x.name,
                      x.type, x.name, x.value);
    return out;
}

}  // namespace

void register_metrics_routes(RouteTable& svr, ServerContext& ctx) {
    svr.Get("/metrics", guarded([&ctx](const httplib::Request&, httplib::Response& res) {
                if (!ctx.params.metrics)
                    throw HttpError(501, "not_supported_error",
                                    "This server does not support metrics endpoint. Start it with `--metrics`");
                res.set_header("Process-Start-Time-Unix", std::to_string(ctx.created));
                // while the server sleeps: the counters kept when it fell asleep (the scrape does not wake it)
                const IdleSleep::Hold awake = ctx.sleep ? ctx.sleep->peek() : nullptr;
                const SchedulerMetrics m =
                    ctx.sleep && !awake ? ctx.sleep->take_cached_metrics() : ctx.scheduler->metrics(true);
                res.set_content(prometheus_text(m), "text/plain; version=0.0.4");
            }));
}

}  // namespace bee::server
