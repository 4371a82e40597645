// tests/unit/spec/spec_loop: one sequence, prompt to last token, through the Speculator contract.
#include "spec_loop.h"

#include <algorithm>

#include "base/error.h"
#include "base/timer.h"

namespace bee {

GenerateResult generate_tokens(Engine& eng, Sampler& sampler, Speculator* spec, const std::vector<int32_t>& prompt,
                               const GenerateOptions& opt, const std::function<void(int32_t)>& on_token) {
    const Tokenizer& tok = eng.model().tokenizer();
    const int n_ctx = eng.params().n_ctx;
    if (prompt.empty()) fail("the prompt is empty (give -p TEXT or -f FILE)");
    if ((int)prompt.size() >= n_ctx)
        fail("the prompt has %zu tokens but the context holds %d (raise -c)", prompt.size(), n_ctx);
    GenerateResult r;
    for (int32_t t : prompt) sampler.accept(t);

    double t0 = time_ms();
    Batch b;
    DecodeOutput out;
    const int n_batch = std::max(1, opt.n_batch);
    for (size_t i = 0; i < prompt.size(); i += (size_t)n_batch) {
        b.clear();
        const size_t end = std::min(prompt.size(), i + (size_t)n_batch);
        for (size_t j = i; j < end; j++) b.add(prompt[j], (int32_t)j, 0, j + 1 == prompt.size());
        if (spec) b.capture_layers = spec->capture_layers();
        eng.decode(b, out);
        if (spec) spec->observe_target(b, out, 0, b.size(), true);
    }
    r.prompt_ms = time_ms() - t0;

    t0 = time_ms();
    std::vector<int32_t> history = prompt;  // tokens in the cache
    GrammarConstraint* g = opt.grammar;
    int32_t id_last = g ? g->sample(sampler, out.logits_at(0)) : sampler.sample(out.logits_at(0));
    if (id_last < 0) return r;  // the grammar allows no token at all
    if (g) g->accept(id_last);
    sampler.accept(id_last);
    if (spec) spec->begin(prompt);
    const auto budget_left = [&] { return opt.n_predict < 0 ? INT32_MAX : opt.n_predict - (int)r.tokens.size(); };
    const auto stops = [&](int32_t t) { return !opt.ignore_eos && tok.is_eog(t); };
    bool done = stops(id_last) || opt.n_predict == 0;
    if (!done) {
        r.tokens.push_back(id_last);
        if (on_token) on_token(id_last);
    }
    while (!done && budget_left() > 0) {
        const int32_t pos = (int32_t)history.size();
        if (pos >= n_ctx) break;  // context full
        DraftLimits lim;
        lim.n_max = std::min(budget_left() - 1, n_ctx - pos - 1);
        lim.n_nodes = eng.params().n_ubatch - 1;
        lim.target_temp = sampler.params().temp;
        lim.grammar = g;
        b.clear();
        int row0 = 0;
        if (spec) {
            spec->draft(history, id_last, lim);
            if (opt.on_draft) opt.on_draft(spec->tree());
            row0 = spec->add_to_batch(b, id_last, pos, 0);
        } else {
            b.add(id_last, pos, 0, true);
        }
        if (spec) b.capture_layers = spec->capture_layers();
        eng.decode(b, out);
        r.n_decodes++;
        VerifyResult v;
        if (spec) {
            v = spec->verify(b, out, row0, sampler, g);
            spec->observe_target(b, out, row0, b.size() - row0, false);
            spec->commit(eng, 0, pos, v);
        } else {
            const int32_t t = g ? g->sample(sampler, out.logits_at(0)) : sampler.sample(out.logits_at(0));
            if (t < 0) {
                v.stuck = true;
            } else {
                if (g) g->accept(t);
                sampler.accept(t);
                v.tokens.push_back(t);
            }
        }
        history.push_back(id_last);
        for (size_t i = 0; i < v.tokens.size() && !done; i++) {
            const int32_t t = v.tokens[i];
            if (stops(t) || budget_left() <= 0) {
                done = true;
                break;
            }
            r.tokens.push_back(t);
            if (on_token) on_token(t);
            if (i + 1 < v.tokens.size()) history.push_back(t);
            id_last = t;
        }
        if (v.stuck) done = true;  // no token fits the grammar after the accepted drafts
    }
    r.predicted_ms = time_ms() - t0;
    if (spec) spec->end(r.tokens);
    return r;
}

}  // namespace bee
