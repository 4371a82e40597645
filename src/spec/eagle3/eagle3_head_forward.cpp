// spec/eagle3/eagle3_head_forward: the EAGLE-3 head's encoder (fc over the target's features) and its one
// decoder block over a per-sequence KV (specs/drafters.md §3.2, §3.4, §8.7), with Bee's CPU kernels.
#include <cmath>
#include <limits>

#include "base/error.h"
#include "spec/eagle3/eagle3_head.h"

namespace bee {

void Eagle3Kv::cut(int32_t p) {
    int n = n_cells();
    while (n > 0 && pos[n - 1] >= p) n--;
    const size_t row = pos.empty() ? 0 : k.size() / pos.size();
    pos.resize(n);
    k.resize((size_t)n * row);
    v.resize((size_t)n * row);
}

static void mm(ThreadPool& pool, const Weight& w, const float* x, int n, float* y) {
    matmul(pool, w.type, w.data, w.ne1, w.ne0, x, n, y, w.layout);
}

void Eagle3Head::encode(ThreadPool& pool, const float* features, int n, float* g) const {
    const int64_t f3 = 3 * (int64_t)hp_.target_n_embd;
    if (!hp_.norm_before_fc) return mm(pool, w_.fc, features, n, g);
    std::vector<float> xn((size_t)n * f3);  // (n, 3 * H_t)
    for (int r = 0; r < n; r++)
        rms_norm(features + r * f3, (const float*)w_.enc_norm.data, xn.data() + r * f3, f3, hp_.norm_eps);
    mm(pool, w_.fc, xn.data(), n, g);
}

// The rows' runs of one sequence each: [begin, end) row ranges and their sequence; throws Error if a
// sequence's rows are not contiguous or their positions do not follow its KV in ascending order.
struct SeqRun {
    int r0, r1, seq;
};
static std::vector<SeqRun> seq_runs(Eagle3Kv* const* kvs, int n_kv, const Eagle3Rows& rows) {
    std::vector<SeqRun> runs;
    std::vector<uint8_t> seen(n_kv, 0);
    for (int r = 0; r < rows.n; r++) {
        const int s = rows.seq ? rows.seq[r] : 0;
        if (s < 0 || s >= n_kv) fail("eagle3 head: row %d names sequence %d of %d", r, s, n_kv);
        if (!runs.empty() && runs.back().seq == s) {
            runs.back().r1 = r + 1;
            continue;
        }
        if (seen[s]) fail("eagle3 head: the rows of sequence %d are not contiguous (row %d)", s, r);
        seen[s] = 1;
        runs.push_back({r, r + 1, s});
    }
    for (const SeqRun& u : runs) {
        const Eagle3Kv& kv = *kvs[u.seq];
        int32_t last = kv.pos.empty() ? INT32_MIN : kv.pos.back();
        for (int r = u.r0; r < u.r1; r++) {
            if (rows.pos[r] <= last)
                fail("eagle3 head: row %d at position %d does not follow position %d in its KV (cut the KV first)", r,
                     rows.pos[r], last);
            last = rows.pos[r];
        }
    }
    return runs;
}

void Eagle3Head::decode(ThreadPool& pool, Eagle3Kv* const* kvs, int n_kv, const Eagle3Rows& rows, float* hidden,
                        float* logits) const {
    const int n = rows.n;
    const int64_t e = hp_.n_embd;
    const size_t nq = (size_t)hp_.n_head * hp_.head_dim, nk = (size_t)hp_.n_head_kv * hp_.head_dim;
    for (int r = 0; r < n; r++)
        if (rows.token[r] < 0 || rows.token[r] >= w_.tok_embd.ne1)
            fail("eagle3 head: token %d out of range (0..%lld)", rows.token[r], (long long)w_.tok_embd.ne1 - 1);
    const std::vector<SeqRun> runs = seq_runs(kvs, n_kv, rows);
    std::vector<float> x2((size_t)n * 2 * e);  // (n, 2H): [attn_norm(embd(token)) ; hidden_norm(g)]
    std::vector<float> emb((size_t)n * e);     // (n, H) token embeddings, then the attention residual
    get_rows(w_.tok_embd.type, w_.tok_embd.data, e, rows.token, n, emb.data());
    for (int r = 0; r < n; r++) {
        float* xr = x2.data() + r * 2 * e;
        rms_norm(emb.data() + r * e, (const float*)w_.attn_norm.data, xr, e, hp_.norm_eps);
        rms_norm(rows.g + r * e, (const float*)w_.hidden_norm.data, xr + e, e, hp_.norm_eps);
    }
    std::vector<float> q(n * nq), k(n * nk), v(n * nk);  // (n, n_head * hd), (n, n_head_kv * hd) x2
    const MatmulOut qkv[3] = {{w_.wq.type, w_.wq.data, w_.wq.ne1, w_.wq.layout, q.data()},
                              {w_.wk.type, w_.wk.data, w_.wk.ne1, w_.wk.layout, k.data()},
                              {w_.wv.type, w_.wv.data, w_.wv.ne1, w_.wv.layout, v.data()}};
    matmul_shared_input(pool, qkv, 3, 2 * e, x2.data(), n);
    for (int r = 0; r < n; r++) {
        rope(q.data() + r * nq, hp_.n_head, hp_.head_dim, rows.pos[r], hp_.rope);
        rope(k.data() + r * nk, hp_.n_head_kv, hp_.head_dim, rows.pos[r], hp_.rope);
    }
    std::vector<float> att(n * nq);  // (n, n_head * hd)
    for (const SeqRun& u : runs) {   // each sequence attends to its own KV
        Eagle3Kv& kv = *kvs[u.seq];
        const int m = u.r1 - u.r0, base = kv.n_cells();
        kv.pos.insert(kv.pos.end(), rows.pos + u.r0, rows.pos + u.r1);
        kv.k.insert(kv.k.end(), k.begin() + u.r0 * nk, k.begin() + u.r1 * nk);
        kv.v.insert(kv.v.end(), v.begin() + u.r0 * nk, v.begin() + u.r1 * nk);
        // Cells are in ascending position, so row r (at cell base + r) sees cells 0..base + r: causal.
        std::vector<std::vector<int32_t>> vis(m);
        std::vector<const std::vector<int32_t>*> vis_ptr(m);
        for (int r = 0; r < m; r++) {
            for (int32_t c = 0; c <= base + r; c++) vis[r].push_back(c);
            vis_ptr[r] = &vis[r];
        }
        AttentionArgs a;
        a.n_rows = m;
        a.n_head = hp_.n_head;
        a.n_head_kv = hp_.n_head_kv;
        a.head_dim = hp_.head_dim;
        a.q = q.data() + u.r0 * nq;
        a.out = att.data() + u.r0 * nq;
        a.scale = hp_.attn_scale;
        a.k = (const uint8_t*)kv.k.data();
        a.v = (const uint8_t*)kv.v.data();
        a.k_cell_bytes = a.v_cell_bytes = nk * sizeof(float);
        a.visible = vis_ptr.data();
        attention(pool, a);
    }
    float* h = hidden;  // (n, H): residual + attention, then + FFN: the pre-norm output
    mm(pool, w_.wo, att.data(), n, h);
    const float* resid = hp_.norm_before_residual ? nullptr : rows.g;
    for (int r = 0; r < n; r++) add(h + r * e, resid ? resid + r * e : x2.data() + r * 2 * e + e, e);
    std::vector<float> hn((size_t)n * e), gate((size_t)n * hp_.n_ff), up((size_t)n * hp_.n_ff), ff((size_t)n * e);
    for (int r = 0; r < n; r++) rms_norm(h + r * e, (const float*)w_.ffn_norm.data, hn.data() + r * e, e, hp_.norm_eps);
    const MatmulOut gu[2] = {{w_.ffn_gate.type, w_.ffn_gate.data, w_.ffn_gate.ne1, w_.ffn_gate.layout, gate.data()},
                             {w_.ffn_up.type, w_.ffn_up.data, w_.ffn_up.ne1, w_.ffn_up.layout, up.data()}};
    matmul_shared_input(pool, gu, 2, e, hn.data(), n);  // one activation pass and parallel region for both
    matmul_gated(pool, w_.ffn_down.type, w_.ffn_down.data, e, hp_.n_ff, gate.data(), up.data(), GatedAct::silu, n,
                 ff.data(), w_.ffn_down.layout);
    for (int r = 0; r < n; r++) add(h + r * e, ff.data() + r * e, e);
    if (logits) this->logits(pool, h, n, logits);
}

void Eagle3Head::logits(ThreadPool& pool, const float* hidden, int n, float* out) const {
    const int64_t e = hp_.n_embd;
    std::vector<float> hn((size_t)n * e);
    for (int r = 0; r < n; r++)
        rms_norm(hidden + r * e, (const float*)w_.output_norm.data, hn.data() + r * e, e, hp_.norm_eps);
    mm(pool, w_.output, hn.data(), n, out);
}

void Eagle3Head::scatter_logits(const float* draft, float* full, int n_vocab) const {
    if (d2t_.empty()) {
        for (int i = 0; i < n_vocab; i++) full[i] = draft[i];
        return;
    }
    for (int i = 0; i < n_vocab; i++) full[i] = -std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < d2t_.size(); i++) full[d2t_[i]] = draft[i];
}

}  // namespace bee
