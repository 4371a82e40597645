// model/arch/qwen35: Qwen3.5 dense, a hybrid (../shared/specs/drafters.md §8.5, §8.7). Gated DeltaNet layers
// (three of every four by default) and gated full-attention layers, each followed by a SwiGLU FFN:
//   x += mixer(attn_norm(x)); x += ffn(post_attention_norm(x)).
// Attention: attn_q gives per head [query | gate]; q/k RMS norms; neox rope on the first n_rot dims (the
// multi-section rope of text, whose sections all see the same position); output × sigmoid(gate).
// Gated DeltaNet: q|k|v through a short causal conv + SiLU, q/k L2-normalised, β = σ(W_β x),
// g = softplus(W_α x + dt_bias)·ssm_a, the delta-rule state update (model/gdn.h), then
// ssm_out(RMSNorm(o)·ssm_norm ⊙ SiLU(z)). Norm weights are used as stored (the converter folded in the +1,
// except ssm_norm). The MTP (NextN) blocks after the trunk are not run here.
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "kernels/kernels.h"
#include "model/arch/arch.h"
#include "model/gdn.h"
#include "model/recurrent_state.h"
#include "quant/quant.h"

namespace bee {

namespace {

constexpr int64_t kConvBlock = 256;  // channels per conv task (a multiple of every vector width)

// Which trunk layers are Gated DeltaNet layers: <arch>.attention.recurrent_layers (one bool or integer per
// block, MTP blocks included) or else every layer but each full_attention_interval-th.
std::vector<bool> recurrent_layers(const GgufFile& f, const std::string& a, int n_layer, int n_all) {
    std::vector<bool> rec(n_layer);
    const std::string key = a + ".attention.recurrent_layers";
    if (const GgufValue* v = f.find(key)) {
        if (v->type != GgufValueType::ARRAY || (int64_t)v->arr.size() < n_layer)
            fail("%s: %s must be an array of %d bools", f.path().c_str(), key.c_str(), n_all);
        for (int i = 0; i < n_layer; i++) {
            const GgufValue& e = v->arr[i];
            if (e.type != GgufValueType::BOOL && !e.is_integer())
                fail("%s: %s[%d] is not a bool", f.path().c_str(), key.c_str(), i);
            rec[i] = e.u64 != 0 || e.i64 != 0;
        }
        return rec;
    }
    const int64_t interval = arch_int(f, a, "full_attention_interval", 4);
    if (interval < 1 || interval > n_layer + 1)
        fail("%s: %s.full_attention_interval is %lld: expected 1..%d", f.path().c_str(), a.c_str(), (long long)interval,
             n_layer + 1);
    for (int i = 0; i < n_layer; i++) rec[i] = (i + 1) % interval != 0;
    return rec;
}

void qwen35_hparams(const GgufFile& f, HParams& hp) {
    load_common_hparams(f, hp);
    const std::string& a = hp.arch;
    const char* path = f.path().c_str();
    const int n_all = hp.n_layer;  // block_count counts the MTP blocks too
    const int64_t nextn = arch_int(f, a, "nextn_predict_layers", 0);
    if (nextn < 0 || nextn >= n_all)
        fail("%s: %s.nextn_predict_layers is %lld: expected 0..%d (block_count %d)", path, a.c_str(), (long long)nextn,
             n_all - 1, n_all);
    hp.n_nextn = (int)nextn;
    hp.n_layer = n_all - hp.n_nextn;
    hp.layers.resize(hp.n_layer);
    if (hp.head_dim_v != hp.head_dim)
        fail("%s: key and value heads differ (%d, %d): qwen35 has equal ones", path, hp.head_dim, hp.head_dim_v);
    SsmParams& m = hp.ssm;
    m.d_conv = (int)arch_int(f, a, "ssm.conv_kernel");
    m.head_dim = (int)arch_int(f, a, "ssm.state_size");
    m.n_v_heads = (int)arch_int(f, a, "ssm.time_step_rank");
    m.n_k_heads = (int)arch_int(f, a, "ssm.group_count");
    const int64_t d_inner = arch_int(f, a, "ssm.inner_size");
    if (m.d_conv < 2 || m.d_conv > 64 || m.head_dim <= 0 || m.head_dim > 1024 || m.n_k_heads <= 0 || m.n_v_heads <= 0 ||
        m.n_v_heads % m.n_k_heads != 0 || d_inner != m.d_inner())
        fail(
            "%s: bad Gated DeltaNet hparams: ssm.conv_kernel %d, ssm.state_size %d, ssm.group_count %d, "
            "ssm.time_step_rank %d, ssm.inner_size %lld (need kernel 2..64, value heads a multiple of key heads, "
            "inner_size = time_step_rank x state_size)",
            path, m.d_conv, m.head_dim, m.n_k_heads, m.n_v_heads, (long long)d_inner);
    // Multi-section rope: required upstream. With text positions every section turns by the same position,
    // which is neox rope over the first n_rot dims; the sections are checked, not needed.
    const std::string sk = a + ".rope.dimension_sections";
    if (!f.has(sk)) fail("%s: %s is missing (qwen35 needs its multi-section rope layout)", path, sk.c_str());
    const std::vector<int64_t> sec = f.get_int_array(sk);
    int64_t sum = 0;
    for (int64_t v : sec) sum += v < 0 ? 1 << 20 : v;
    if (sec.empty() || sec.size() > 4 || sum <= 0 || sum > hp.head_dim)
        fail("%s: %s has %zu entries summing to %lld: expected up to 4 sections, together 1..%d", path, sk.c_str(),
             sec.size(), (long long)sum, hp.head_dim);
    const std::vector<bool> rec = recurrent_layers(f, a, hp.n_layer, n_all);
    int n_kv = 0, n_rec = 0;
    for (int il = 0; il < hp.n_layer; il++) {
        LayerParams& lp = hp.layers[il];
        lp.rope.mode = RopeMode::neox;
        lp.kv_layer = rec[il] ? -1 : n_kv++;
        lp.recurrent_layer = rec[il] ? n_rec++ : -1;
    }
    hp.attn_output_gate = true;
}

// ssm_conv1d {d_conv, conv_ch} (f32, f16 or bf16) as f32 taps, tap-major (d_conv, conv_ch).
const float* bind_conv_taps(const GgufFile& f, const std::string& name, const SsmParams& m, ModelWeights& w) {
    const GgufTensor* t = f.find_tensor(name);
    if (!t) fail("%s: tensor '%s' is missing (needed by architecture)", f.path().c_str(), name.c_str());
    if (t->ne[0] != m.d_conv || t->ne[1] != m.conv_ch() || t->ne[2] != 1 || t->ne[3] != 1)
        fail("%s: tensor '%s' has shape [%lld, %lld], expected [%d, %lld]", f.path().c_str(), name.c_str(),
             (long long)t->ne[0], (long long)t->ne[1], m.d_conv, (long long)m.conv_ch());
    if (t->type != GgmlType::F32 && t->type != GgmlType::F16 && t->type != GgmlType::BF16)
        fail("%s: tensor '%s' has type %s: the conv taps must be f32, f16 or bf16", f.path().c_str(), name.c_str(),
             ggml_type_name(t->type));
    const QuantTraits* qt = quant_traits(t->type);
    const size_t row = ggml_row_size(t->type, m.d_conv);
    std::vector<float> taps((size_t)m.d_conv * m.conv_ch()), ch((size_t)m.d_conv);
    for (int64_t c = 0; c < m.conv_ch(); c++) {
        qt->dequantize_row(t->data + (size_t)c * row, ch.data(), m.d_conv);
        for (int i = 0; i < m.d_conv; i++) taps[(size_t)i * m.conv_ch() + c] = ch[i];
    }
    w.owned_f32.push_back(std::move(taps));
    return w.owned_f32.back().data();
}

// blk.<n_layer>.*: the first MTP block, a full-attention layer with its input projection and head. Bound
// only when the file has it whole; a model without one simply has no draft-mtp.
void bind_nextn(const GgufFile& f, const HParams& hp, ModelWeights& w) {
    const std::string p = "blk." + std::to_string(hp.n_layer) + ".";
    if (hp.n_nextn < 1 || !f.find_tensor(p + "nextn.eh_proj.weight")) return;
    const int64_t e = hp.n_embd, hd = hp.head_dim, nq = (int64_t)hp.n_head * hd, nkv = (int64_t)hp.n_head_kv * hd;
    NextnWeights& n = w.nextn;
    n.eh_proj = bind_weight(f, p + "nextn.eh_proj.weight", 2 * e, e);
    n.enorm = bind_weight(f, p + "nextn.enorm.weight", e, 1);
    n.hnorm = bind_weight(f, p + "nextn.hnorm.weight", e, 1);
    n.head_norm = bind_weight(f, p + "nextn.shared_head_norm.weight", e, 1, false);
    n.embed = bind_weight(f, p + "nextn.embed_tokens.weight", e, w.tok_embd.ne1, false);
    n.head = bind_weight(f, p + "nextn.shared_head_head.weight", e, w.tok_embd.ne1, false);
    LayerWeights& L = n.block;
    L.attn_norm = bind_weight(f, p + "attn_norm.weight", e, 1);
    L.ffn_norm = bind_weight(f, p + "post_attention_norm.weight", e, 1);
    L.wq = bind_weight(f, p + "attn_q.weight", e, 2 * nq);
    L.wk = bind_weight(f, p + "attn_k.weight", e, nkv);
    L.wv = bind_weight(f, p + "attn_v.weight", e, nkv);
    L.wo = bind_weight(f, p + "attn_output.weight", nq, e);
    L.q_norm = bind_weight(f, p + "attn_q_norm.weight", hd, 1);
    L.k_norm = bind_weight(f, p + "attn_k_norm.weight", hd, 1);
    L.ffn_gate = bind_weight(f, p + "ffn_gate.weight", e, hp.n_ff);
    L.ffn_up = bind_weight(f, p + "ffn_up.weight", e, hp.n_ff);
    L.ffn_down = bind_weight(f, p + "ffn_down.weight", hp.n_ff, e);
}

void qwen35_load(const GgufFile& f, HParams& hp, ModelWeights& w) {
    qwen35_hparams(f, hp);
    bind_common_weights(f, hp, w);
    const int64_t e = hp.n_embd, hd = hp.head_dim, nq = (int64_t)hp.n_head * hd, nkv = (int64_t)hp.n_head_kv * hd;
    const SsmParams& m = hp.ssm;
    for (int il = 0; il < hp.n_layer; il++) {
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerWeights& L = w.layers[il];
        L.attn_norm = bind_weight(f, p + "attn_norm.weight", e, 1);
        L.ffn_norm = bind_weight(f, p + "post_attention_norm.weight", e, 1);  // the FFN's input norm
        L.ffn_gate = bind_weight(f, p + "ffn_gate.weight", e, hp.n_ff);
        L.ffn_up = bind_weight(f, p + "ffn_up.weight", e, hp.n_ff);
        L.ffn_down = bind_weight(f, p + "ffn_down.weight", hp.n_ff, e);
        if (hp.layers[il].recurrent_layer >= 0) {
            L.wqkv = bind_weight(f, p + "attn_qkv.weight", e, m.conv_ch());
            L.wgate = bind_weight(f, p + "attn_gate.weight", e, m.d_inner());
            L.ssm_beta = bind_weight(f, p + "ssm_beta.weight", e, m.n_v_heads);
            L.ssm_alpha = bind_weight(f, p + "ssm_alpha.weight", e, m.n_v_heads);
            L.ssm_dt = bind_weight(f, p + "ssm_dt.bias", m.n_v_heads, 1);
            L.ssm_a = bind_weight(f, p + "ssm_a", m.n_v_heads, 1);
            L.ssm_norm = bind_weight(f, p + "ssm_norm.weight", m.head_dim, 1);
            L.ssm_out = bind_weight(f, p + "ssm_out.weight", m.d_inner(), e);
            L.conv_taps = bind_conv_taps(f, p + "ssm_conv1d.weight", m, w);
        } else {
            L.wq = bind_weight(f, p + "attn_q.weight", e, 2 * nq);  // per head [query | gate]
            L.wk = bind_weight(f, p + "attn_k.weight", e, nkv);
            L.wv = bind_weight(f, p + "attn_v.weight", e, nkv);
            L.wo = bind_weight(f, p + "attn_output.weight", nq, e);
            L.q_norm = bind_weight(f, p + "attn_q_norm.weight", hd, 1);
            L.k_norm = bind_weight(f, p + "attn_k_norm.weight", hd, 1);
        }
    }
    bind_nextn(f, hp, w);
}

const Weight kNone;

// The gated full-attention layer on normed input xn into c.s.out.
void gated_attention(ForwardCtx& c, int il, const float* xn) {
    const HParams& hp = c.hp;
    const LayerWeights& L = c.w.layers[il];
    const int hd = hp.head_dim, nh = hp.n_head;
    const int64_t nq = (int64_t)nh * hd;
    float* qg = c.s.qg.data();  // (n_rows, n_head, [query | gate] of hd each)
    float* q = c.s.q.data();
    float* k = c.s.k.data();
    float* v = c.s.v.data();
    float* att = c.s.att.data();
    linear_shared(c, xn, {{&L.wq, &kNone, qg}, {&L.wk, &kNone, k}, {&L.wv, &kNone, v}});
    for_rows(c, [&](int r0, int r1) {
        for (int r = r0; r < r1; r++)
            for (int h = 0; h < nh; h++)
                memcpy(q + r * nq + (int64_t)h * hd, qg + 2 * r * nq + (int64_t)2 * h * hd, hd * sizeof(float));
    });
    head_norm(c, q, nh, hd, L.q_norm);
    head_norm(c, k, hp.n_head_kv, hd, L.k_norm);
    attend(c, il, q, k, v);
    for_rows(c, [&](int r0, int r1) {
        for (int r = r0; r < r1; r++)
            for (int h = 0; h < nh; h++)
                sigmoid_mul(att + r * nq + (int64_t)h * hd, qg + 2 * r * nq + (int64_t)(2 * h + 1) * hd, hd);
    });
    linear(c, L.wo, kNone, att, c.s.out.data());
}

// The rows of each sequence in the ubatch, in order (the recurrence walks one sequence at a time).
struct SeqRows {
    int32_t seq;
    std::vector<int> rows;
};
std::vector<SeqRows> rows_by_seq(const ForwardCtx& c) {
    std::vector<SeqRows> out;
    for (int r = 0; r < c.n_rows; r++) {
        size_t i = 0;
        while (i < out.size() && out[i].seq != c.seq[r]) i++;
        if (i == out.size()) out.push_back({c.seq[r], {}});
        out[i].rows.push_back(r);
    }
    return out;
}

// The Gated DeltaNet layer on normed input xn into c.s.out. The per-token work after the projections is
// model/gdn.h's, row by row in each sequence's order; the recurrent state records its checkpoint and tape
// (model/recurrent_state.h) on the way.
void gdn_layer(ForwardCtx& c, int il, const float* xn) {
    const HParams& hp = c.hp;
    const LayerWeights& L = c.w.layers[il];
    const GdnShape sh(hp);
    const int rl = hp.layers[il].recurrent_layer, hv = sh.n_v_heads, d = sh.d;
    const int64_t ch = sh.conv_ch, di = (int64_t)hv * d, n = c.n_rows;
    RecurrentState& rs = *c.rs;
    float* qkv = c.s.qkv.data();  // (n, conv_ch) raw q|k|v
    float* conv = c.s.conv.data();
    float* z = c.s.z.data();
    float* o = c.s.o.data();
    float* braw = c.s.gb.data();  // (n, H_v) beta logits, (n, H_v) alpha, then (n, 2 H_v) [g | beta]
    float* araw = braw + n * hv;
    float* gb = araw + n * hv;
    linear_shared(c, xn,
                  {{&L.wqkv, &kNone, qkv},
                   {&L.wgate, &kNone, z},
                   {&L.ssm_beta, &kNone, braw},
                   {&L.ssm_alpha, &kNone, araw}});
    const float* dt = (const float*)L.ssm_dt.data;
    const float* sa = (const float*)L.ssm_a.data;
    for (int r = 0; r < n; r++) {
        for (int h = 0; h < hv; h++) {
            const float x = araw[r * hv + h] + dt[h];
            const float sp = x > 20.0f ? x : logf(1.0f + expf(x));  // softplus, as ggml
            gb[r * 2 * hv + h] = sp * sa[h];
            gb[r * 2 * hv + hv + h] = 1.0f / (1.0f + expf(-braw[r * hv + h]));
        }
        if (float* t = rs.tape_row(c.seq[r], rl, c.pos[r])) {
            memcpy(t, qkv + r * ch, ch * sizeof(float));
            memcpy(t + ch, gb + r * 2 * hv, 2 * hv * sizeof(float));
        }
    }
    const int n_blocks = (int)((ch + kConvBlock - 1) / kConvBlock);
    c.pool.run(n_blocks, [&](int b, int) {
        const int64_t c0 = b * kConvBlock, c1 = std::min(ch, c0 + kConvBlock);
        for (int r = 0; r < n; r++) {
            const int s = c.seq[r];
            if (c.pos[r] == rs.base_pos(s))
                for (int i = 0; i + 1 < sh.d_conv; i++)
                    memcpy(rs.base_conv(s, rl) + i * ch + c0, rs.conv(s, rl) + i * ch + c0, (c1 - c0) * sizeof(float));
            if (c.pos[r] == rs.capture_pos(s))
                for (int i = 0; i + 1 < sh.d_conv; i++)
                    memcpy(rs.capture_conv(s, rl) + i * ch + c0, rs.conv(s, rl) + i * ch + c0,
                           (c1 - c0) * sizeof(float));
            gdn_conv(sh, rs.conv(s, rl), L.conv_taps, qkv + r * ch, conv + r * ch, c0, c1);
        }
    });
    for_rows(c, [&](int r0, int r1) {
        for (int r = r0; r < r1; r++) gdn_conv_finish(sh, conv + r * ch);
    });
    const std::vector<SeqRows> groups = rows_by_seq(c);
    c.pool.run((int)groups.size() * hv, [&](int u, int) {
        const SeqRows& g = groups[u / hv];
        const int h = u % hv;
        const int64_t dd = (int64_t)d * d;
        float* ssm = rs.ssm(g.seq, rl);
        // runs of consecutive batch rows go through the state together; a run ends before the tape's base row
        // and before the capture row, whose state is copied first
        const int32_t base = rs.base_pos(g.seq), cap = rs.capture_pos(g.seq);
        for (size_t i = 0; i < g.rows.size();) {
            const int r0 = g.rows[i];
            if (c.pos[r0] == base) memcpy(rs.base_ssm(g.seq, rl) + h * dd, ssm + h * dd, dd * sizeof(float));
            if (c.pos[r0] == cap) memcpy(rs.capture_ssm(g.seq, rl) + h * dd, ssm + h * dd, dd * sizeof(float));
            size_t j = i + 1;
            while (j < g.rows.size() && g.rows[j] == g.rows[j - 1] + 1 && c.pos[g.rows[j]] != base &&
                   c.pos[g.rows[j]] != cap)
                j++;
            const float* gr = gb + r0 * 2 * hv + h;
            gdn_head_tokens(sh, ssm, h, (int)(j - i), conv + r0 * ch, gr, gr + hv, 2 * hv, o + r0 * di + (int64_t)h * d,
                            di);
            i = j;
        }
    });
    const float* wn = (const float*)L.ssm_norm.data;
    for_rows(c, [&](int r0, int r1) {
        for (int r = r0; r < r1; r++)
            for (int h = 0; h < hv; h++) {
                float* oh = o + r * di + (int64_t)h * d;
                rms_norm(oh, wn, oh, d, hp.norm_eps);
                silu_mul(z + r * di + (int64_t)h * d, oh, d);  // RMSNorm(o)·w ⊙ SiLU(z)
            }
    });
    linear(c, L.ssm_out, kNone, z, c.s.out.data());
}

void qwen35_forward_layer(ForwardCtx& c, int il) {
    const LayerWeights& L = c.w.layers[il];
    float* xn = c.s.xn.data();
    float* out = c.s.out.data();
    const float* in = layer_input(c, il);
    if (c.hp.layers[il].recurrent_layer >= 0) gdn_layer(c, il, in);
    else gated_attention(c, il, in);
    residual_norm(c, out, nullptr, &L.ffn_norm, xn);
    ffn_gated(c, il, xn, FfnAct::silu);
    layer_output(c, il, out, nullptr);
}

}  // namespace

extern const ArchDef kArchQwen35 = {"qwen35", qwen35_load, qwen35_forward_layer, nullptr};

}  // namespace bee
