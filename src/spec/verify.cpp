// spec/verify: sample-and-match over trees and exact rejection sampling over sampled chains.
#include "spec/verify.h"

namespace bee {

namespace {

float q_of(const std::vector<TokenProb>& q, int32_t id) {
    for (const TokenProb& t : q)
        if (t.id == id) return t.p;
    return 0.0f;
}

// A draw from norm(max(0, p - q)), p the target's distribution (normalized).
int32_t draw_residual(Sampler& s, const std::vector<TokenProb>& p, const std::vector<TokenProb>& q) {
    std::vector<TokenProb> residual;
    double sum = 0.0;
    for (const TokenProb& t : p) {
        const double r = (double)t.p - q_of(q, t.id);
        if (r > 0.0) {
            residual.push_back({t.id, (float)r});
            sum += r;
        }
    }
    if (residual.empty()) return s.draw(p);  // p == q up to rounding: p itself is exact
    for (TokenProb& t : residual) t.p = (float)(t.p / sum);
    return s.draw(residual);
}

// One step of Leviathan et al. (2023) Alg. 1 at a node whose token d was drawn from q. Returns d if
// accepted, else a draw from norm(max(0, p - q)).
int32_t accept_or_resample(Sampler& s, const std::vector<TokenProb>& p, int32_t d, const std::vector<TokenProb>& q,
                           bool& accepted) {
    const float pd = q_of(p, d);
    const float qd = q_of(q, d);
    const double u = s.uniform();
    accepted = qd > 0.0f && u * qd < pd;  // u < p/q without dividing
    if (accepted) return d;
    return draw_residual(s, p, q);
}

}  // namespace

VerifyResult verify_tree(const DraftTree& tree, const std::vector<const float*>& logits, Sampler& sampler,
                         GrammarConstraint* grammar) {
    VerifyResult r;
    const bool rejection = tree.drafted() && tree.is_chain() && (int)tree.q.size() == tree.size();
    // children[node + 1]: node indices below `node` (-1: the root)
    std::vector<std::vector<int32_t>> children(tree.size() + 1);
    for (int i = 0; i < tree.size(); i++) children[tree.nodes[i].parent + 1].push_back(i);

    std::vector<TokenProb> p;
    int32_t cur = -1;
    for (;;) {
        const float* row = logits[cur + 1];
        const std::vector<int32_t>& kids = children[cur + 1];
        int32_t tok;
        int32_t next = -1;
        if (rejection && (!kids.empty() || !tree.q_cut.empty())) {
            const std::vector<TokenProb>* dist = &p;
            if (grammar) {
                if (!grammar->distribution(sampler, row, p)) break;
            } else {
                sampler.apply(row);
                dist = &sampler.candidates();
            }
            bool ok = false;
            if (kids.empty())  // a chain cut by the grammar: its next draft was rejected for sure
                tok = draw_residual(sampler, *dist, tree.q_cut);
            else tok = accept_or_resample(sampler, *dist, tree.nodes[kids[0]].token, tree.q[kids[0]], ok);
            if (ok) next = kids[0];
        } else {
            tok = grammar ? grammar->sample(sampler, row) : sampler.sample(row);
            if (tok < 0) break;
            for (int32_t k : kids)
                if (tree.nodes[k].token == tok) {
                    next = k;
                    break;
                }
        }
        if (grammar) grammar->accept(tok);
        sampler.accept(tok);
        r.tokens.push_back(tok);
        if (next < 0) return r;
        r.path.push_back(next);
        cur = next;
    }
    r.stuck = true;  // the grammar allows no token here
    return r;
}

}  // namespace bee
