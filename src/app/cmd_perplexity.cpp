// app/cmd_perplexity: `bee perplexity` — llama-perplexity's chunked perplexity over a text file, the
// saving of a KL-divergence base (--kl-divergence-base) and the comparison against one (--kl-divergence).
//
// Method (llama-perplexity's): the text is tokenized once (BOS first if the vocab adds one) and cut into
// chunks of n_ctx tokens. Each chunk is decoded from an empty cache, its first token replaced by BOS when
// the vocab adds one; the logits at positions first = n_ctx/2 .. n_ctx-2 score the next token, so every
// scored token has at least n_ctx/2 tokens of context. PPL = exp(mean nll); its error is
// PPL * sqrt(var(nll) / (count - 1)), var(nll) = mean(nll^2) - mean(nll)^2.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "app/args.h"
#include "app/commands.h"
#include "app/perplexity_kld.h"
#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "base/timer.h"
#include "model/engine.h"

namespace bee {

namespace {

constexpr int kDefaultCtx = 512;  // llama-perplexity's default chunk size

struct PerplexityOptions {
    ModelOptions model;
    std::string text_file;
    std::string kld_base;   // base file: written, or read with --kl-divergence
    int32_t n_chunks = -1;  // -1: every whole chunk of the text
    bool kl_divergence = false;
};

// Running sums of the negative log-likelihood of scored tokens.
struct NllSums {
    double nll = 0, nll2 = 0;
    size_t count = 0;
    void add(double v) {
        nll += v;
        nll2 += v * v;
        count++;
    }
    double ppl() const { return std::exp(nll / count); }
};

// "Final estimate: PPL = X +/- Y", llama-perplexity's last line and its uncertainty formula.
void print_final_estimate(const NllSums& s) {
    const double mean = s.nll / s.count;
    const double var = s.nll2 / s.count - mean * mean;
    if (!(var > 0) || s.count < 2)
        fail("cannot estimate the uncertainty of the perplexity (variance %g over %zu tokens)", var, s.count);
    const double ppl = std::exp(mean);
    printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, ppl * std::sqrt(var / (s.count - 1)));
    fflush(stdout);
}

// The text as token ids, with BOS first if the vocab adds one (never a trailing EOS).
std::vector<int32_t> tokenize_text(const Tokenizer& tok, const std::string& path) {
    const std::string text = read_file(path);
    const double t0 = time_ms();
    std::vector<int32_t> ids = tok.encode(text, true, false);
    if (tok.add_eos() && !ids.empty() && ids.back() == tok.eos()) ids.pop_back();
    BEE_LOG_INFO("perplexity: %s: %zu bytes, %zu tokens (tokenized in %.0f ms)", path.c_str(), text.size(), ids.size(),
                 time_ms() - t0);
    return ids;
}

// Decodes one chunk (n_ctx tokens at `toks`) from an empty cache in batches of n_batch and returns the
// logits of positions first .. n_ctx-1: (n_ctx - first, n_vocab).
void decode_chunk(Engine& eng, const int32_t* toks, int n_ctx, int first, int n_batch, std::vector<float>& logits) {
    const Tokenizer& tok = eng.model().tokenizer();
    eng.memory().clear_all();
    Batch b;
    DecodeOutput out;
    logits.clear();
    for (int p0 = 0; p0 < n_ctx; p0 += n_batch) {
        b.clear();
        for (int p = p0; p < std::min(n_ctx, p0 + n_batch); p++) {
            const int32_t t = p == 0 && tok.add_bos() ? tok.bos() : toks[p];  // llama-perplexity: BOS per chunk
            b.add(t, p, 0, p >= first);
        }
        eng.decode(b, out);
        logits.insert(logits.end(), out.logits.begin(), out.logits.end());
    }
}

struct Evaluation {
    std::unique_ptr<Model> model;
    std::unique_ptr<Engine> engine;
    int n_ctx = 0, first = 0, n_batch = 0, n_vocab = 0;
};

// Loads the model and makes an engine whose context holds exactly one chunk.
Evaluation open_evaluation(const PerplexityOptions& o, int n_ctx) {
    Evaluation ev;
    ev.model = load_model(o.model);
    BEE_LOG_INFO("model: %s", ev.model->describe().c_str());
    const int n_train = ev.model->hparams().n_ctx_train;
    if (n_ctx < 4) fail("-c %d is too small: a chunk needs at least 4 tokens (default %d)", n_ctx, kDefaultCtx);
    if (n_ctx > n_train)
        fail("-c %d is larger than the model's context (%d tokens, %s); use -c %d or less", n_ctx, n_train,
             o.model.model.c_str(), n_train);
    EngineParams ep = engine_params(o.model);
    ep.n_ctx = n_ctx;
    ep.n_ubatch = std::min(ep.n_ubatch, n_ctx);
    ev.engine = std::make_unique<Engine>(*ev.model, ep);
    ev.n_ctx = n_ctx;
    ev.first = n_ctx / 2;
    ev.n_batch = std::min(o.model.n_batch, n_ctx);
    ev.n_vocab = ev.model->hparams().n_vocab;
    BEE_LOG_INFO("perplexity: chunks of %d tokens scored from position %d, batch %d, %d threads, KV %s/%s", n_ctx,
                 ev.first, ev.n_batch, ev.engine->params().n_threads, ggml_type_name(ev.engine->params().type_k),
                 ggml_type_name(ev.engine->params().type_v));
    return ev;
}

int chunk_count(size_t n_tokens, int n_ctx, int n_chunks) {
    const int n_max = (int)(n_tokens / n_ctx);
    return n_chunks < 0 ? n_max : std::min(n_chunks, n_max);
}

// Perplexity mode, and with --kl-divergence-base the base file of every scored row.
int run_perplexity(const PerplexityOptions& o) {
    Evaluation ev = open_evaluation(o, o.model.n_ctx < 0 ? kDefaultCtx : o.model.n_ctx);
    const Tokenizer& tok = ev.model->tokenizer();
    std::vector<int32_t> tokens = tokenize_text(tok, o.text_file);
    if (tokens.size() < 2 * (size_t)ev.n_ctx)
        fail(
            "%s tokenizes to only %zu tokens; perplexity with -c %d needs at least %d (two chunks): give a longer "
            "text or a smaller -c",
            o.text_file.c_str(), tokens.size(), ev.n_ctx, 2 * ev.n_ctx);
    const int n_chunk = chunk_count(tokens.size(), ev.n_ctx, o.n_chunks);
    const int n_rows = ev.n_ctx - 1 - ev.first;  // scored tokens per chunk

    std::unique_ptr<KldWriter> writer;
    if (!o.kld_base.empty()) {
        KldHeader h;
        h.n_ctx = ev.n_ctx;
        h.n_vocab = ev.n_vocab;
        h.n_chunk = n_chunk;
        h.first = ev.first;
        h.vocab_hash = vocab_fingerprint(tok);
        h.model_name = o.model.model;
        writer = std::make_unique<KldWriter>(o.kld_base, h, tokens);
        BEE_LOG_INFO("perplexity: saving the base log-probabilities to %s (%.1f MiB)", o.kld_base.c_str(),
                     (double)n_chunk * n_rows * (8 + 2.0 * ev.n_vocab) / 1048576.0);
    }
    BEE_LOG_INFO("perplexity: %d chunks, %d scored tokens each", n_chunk, n_rows);

    NllSums sums;
    std::vector<float> logits;
    std::vector<double> nll(n_rows);
    std::vector<KldBaseRow> rows(writer ? n_rows : 0);
    for (int c = 0; c < n_chunk; c++) {
        const double t0 = time_ms();
        const int32_t* chunk = tokens.data() + (size_t)c * ev.n_ctx;
        decode_chunk(*ev.engine, chunk, ev.n_ctx, ev.first, ev.n_batch, logits);
        // Rows are scored in parallel and summed in order, so the result does not depend on threads.
        ev.engine->pool().run(n_rows, [&](int r, int) {
            const float* l = logits.data() + (size_t)r * ev.n_vocab;
            const int32_t next = chunk[ev.first + r + 1];
            if (writer) kld_encode_row(l, ev.n_vocab, next, rows[r]);
            float mx = l[0];
            for (int i = 1; i < ev.n_vocab; i++) mx = std::max(mx, l[i]);
            double s = 0;
            for (int i = 0; i < ev.n_vocab; i++) s += std::exp((double)l[i] - mx);
            nll[r] = mx + std::log(s) - l[next];
        });
        for (int r = 0; r < n_rows; r++) sums.add(nll[r]);
        if (writer)
            for (const KldBaseRow& row : rows) writer->write_row(row);
        if (c == 0) BEE_LOG_INFO("perplexity: %.2f seconds per chunk", (time_ms() - t0) / 1000.0);
        printf("[%d]%.4f,", c + 1, sums.ppl());
        fflush(stdout);
    }
    printf("\n");
    if (writer) writer->finish();
    print_final_estimate(sums);
    return 0;
}

// --kl-divergence: re-evaluates the base file's tokens and compares every scored row with the base.
int run_kl_divergence(const PerplexityOptions& o) {
    KldReader base(o.kld_base);
    const KldHeader& h = base.header();
    if (o.model.n_ctx >= 0 && (uint32_t)o.model.n_ctx != h.n_ctx)
        fail("-c %d differs from the base file %s (made with -c %u); leave -c out or give -c %u", o.model.n_ctx,
             o.kld_base.c_str(), h.n_ctx, h.n_ctx);
    Evaluation ev = open_evaluation(o, (int)h.n_ctx);
    const Tokenizer& tok = ev.model->tokenizer();
    if (h.n_vocab != (uint32_t)ev.n_vocab || h.vocab_hash != vocab_fingerprint(tok))
        fail(
            "the base file %s was made with %s, whose vocabulary (%u tokens) differs from %s's (%d tokens); KL "
            "divergence compares runs of models with the same vocabulary",
            o.kld_base.c_str(), h.model_name.c_str(), h.n_vocab, o.model.model.c_str(), ev.n_vocab);
    const std::vector<int32_t>& tokens = base.tokens();
    if (!o.text_file.empty()) {  // optional: check that the base was made from this text
        const std::vector<int32_t> text = tokenize_text(tok, o.text_file);
        for (size_t i = 0; i < tokens.size(); i++)
            if (i >= text.size() || text[i] != tokens[i])
                fail(
                    "%s does not match the base file %s: token %zu differs (base %d, text %d); the base was made "
                    "from another text",
                    o.text_file.c_str(), o.kld_base.c_str(), i, tokens[i], i < text.size() ? text[i] : -1);
    }
    for (int32_t t : tokens)
        if (t < 0 || t >= ev.n_vocab)
            fail("the base file %s holds token id %d outside the vocabulary", o.kld_base.c_str(), t);
    const int n_chunk = o.n_chunks < 0 ? (int)h.n_chunk : std::min(o.n_chunks, (int)h.n_chunk);
    const int n_rows = (int)h.rows_per_chunk();
    BEE_LOG_INFO("perplexity: KL divergence over %d chunks of %s", n_chunk, o.kld_base.c_str());

    printf(
        "chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS"
        "            Same top p\n");
    KldStats stats;
    NllSums sums;
    std::vector<float> logits;
    std::vector<KldBaseRow> rows(n_rows);
    std::vector<KldRowResult> results(n_rows);
    for (int c = 0; c < n_chunk; c++) {
        for (KldBaseRow& row : rows) base.read_row(row);
        const int32_t* chunk = tokens.data() + (size_t)c * ev.n_ctx;
        decode_chunk(*ev.engine, chunk, ev.n_ctx, ev.first, ev.n_batch, logits);
        ev.engine->pool().run(n_rows, [&](int r, int) {
            results[r] =
                kld_compare_row(logits.data() + (size_t)r * ev.n_vocab, ev.n_vocab, chunk[ev.first + r + 1], rows[r]);
        });
        for (const KldRowResult& r : results) {
            stats.add(r);
            sums.add(r.nll);
        }
        stats.print_chunk_line(stdout, c + 1);
        fflush(stdout);
    }
    printf("\n");
    stats.print_summary(stdout);
    printf("\n");
    print_final_estimate(sums);
    return 0;
}

}  // namespace

