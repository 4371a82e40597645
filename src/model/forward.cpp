// model/forward: building blocks shared by the architecture files.
#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>

#include "base/error.h"
#include "gguf/gguf.h"
#include "kernels/kernels.h"
#include "quant/quant.h"

namespace bee {

void ForwardScratch::resize(const HParams& hp, int n_rows) {
    const size_t n = (size_t)n_rows;
    xn.assign(n * hp.n_embd, 0);
    q.assign(n * hp.n_head * hp.head_dim, 0);
    k.assign(n * hp.n_head_kv * hp.head_dim, 0);
    v.assign(n * hp.n_head_kv * hp.head_dim_v, 0);
    att.assign(n * hp.n_head * hp.head_dim_v, 0);
    out.assign(n * hp.n_embd, 0);
    ff_a.assign(n * hp.n_ff, 0);
    ff_b.assign(n * hp.n_ff, 0);
    qg.assign(hp.attn_output_gate ? n * 2 * hp.n_head * hp.head_dim : 0, 0);
    const SsmParams& m = hp.ssm;
    const bool gdn = hp.n_recurrent_layers() > 0;
    qkv.assign(gdn ? n * m.conv_ch() : 0, 0);
    conv.assign(gdn ? n * m.conv_ch() : 0, 0);
    z.assign(gdn ? n * m.d_inner() : 0, 0);
    o.assign(gdn ? n * m.d_inner() : 0, 0);
    gb.assign(gdn ? n * 4 * m.n_v_heads : 0, 0);
}

void norm_rows(const ForwardCtx& c, const float* in, const Weight& w, float* out, int64_t n) {
    const float* wd = (const float*)w.data;
    for_rows(c, [&](int r0, int r1) {
        for (int r = r0; r < r1; r++) rms_norm(in + (size_t)r * n, wd, out + (size_t)r * n, n, c.hp.norm_eps);
    });
}

void linear(const ForwardCtx& c, const Weight& w, const Weight& bias, const float* in, float* out) {
    matmul(c.pool, w.type, w.data, w.ne1, w.ne0, in, c.n_rows, out, w.layout);
    if (bias)
        for (int r = 0; r < c.n_rows; r++) add(out + (size_t)r * w.ne1, (const float*)bias.data, w.ne1);
}

void linear_shared(const ForwardCtx& c, const float* in, std::initializer_list<LinearOut> outs) {
    MatmulOut mo[4] = {};
    if (outs.size() > 4) fail("linear_shared: %zu outputs, at most 4", outs.size());
    int n = 0;
    for (const LinearOut& o : outs) mo[n++] = {o.w->type, o.w->data, o.w->ne1, o.w->layout, o.out};
    matmul_shared_input(c.pool, mo, n, outs.begin()->w->ne0, in, c.n_rows);
    for (const LinearOut& o : outs) {
        if (!*o.bias) continue;
        for (int r = 0; r < c.n_rows; r++) add(o.out + (size_t)r * o.w->ne1, (const float*)o.bias->data, o.w->ne1);
    }
}

void head_norm(const ForwardCtx& c, float* x, int n_head, int hd, const Weight& w, int64_t stride) {
    if (stride == 0) stride = (int64_t)n_head * hd;
    for_rows(c, [&](int r0, int r1) {
        for (int r = r0; r < r1; r++)
            for (int h = 0; h < n_head; h++) {
                float* p = x + (size_t)r * stride + (size_t)h * hd;
                rms_norm(p, (const float*)w.data, p, hd, c.hp.norm_eps);
            }
    });
}

void self_attention(ForwardCtx& c, int il, const float* xn) {
    const HParams& hp = c.hp;
    const LayerWeights& L = c.w.layers[il];
    float* q = c.s.q.data();
    float* k = c.s.k.data();
    float* v = c.s.v.data();
    linear_shared(c, xn, {{&L.wq, &L.bq, q}, {&L.wk, &L.bk, k}, {&L.wv, &L.bv, v}});
    if (c.lora) {
        lora_apply(c.pool, *c.lora, il, LoraTarget::q, xn, q);
        lora_apply(c.pool, *c.lora, il, LoraTarget::k, xn, k);
        lora_apply(c.pool, *c.lora, il, LoraTarget::v, xn, v);
    }
    if (L.q_norm) head_norm(c, q, hp.n_head, hp.head_dim, L.q_norm);
    if (L.k_norm) head_norm(c, k, hp.n_head_kv, hp.head_dim, L.k_norm);
    attend(c, il, q, k, v);
    linear(c, L.wo, L.bo, c.s.att.data(), c.s.out.data());
    if (c.lora) lora_apply(c.pool, *c.lora, il, LoraTarget::o, c.s.att.data(), c.s.out.data());
}

void attend(ForwardCtx& c, int il, float* q, float* k, const float* v) {
    const HParams& hp = c.hp;
    const LayerParams& lp = hp.layers[il];
    const int kl = lp.kv_layer;
    if (kl < 0) fail("layer %d has no K/V in the cache (not an attention layer)", il);
    const int nq = hp.n_head * hp.head_dim, nk = hp.n_head_kv * hp.head_dim, nv = hp.n_head_kv * hp.head_dim_v;
    const KvCacheParams& kp = c.kv.params();
    for_rows(c, [&](int r0, int r1) {  // rows have distinct cells: their writes never overlap
        for (int r = r0; r < r1; r++) {
            rope(q + (size_t)r * nq, hp.n_head, hp.head_dim, c.pos[r], lp.rope);
            rope(k + (size_t)r * nk, hp.n_head_kv, hp.head_dim, c.pos[r], lp.rope);
            c.kv.write_k(kl, c.cells[r], k + (size_t)r * nk);  // quantize on write, per head
            c.kv.write_v(kl, c.cells[r], v + (size_t)r * nv);
        }
    });
    AttentionArgs a;
    a.n_rows = c.n_rows;
    a.n_head = hp.n_head;
    a.n_head_kv = hp.n_head_kv;
    a.head_dim = hp.head_dim;
    a.q = q;
    a.out = c.s.att.data();
    a.scale = hp.attn_scale;
    a.softcap = hp.attn_softcap;
    a.k_type = kp.type_k;
    a.v_type = c.kv.v_type(kl);  // V's type may differ per layer (KvCacheParams::type_v_layer)
    a.k = c.kv.k_data(kl);
    a.v = c.kv.v_data(kl);
    a.k_cell_bytes = c.kv.k_row_bytes();
    a.v_cell_bytes = c.kv.v_row_bytes(kl);
    a.k_rot_group = c.kv.k_rot_group();
    a.v_rot_group = c.kv.v_rot_group(kl);
    a.visible = lp.swa ? c.visible_swa : c.visible_full;
    attention(c.pool, a);
}

void ffn_gated(ForwardCtx& c, int il, const float* xn, FfnAct act) {
    const LayerWeights& L = c.w.layers[il];
    float* a = c.s.ff_a.data();
    float* b = c.s.ff_b.data();
    static const Weight none;
    linear_shared(c, xn, {{&L.ffn_gate, &none, a}, {&L.ffn_up, &none, b}});
    if (c.lora) {
        lora_apply(c.pool, *c.lora, il, LoraTarget::gate, xn, a);
        lora_apply(c.pool, *c.lora, il, LoraTarget::up, xn, b);
    }
    // down(act(gate) ⊙ up): the gated product is formed row by row as down's input is quantized
    const Weight& d = L.ffn_down;
    matmul_gated(c.pool, d.type, d.data, d.ne1, d.ne0, a, b, act == FfnAct::silu ? GatedAct::silu : GatedAct::gelu_tanh,
                 c.n_rows, c.s.out.data(), d.layout);
    // matmul_gated left act(gate) ⊙ up in `a`: down's LoRA reads it there
    if (c.lora) lora_apply(c.pool, *c.lora, il, LoraTarget::down, a, c.s.out.data());
}

void residual_norm(const ForwardCtx& c, float* y, const Weight* post, const Weight* next, float* xn) {
    const int64_t e = c.hp.n_embd;
    for_rows(c, [&](int r0, int r1) {
        for (int r = r0; r < r1; r++) {
            float* yr = y + (size_t)r * e;
            float* xr = c.x + (size_t)r * e;
            if (post) rms_norm(yr, (const float*)post->data, yr, e, c.hp.norm_eps);
            add(xr, yr, e);
            if (next) rms_norm(xr, (const float*)next->data, xn + (size_t)r * e, e, c.hp.norm_eps);
        }
    });
}

const float* layer_input(const ForwardCtx& c, int il) {
    float* xn = c.s.xn.data();
    if (il == 0) norm_rows(c, c.x, c.w.layers[0].attn_norm, xn, c.hp.n_embd);
    return xn;
}

void layer_output(const ForwardCtx& c, int il, float* y, const Weight* post) {
    const Weight* next = il + 1 < c.hp.n_layer ? &c.w.layers[il + 1].attn_norm : nullptr;
    residual_norm(c, y, post, next, c.s.xn.data());
}

// ---- binding ----

Weight bind_weight(const GgufFile& f, const std::string& name, int64_t ne0, int64_t ne1, bool required) {
    Weight w;
    const GgufTensor* t = f.find_tensor(name);
    if (!t) {
        if (required) fail("%s: tensor '%s' is missing (needed by architecture)", f.path().c_str(), name.c_str());
        return w;
    }
    const bool is_1d = ne1 == 1;
    if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != 1 || t->ne[3] != 1)
        fail("%s: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld]", f.path().c_str(),
             name.c_str(), (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
             (long long)ne0, (long long)ne1);
    const QuantTraits* qt = quant_traits(t->type);
    if (is_1d ? t->type != GgmlType::F32 : (!qt || !qt->vec_dot))
        fail("%s: tensor '%s' has type %s, which Bee does not support %s", f.path().c_str(), name.c_str(),
             ggml_type_name(t->type) ? ggml_type_name(t->type) : "?",
             is_1d ? "for 1-D tensors (expected f32)"
                   : "(supported: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_k..q6_k)");
    w.type = t->type;
    w.data = t->data;
    w.ne0 = t->ne[0];
    w.ne1 = t->ne[1];
    return w;
}

int64_t arch_int(const GgufFile& f, const std::string& arch, const char* key) { return f.get_int(arch + "." + key); }
int64_t arch_int(const GgufFile& f, const std::string& arch, const char* key, int64_t def) {
    return f.get_int(arch + "." + key, def);
}
float arch_float(const GgufFile& f, const std::string& arch, const char* key, float def) {
    const double v = f.get_float(arch + "." + key, def);
    if (!std::isfinite(v) || !std::isfinite((float)v))  // NaN, inf, or out of float's range
        fail("%s: %s.%s is %g: a hyper-parameter must be a finite number", f.path().c_str(), arch.c_str(), key, v);
    return (float)v;
}

void load_common_hparams(const GgufFile& f, HParams& hp) {
    const std::string& a = hp.arch;
    hp.n_embd = (int)arch_int(f, a, "embedding_length");
    hp.n_layer = (int)arch_int(f, a, "block_count");
    hp.n_head = (int)arch_int(f, a, "attention.head_count");
    hp.n_head_kv = (int)arch_int(f, a, "attention.head_count_kv", hp.n_head);
    if (hp.n_embd <= 0 || hp.n_layer <= 0 || hp.n_layer > 4096 || hp.n_head <= 0 || hp.n_head_kv <= 0 ||
        hp.n_head % hp.n_head_kv != 0)
        fail("%s: bad hparams: n_embd=%d n_layer=%d n_head=%d n_head_kv=%d", f.path().c_str(), hp.n_embd, hp.n_layer,
             hp.n_head, hp.n_head_kv);
    hp.head_dim = (int)arch_int(f, a, "attention.key_length", hp.n_embd / hp.n_head);
    hp.head_dim_v = (int)arch_int(f, a, "attention.value_length", hp.head_dim);
    hp.n_ff = (int)arch_int(f, a, "feed_forward_length");
    hp.n_ctx_train = (int)arch_int(f, a, "context_length", 4096);
    hp.norm_eps = arch_float(f, a, "attention.layer_norm_rms_epsilon", 1e-5f);
    if (!(hp.norm_eps > 0 && hp.norm_eps <= 1))
        fail("%s: %s.attention.layer_norm_rms_epsilon is %g: it must be in (0, 1]", f.path().c_str(), a.c_str(),
             hp.norm_eps);
    hp.n_swa = (int)arch_int(f, a, "attention.sliding_window", 0);
    const int64_t pooling = arch_int(f, a, "pooling_type", -1);
    if (pooling < -1 || pooling > (int64_t)Pooling::rank)
        fail("%s: %s.pooling_type is %lld: expected -1..4", f.path().c_str(), a.c_str(), (long long)pooling);
    hp.pooling = (Pooling)pooling;
    hp.attn_scale = 1.0f / std::sqrt((float)hp.head_dim);
    if (hp.head_dim <= 0 || hp.head_dim % 2 != 0 || hp.head_dim_v <= 0 || hp.n_ff <= 0)
        fail("%s: bad hparams: head_dim=%d head_dim_v=%d n_ff=%d", f.path().c_str(), hp.head_dim, hp.head_dim_v,
             hp.n_ff);
    RopeParams rope;
    rope.n_rot = (int)arch_int(f, a, "rope.dimension_count", hp.head_dim);
    rope.freq_base = arch_float(f, a, "rope.freq_base", 10000.0f);
    if (!(rope.freq_base > 0))
        fail("%s: %s.rope.freq_base is %g: it must be > 0", f.path().c_str(), a.c_str(), rope.freq_base);
    const std::string scaling = f.get_str(a + ".rope.scaling.type", "none");
    const float factor = arch_float(f, a, "rope.scaling.factor", 0.0f);
    if ((scaling == "linear" || scaling == "yarn") && factor > 0) rope.freq_scale = 1.0f / factor;
    else if (scaling != "none" && scaling != "linear" && scaling != "yarn")
        fail("%s: %s.rope.scaling.type '%s' is not supported (none, linear, yarn)", f.path().c_str(), a.c_str(),
             scaling.c_str());
    if (rope.n_rot <= 0 || rope.n_rot > hp.head_dim || rope.n_rot % 2 != 0)
        fail("%s: bad rope.dimension_count %d for head_dim %d", f.path().c_str(), rope.n_rot, hp.head_dim);
    // YaRN as llama.cpp applies it: ext_factor 1 for yarn files unless set, the ramp from the trained
    // context; rope.scaling.attn_factor scales the magnitude of every rope.
    const float ext = arch_float(f, a, "rope.scaling.yarn_ext_factor", -1.0f);
    const float ext_factor = ext >= 0 ? ext : scaling == "yarn" ? 1.0f : 0.0f;
    const int n_ctx_orig = (int)arch_int(f, a, "rope.scaling.original_context_length", hp.n_ctx_train);
    if (ext_factor != 0 && n_ctx_orig <= 0)
        fail("%s: %s.rope.scaling.original_context_length is %d: it must be > 0 for YaRN", f.path().c_str(), a.c_str(),
             n_ctx_orig);
    rope.yarn = rope_yarn_params(rope.n_rot, n_ctx_orig, rope.freq_base, 1.0f / rope.freq_scale, ext_factor,
                                 arch_float(f, a, "rope.scaling.yarn_beta_fast", 32.0f),
                                 arch_float(f, a, "rope.scaling.yarn_beta_slow", 1.0f),
                                 arch_float(f, a, "rope.scaling.yarn_log_multiplier", 0.0f),
                                 arch_float(f, a, "rope.scaling.yarn_attn_factor", -1.0f));
    rope.yarn.attn_factor *= arch_float(f, a, "rope.scaling.attn_factor", 1.0f);
    hp.layers.assign(hp.n_layer, LayerParams{});
    for (int il = 0; il < hp.n_layer; il++) {
        hp.layers[il].rope = rope;
        hp.layers[il].kv_layer = il;  // every layer has attention unless the arch says otherwise
    }
}

void bind_common_weights(const GgufFile& f, const HParams& hp, ModelWeights& w) {
    const GgufTensor* te = f.find_tensor("token_embd.weight");
    if (!te) fail("%s: tensor 'token_embd.weight' is missing", f.path().c_str());
    w.tok_embd = bind_weight(f, "token_embd.weight", hp.n_embd, te->ne[1]);
    w.output_norm = bind_weight(f, "output_norm.weight", hp.n_embd, 1);
    w.output = bind_weight(f, "output.weight", hp.n_embd, te->ne[1], false);
    if (!w.output) w.output = w.tok_embd;
    w.rope_freqs = bind_weight(f, "rope_freqs.weight", hp.layers[0].rope.n_rot / 2, 1, false);
    bind_rank_head(f, hp, w);
    w.layers.resize(hp.n_layer);
}

void bind_decoder_layers(const GgufFile& f, const HParams& hp, ModelWeights& w, LayerTensors opts) {
    const int64_t e = hp.n_embd, nq = hp.n_head * hp.head_dim, nk = hp.n_head_kv * hp.head_dim,
                  nv = hp.n_head_kv * hp.head_dim_v;
    for (int il = 0; il < hp.n_layer; il++) {
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerWeights& L = w.layers[il];
        L.attn_norm = bind_weight(f, p + "attn_norm.weight", e, 1);
        L.wq = bind_weight(f, p + "attn_q.weight", e, nq);
        L.wk = bind_weight(f, p + "attn_k.weight", e, nk);
        L.wv = bind_weight(f, p + "attn_v.weight", e, nv);
        if (opts.qkv_bias) {
            L.bq = bind_weight(f, p + "attn_q.bias", nq, 1);
            L.bk = bind_weight(f, p + "attn_k.bias", nk, 1);
            L.bv = bind_weight(f, p + "attn_v.bias", nv, 1);
        }
        if (opts.qk_norm) {
            L.q_norm = bind_weight(f, p + "attn_q_norm.weight", hp.head_dim, 1);
            L.k_norm = bind_weight(f, p + "attn_k_norm.weight", hp.head_dim, 1);
        }
        L.wo = bind_weight(f, p + "attn_output.weight", hp.n_head * hp.head_dim_v, e);
        L.ffn_norm = bind_weight(f, p + "ffn_norm.weight", e, 1);
        L.ffn_gate = bind_weight(f, p + "ffn_gate.weight", e, hp.n_ff);
        L.ffn_up = bind_weight(f, p + "ffn_up.weight", e, hp.n_ff);
        L.ffn_down = bind_weight(f, p + "ffn_down.weight", hp.n_ff, e);
        if (opts.post_norms) {
            L.post_attn_norm = bind_weight(f, p + "post_attention_norm.weight", e, 1);
            L.post_ffn_norm = bind_weight(f, p + "post_ffw_norm.weight", e, 1);
        }
    }
}

void decoder_layer_prenorm(ForwardCtx& c, int il) {
    const LayerWeights& L = c.w.layers[il];
    float* xn = c.s.xn.data();
    float* out = c.s.out.data();
    self_attention(c, il, layer_input(c, il));
    residual_norm(c, out, nullptr, &L.ffn_norm, xn);
    ffn_gated(c, il, xn, FfnAct::silu);
    layer_output(c, il, out, nullptr);
}

}  // namespace bee
