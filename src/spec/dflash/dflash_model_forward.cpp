// spec/dflash/dflash_model_forward: the DFlash drafter's context K/V (fc → hidden_norm → per layer
// k_norm(Wk·)+rope and Wv·, specs/drafters.md §8.2) and its block forward (§2.2, §2.4): Qwen3-style layers
// whose block rows attend non-causally to each other and to a window of the context, with Bee's CPU kernels.
#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "spec/dflash/dflash_model.h"

namespace bee {

void DflashContext::cut(int32_t p) {
    int n = n_cells();
    while (n > 0 && pos[n - 1] >= p) n--;
    const size_t cells = pos.size();
    for (std::vector<std::vector<float>>* kv : {&k, &v})
        for (std::vector<float>& t : *kv) t.resize(cells ? t.size() / cells * n : 0);
    pos.resize(n);
}

void DflashContext::drop_before(int32_t p) {
    int n = 0;
    while (n < n_cells() && pos[n] < p) n++;
    const size_t cells = pos.size();
    for (std::vector<std::vector<float>>* kv : {&k, &v})
        for (std::vector<float>& t : *kv) t.erase(t.begin(), t.begin() + (cells ? t.size() / cells * n : 0));
    pos.erase(pos.begin(), pos.begin() + n);
}

static void mm(ThreadPool& pool, const Weight& w, const float* x, int n, float* y) {
    matmul(pool, w.type, w.data, w.ne1, w.ne0, x, n, y, w.layout);
}

// x (n, n_head * hd): each head through the per-head RMS norm, then roped at its row's position.
static void norm_rope_heads(float* x, int n, int n_head, const Weight& norm, const int32_t* pos,
                            const DflashHParams& hp) {
    const int hd = hp.head_dim;
    for (int r = 0; r < n; r++) {
        float* row = x + (size_t)r * n_head * hd;
        for (int h = 0; h < n_head; h++) rms_norm(row + h * hd, (const float*)norm.data, row + h * hd, hd, hp.norm_eps);
        rope(row, n_head, hd, pos[r], hp.rope);
    }
}

void DflashModel::add_context(ThreadPool& pool, DflashContext& ctx, const float* features, const int32_t* pos,
                              int n) const {
    DflashContext* c = &ctx;
    add_contexts(pool, &c, &n, 1, features, pos);
}

void DflashModel::add_contexts(ThreadPool& pool, DflashContext* const* ctxs, const int* counts, int n_ctx,
                               const float* features, const int32_t* pos) const {
    int n = 0;
    for (int c = 0; c < n_ctx; c++) {
        int32_t last = ctxs[c]->pos.empty() ? INT32_MIN : ctxs[c]->pos.back();
        for (int r = n; r < n + counts[c]; r++) {
            if (pos[r] <= last)
                fail("dflash: context row %d at position %d does not follow position %d (cut the context first)", r - n,
                     pos[r], last);
            last = pos[r];
        }
        n += counts[c];
    }
    if (n <= 0) return;
    const int64_t e = hp_.n_embd;
    const size_t nk = (size_t)hp_.n_head_kv * hp_.head_dim;
    std::vector<float> fused((size_t)n * e);  // (n, H)
    mm(pool, w_.fc, features, n, fused.data());
    for (int r = 0; r < n; r++) {
        float* fr = fused.data() + r * e;
        if (hp_.fc_scale != 1.0f) scale(fr, hp_.fc_scale, e);
        rms_norm(fr, (const float*)w_.hidden_norm.data, fr, e, hp_.norm_eps);
    }
    for (int c = 0; c < n_ctx; c++) {
        ctxs[c]->k.resize(hp_.n_layer);
        ctxs[c]->v.resize(hp_.n_layer);
    }
    std::vector<float> k(n * nk), v(n * nk);  // (n, n_head_kv * hd)
    for (int il = 0; il < hp_.n_layer; il++) {
        const DflashLayer& L = w_.layers[il];
        const MatmulOut kv[2] = {{L.wk.type, L.wk.data, L.wk.ne1, L.wk.layout, k.data()},
                                 {L.wv.type, L.wv.data, L.wv.ne1, L.wv.layout, v.data()}};
        matmul_shared_input(pool, kv, 2, e, fused.data(), n);
        norm_rope_heads(k.data(), n, hp_.n_head_kv, L.k_norm, pos, hp_);
        size_t r0 = 0;
        for (int c = 0; c < n_ctx; c++) {
            const size_t r1 = r0 + (size_t)counts[c];
            ctxs[c]->k[il].insert(ctxs[c]->k[il].end(), k.begin() + r0 * nk, k.begin() + r1 * nk);
            ctxs[c]->v[il].insert(ctxs[c]->v[il].end(), v.begin() + r0 * nk, v.begin() + r1 * nk);
            r0 = r1;
        }
    }
    for (int c = 0, r = 0; c < n_ctx; r += counts[c], c++)
        ctxs[c]->pos.insert(ctxs[c]->pos.end(), pos + r, pos + r + counts[c]);
}

namespace {

// Where each block's rows and keys sit in one draft pass: per block, its window of context cells then its
// own rows form one segment of the pass's K/V buffers.
struct DraftPlan {
    int n_rows = 0, n_cells = 0;
    std::vector<int32_t> token, pos;                      // [n_rows]
    std::vector<int> win_begin, seg_begin;                // [n_blocks]: first context cell in the window, segment start
    std::vector<int32_t> key_pos;                         // [n_cells] position of each key
    std::vector<std::vector<int32_t>> vis_full, vis_swa;  // [n_rows] visible keys, ascending position
    std::vector<const std::vector<int32_t>*> full_ptr, swa_ptr;  // [n_rows]
};

DraftPlan plan_draft(const DflashHParams& hp, const Weight& tok_embd, const DflashBlock* blocks, int n_blocks,
                     int cross_ctx) {
    if (cross_ctx < 0) fail("dflash: cross_ctx is %d: it must be >= 0", cross_ctx);
    DraftPlan p;
    for (int b = 0; b < n_blocks; b++) {
        const DflashBlock& B = blocks[b];
        if (!B.ctx) fail("dflash: block %d has no context", b);
        if (B.n_draft < 1 || B.n_draft > hp.block_size - 1)
            fail("dflash: block %d drafts %d tokens: the drafter's block (size %d) drafts 1..%d", b, B.n_draft,
                 hp.block_size, hp.block_size - 1);
        if (B.last_token < 0 || B.last_token >= tok_embd.ne1)
            fail("dflash: block %d's token %d is out of range (0..%lld)", b, B.last_token, (long long)tok_embd.ne1 - 1);
        const DflashContext& c = *B.ctx;
        if (c.n_cells() && c.pos.back() >= B.pos)
            fail("dflash: block %d at position %d is not after its context (last cell at %d): cut the context first", b,
                 B.pos, c.pos.back());
        const size_t nk = (size_t)hp.n_head_kv * hp.head_dim;
        bool fits = !c.n_cells() || ((int)c.k.size() == hp.n_layer && (int)c.v.size() == hp.n_layer);
        for (int il = 0; fits && il < (int)c.k.size(); il++)
            fits = c.k[il].size() == c.pos.size() * nk && c.v[il].size() == c.pos.size() * nk;
        if (!fits) fail("dflash: block %d's context was built by another drafter", b);
        const int win0 = std::max(0, c.n_cells() - cross_ctx);
        p.win_begin.push_back(win0);
        p.seg_begin.push_back(p.n_cells);
        p.key_pos.insert(p.key_pos.end(), c.pos.begin() + win0, c.pos.end());
        for (int i = 0; i <= B.n_draft; i++) {
            p.token.push_back(i == 0 ? B.last_token : hp.mask_token);
            p.pos.push_back(B.pos + i);
            p.key_pos.push_back(B.pos + i);
        }
        p.n_cells += c.n_cells() - win0 + B.n_draft + 1;
        p.n_rows += B.n_draft + 1;
    }
    // Row r of block b sees its segment: the window then the block (non-causal); sliding-window layers keep
    // keys with row_pos - key_pos < n_swa (llama.cpp's standard window).
    p.vis_full.resize(p.n_rows);
    p.vis_swa.resize(p.n_rows);
    int r = 0;
    for (int b = 0; b < n_blocks; b++) {
        const int seg_end = b + 1 < n_blocks ? p.seg_begin[b + 1] : p.n_cells;
        for (int i = 0; i <= blocks[b].n_draft; i++, r++)
            for (int c = p.seg_begin[b]; c < seg_end; c++) {
                p.vis_full[r].push_back(c);
                if (hp.n_swa > 0 && p.pos[r] - p.key_pos[c] < hp.n_swa) p.vis_swa[r].push_back(c);
            }
    }
    for (r = 0; r < p.n_rows; r++) {
        p.full_ptr.push_back(&p.vis_full[r]);
        p.swa_ptr.push_back(&p.vis_swa[r]);
    }
    return p;
}

}  // namespace

void DflashModel::draft(ThreadPool& pool, const DflashBlock* blocks, int n_blocks, int cross_ctx, float* logits) const {
    const DraftPlan p = plan_draft(hp_, w_.tok_embd, blocks, n_blocks, cross_ctx);
    const int n = p.n_rows;
    if (n == 0) return;
    const int64_t e = hp_.n_embd, nff = hp_.n_ff;
    const size_t nq = (size_t)hp_.n_head * hp_.head_dim, nk = (size_t)hp_.n_head_kv * hp_.head_dim;
    std::vector<float> x((size_t)n * e), h((size_t)n * e), o((size_t)n * e);  // (n, H)
    std::vector<float> q(n * nq), att(n * nq), k(n * nk), v(n * nk);          // (n, heads * hd)
    std::vector<float> kbuf(p.n_cells * nk), vbuf(p.n_cells * nk);            // (cells, n_head_kv * hd)
    std::vector<float> gate((size_t)n * nff), up((size_t)n * nff);            // (n, n_ff)
    get_rows(w_.tok_embd.type, w_.tok_embd.data, e, p.token.data(), n, x.data());
    for (int il = 0; il < hp_.n_layer; il++) {
        const DflashLayer& L = w_.layers[il];
        for (int r = 0; r < n; r++) rms_norm(&x[r * e], (const float*)L.attn_norm.data, &h[r * e], e, hp_.norm_eps);
        const MatmulOut qkv[3] = {{L.wq.type, L.wq.data, L.wq.ne1, L.wq.layout, q.data()},
                                  {L.wk.type, L.wk.data, L.wk.ne1, L.wk.layout, k.data()},
                                  {L.wv.type, L.wv.data, L.wv.ne1, L.wv.layout, v.data()}};
        matmul_shared_input(pool, qkv, 3, e, h.data(), n);
        norm_rope_heads(q.data(), n, hp_.n_head, L.q_norm, p.pos.data(), hp_);
        norm_rope_heads(k.data(), n, hp_.n_head_kv, L.k_norm, p.pos.data(), hp_);
        // This layer's keys: each block's context window, then its own rows.
        for (int b = 0, r = 0; b < n_blocks; b++) {
            const DflashContext& c = *blocks[b].ctx;
            const size_t win = (size_t)(c.n_cells() - p.win_begin[b]), rows = blocks[b].n_draft + 1;
            float* kd = &kbuf[p.seg_begin[b] * nk];
            float* vd = &vbuf[p.seg_begin[b] * nk];
            if (win) {
                std::copy_n(&c.k[il][p.win_begin[b] * nk], win * nk, kd);
                std::copy_n(&c.v[il][p.win_begin[b] * nk], win * nk, vd);
            }
            std::copy_n(&k[r * nk], rows * nk, kd + win * nk);
            std::copy_n(&v[r * nk], rows * nk, vd + win * nk);
            r += (int)rows;
        }
        AttentionArgs a;
        a.n_rows = n;
        a.n_head = hp_.n_head;
        a.n_head_kv = hp_.n_head_kv;
        a.head_dim = hp_.head_dim;
        a.q = q.data();
        a.out = att.data();
        a.scale = hp_.attn_scale;
        a.k = (const uint8_t*)kbuf.data();
        a.v = (const uint8_t*)vbuf.data();
        a.k_cell_bytes = a.v_cell_bytes = nk * sizeof(float);
        a.visible = hp_.swa[il] ? p.swa_ptr.data() : p.full_ptr.data();
        attention(pool, a);
        mm(pool, L.wo, att.data(), n, o.data());
        add(x.data(), o.data(), (int64_t)n * e);
        for (int r = 0; r < n; r++) rms_norm(&x[r * e], (const float*)L.ffn_norm.data, &h[r * e], e, hp_.norm_eps);
        const MatmulOut gu[2] = {{L.ffn_gate.type, L.ffn_gate.data, nff, L.ffn_gate.layout, gate.data()},
                                 {L.ffn_up.type, L.ffn_up.data, nff, L.ffn_up.layout, up.data()}};
        matmul_shared_input(pool, gu, 2, e, h.data(), n);
        matmul_gated(pool, L.ffn_down.type, L.ffn_down.data, e, nff, gate.data(), up.data(), GatedAct::silu, n,
                     o.data(), L.ffn_down.layout);
        add(x.data(), o.data(), (int64_t)n * e);
    }
    // The output head on the mask rows only (row 0 of a block holds the known last token).
    int m = 0;
    for (int b = 0, r = 0; b < n_blocks; b++) {
        r++;
        for (int i = 1; i <= blocks[b].n_draft; i++, r++, m++)
            rms_norm(&x[r * e], (const float*)w_.output_norm.data, &h[m * e], e, hp_.norm_eps);
    }
    mm(pool, w_.output, h.data(), m, logits);
}

void DflashModel::scatter_logits(const float* draft, float* full, int n_vocab) const {
    if (d2t_.empty()) {
        std::copy_n(draft, n_vocab, full);
        return;
    }
    std::fill_n(full, n_vocab, -std::numeric_limits<float>::infinity());
    for (size_t i = 0; i < d2t_.size(); i++) full[d2t_[i]] = draft[i];
}

}  // namespace bee
