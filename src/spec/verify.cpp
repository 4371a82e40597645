// spec/verify: sample-and-match over trees and exact rejection sampling over sampled chains.
#include "spec/verify.h"

namespace bee {

namespace {

float q_of(const std::vector<TokenProb>& q, int32_t id) {
    for (const TokenProb& t : q)
        if (t.id == id) return t.p;
    return 0.0f;
}

// One step of Leviathan et al. (2023) Alg. 1 at a node whose token d was drawn from q. Returns d if
// accepted, else a draw from norm(max(0, p - q)) (p = the sampler's candidates after apply()).
int32_t accept_or_resample(Sampler& s, int32_t d, const std::vector<TokenProb>& q, bool& accepted) {
    const float pd = s.prob_of(d);
    const float qd = q_of(q, d);
    const double u = s.uniform();
    accepted = qd > 0.0f && u * qd < pd;  // u < p/q without dividing
    if (accepted) return d;
    std::vector<TokenProb> residual;
    double sum = 0.0;
    for (const TokenProb& t : s.candidates()) {
        const double r = (double)t.p - q_of(q, t.id);
        if (r > 0.0) {
            residual.push_back({t.id, (float)r});
            sum += r;
        }
    }
    if (residual.empty()) return s.draw(s.candidates());  // p == q up to rounding: p itself is exact
    for (TokenProb& t : residual) t.p = (float)(t.p / sum);
    return s.draw(residual);
}

}  // namespace

VerifyResult verify_tree(const DraftTree& tree, const std::vector<const float*>& logits, Sampler& sampler) {
    VerifyResult r;
    const bool rejection = !tree.empty() && tree.is_chain() && (int)tree.q.size() == tree.size();
    // children[node + 1]: node indices below `node` (-1: the root)
    std::vector<std::vector<int32_t>> children(tree.size() + 1);
    for (int i = 0; i < tree.size(); i++) children[tree.nodes[i].parent + 1].push_back(i);

    int32_t cur = -1;
    for (;;) {
        const float* row = logits[cur + 1];
        const std::vector<int32_t>& kids = children[cur + 1];
        int32_t tok;
        int32_t next = -1;
        if (rejection && !kids.empty()) {
            sampler.apply(row);
            bool ok = false;
            tok = accept_or_resample(sampler, tree.nodes[kids[0]].token, tree.q[kids[0]], ok);
            if (ok) next = kids[0];
        } else {
            tok = sampler.sample(row);
            for (int32_t k : kids)
                if (tree.nodes[k].token == tok) {
                    next = k;
                    break;
                }
        }
        sampler.accept(tok);
        r.tokens.push_back(tok);
        if (next < 0) return r;
        r.path.push_back(next);
        cur = next;
    }
}

}  // namespace bee