int cmd_perplexity(int argc, char** argv) {
    PerplexityOptions o;
    o.model.n_ctx = -1;  // not given: 512, or the base file's with --kl-divergence
    ArgParser p("bee perplexity",
                "Perplexity of a model over a text, in chunks of -c tokens (default 512 here), like llama-perplexity.");
    add_model_options(p, o.model);
    p.str("-f,--file", &o.text_file, "FILE",
          "text to evaluate (optional with --kl-divergence: checked against the base)");
    p.i32("--chunks", &o.n_chunks, "evaluate at most N chunks (-1: all) [-1]", -1, INT32_MAX);
    p.str("--kl-divergence-base", &o.kld_base, "FILE",
          "save the base log-probabilities to FILE, or read them with --kl-divergence");
    p.flag("--kl-divergence", &o.kl_divergence, "compare with the base file: KLD, same top token, PPL ratio");
    try {
        if (!p.parse(argc, argv)) return 0;
        if (o.model.model.empty()) fail("no model given (use -m FILE)");
        if (o.n_chunks == 0) fail("--chunks 0 evaluates nothing; give N >= 1, or -1 for every chunk");
        if (o.kl_divergence) {
            if (o.kld_base.empty()) fail("--kl-divergence needs --kl-divergence-base FILE (made by a base run)");
            return run_kl_divergence(o);
        }
        if (o.text_file.empty()) fail("no text given (use -f FILE; `make perplexity-data` fetches one)");
        return run_perplexity(o);
    } catch (const Error& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}

}  // namespace bee
