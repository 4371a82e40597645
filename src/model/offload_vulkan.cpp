// model/offload_vulkan: Offload on a gpu::Device: the offloaded layers' weights and K/V, the ubatch's
// buffers, and the decoder layer (arch DecoderBlock) as device ops in model/forward.cpp's order (with -nkvo
// the attention between the q/k/v projections and the output projection runs on the host).
#ifdef BEE_HAVE_VULKAN
#include <cstdlib>
#include <cstring>
#include <functional>

#include "base/error.h"
#include "base/log.h"
#include "gpu/buffer.h"
#include "gpu/command_cache.h"
#include "gpu/command_list.h"
#include "gpu/device.h"
#include "gpu/ops.h"
#include "model/model.h"
#include "model/offload.h"
#include "model/offload_buffers.h"
#include "quant/turbo.h"

namespace bee {

bool offload_built() { return true; }

namespace {

using gpu::BufferRange;
using gpu::whole;

struct DevLayer {
    DevWeight attn_norm, wq, wk, wv, wo, bq, bk, bv, bo, q_norm, k_norm, post_attn_norm;
    DevWeight ffn_norm, ffn_gate, ffn_up, ffn_down, post_ffn_norm;
    std::unique_ptr<gpu::Buffer> k, v;  // (n_cells, row bytes): the bytes of KvCache's rows of this layer
                                        // (none with -nkvo)
    gpu::KvFormat kf, vf;               // their types, rotation groups, V's TurboQuant alpha
    int rope = 0;                       // index of the layer's rope settings in ropes_
};

class VulkanOffload final : public Offload {
public:
    VulkanOffload(std::unique_ptr<gpu::Device> dev, const Model& m, const KvCache& kv, int n_ubatch,
                  const OffloadPlan& plan, bool kv_offload, int n_lists);

    ~VulkanOffload() override {
        const ListStats st = list_stats();
        BEE_LOG_DEBUG("offload: %llu command lists recorded (%.1f ms), %llu resubmitted as recorded",
                      (unsigned long long)st.recorded, st.record_s * 1e3, (unsigned long long)st.reused);
    }

    bool on_device(int il) const override { return il >= 0 && il < hp_.n_layer && plan_.layers[(size_t)il]; }
    bool has_head() const override { return (bool)output_; }
    bool kv_on_device() const override { return kv_offload_; }
    int device_index() const override { return dev_->info().index; }
    std::string describe() const override;
    void begin(const OffloadStep& s) override;
    void upload_x(const float* x) override;
    void run_layers(int l0, int l1, const HostAttention& host) override;
    void download_x(float* x) override;
    void head(const std::vector<int32_t>& rows, float* logits) override;
    void pull_kv(KvCache& kv) override;
    void push_kv(const KvCache& kv) override;
    ListStats list_stats() const override {
        return {lists_->misses() + n_step_lists_, lists_->hits(), lists_->record_seconds()};
    }

private:
    DevWeight upload(const Weight& w, const char* what, int il);
    void linear(const DevWeight& w, const DevWeight& bias, BufferRange in, int64_t in_stride, BufferRange out,
                int64_t out_stride);
    void record_pending(bool uploads, bool x_up);
    void record_layers(int l0, int l1, bool uploads, bool x_up);
    void record_head(const std::vector<int32_t>& rows, bool uploads, bool x_up);
    void self_attention(int il);
    void host_attention(int il);
    void ffn_gated(int il);
    void residual_norm(BufferRange y, const DevWeight& post, const DevWeight* next);
    void norm(BufferRange in, const DevWeight& w, BufferRange out, int64_t n, int64_t n_rows, int64_t stride);
    DevLayer& layer(int il) { return layers_[(size_t)il]; }
    // Submits the list recorded under key (recording it with `record` into cl_ on a miss) and waits.
    void submit(const std::vector<int64_t>& key, const std::function<void()>& record);
    // The key's part for the pending copies: whether the staged inputs (and their spans) and x go up.
    void pending_key(std::vector<int64_t>& key) const;

    const HParams& hp_;
    const DecoderBlock& block_;
    const OffloadPlan plan_;
    const bool kv_offload_;
    int n_ub_ = 0, n_cells_ = 0;
    std::unique_ptr<gpu::Device> dev_;
    std::unique_ptr<gpu::Ops> ops_;
    std::unique_ptr<gpu::CommandCache> lists_;  // recorded per shape (submit's keys), resubmitted
    // -nkvo: layers are recorded every step into this list (the host's attention splits each layer's
    // recording; those pieces are not kept)
    std::unique_ptr<gpu::CommandList> step_list_;
    uint64_t n_step_lists_ = 0;       // run_layers calls recorded there (their seconds are not in list_stats)
    gpu::CommandList* cl_ = nullptr;  // the list being recorded
    std::vector<DevLayer> layers_;    // [il], empty for CPU layers
    DevWeight output_norm_, output_;
    std::vector<RopeParams> ropes_;  // the distinct rope settings of the offloaded layers
    size_t weight_bytes_ = 0, kv_bytes_ = 0;
    StepBuffers b_;
    int n_rows_ = 0;
    bool pending_ = false, x_pending_ = false;  // begin()'s inputs / upload_x's x not yet copied to the device
    const HostAttention* host_ = nullptr;       // run_layers' hook, during the call
    std::vector<float> hq_, hk_, hv_;           // -nkvo: q, k, v on the host
};

bool same_rope(const RopeParams& a, const RopeParams& b) {
    return a.n_rot == b.n_rot && a.freq_base == b.freq_base && a.freq_scale == b.freq_scale && a.mode == b.mode &&
           a.freq_factors == b.freq_factors && a.yarn == b.yarn;
}

VulkanOffload::VulkanOffload(std::unique_ptr<gpu::Device> dev, const Model& m, const KvCache& kv, int n_ubatch,
                             const OffloadPlan& plan, bool kv_offload, int n_lists)
    : hp_(m.hparams()),
      block_(*m.arch().block),
      plan_(plan),
      kv_offload_(kv_offload),
      n_ub_(n_ubatch),
      n_cells_(kv.n_cells()),
      dev_(std::move(dev)) {
    const HParams& hp = hp_;
    const int n_dev = plan.n_device_layers();
    ops_ = std::make_unique<gpu::Ops>(*dev_);
    lists_ = std::make_unique<gpu::CommandCache>(*dev_, n_lists, 32 * n_dev + 64);
    if (!kv_offload_) step_list_ = std::make_unique<gpu::CommandList>(*dev_, 32 * n_dev + 64, 1);
    const ModelWeights& w = m.weights();
    layers_.resize((size_t)hp.n_layer);
    for (int il = 0; il < hp.n_layer; il++) {
        if (!plan.layers[(size_t)il]) continue;
        const LayerWeights& L = w.layers[(size_t)il];
        DevLayer& d = layers_[(size_t)il];
        d.attn_norm = upload(L.attn_norm, "attn_norm", il);
        d.wq = upload(L.wq, "attn_q", il);
        d.wk = upload(L.wk, "attn_k", il);
        d.wv = upload(L.wv, "attn_v", il);
        d.wo = upload(L.wo, "attn_output", il);
        d.bq = upload(L.bq, "attn_q.bias", il);
        d.bk = upload(L.bk, "attn_k.bias", il);
        d.bv = upload(L.bv, "attn_v.bias", il);
        d.bo = upload(L.bo, "attn_output.bias", il);
        d.q_norm = upload(L.q_norm, "attn_q_norm", il);
        d.k_norm = upload(L.k_norm, "attn_k_norm", il);
        d.post_attn_norm = upload(L.post_attn_norm, "post_attention_norm", il);
        d.ffn_norm = upload(L.ffn_norm, "ffn_norm", il);
        d.ffn_gate = upload(L.ffn_gate, "ffn_gate", il);
        d.ffn_up = upload(L.ffn_up, "ffn_up", il);
        d.ffn_down = upload(L.ffn_down, "ffn_down", il);
        d.post_ffn_norm = upload(L.post_ffn_norm, "post_ffw_norm", il);
        d.kf.type = kv.params().type_k;
        d.vf.type = kv.v_type(il);
        d.kf.n_head_kv = d.vf.n_head_kv = hp.n_head_kv;
        d.kf.head_dim = d.vf.head_dim = hp.head_dim;
        d.kf.rot = kv.k_rot_group();
        d.vf.rot = kv.v_rot_group(il);
        d.vf.alpha = turbo_v_alpha(d.vf.type);
        if (kv_offload_) {
            // whole words (vkCmdFillBuffer, the shaders' 32-bit access): rows of 2-byte blocks may end mid-word
            const size_t k_bytes = ((size_t)n_cells_ * kv.k_row_bytes() + 3) / 4 * 4,
                         v_bytes = ((size_t)n_cells_ * kv.v_row_bytes(il) + 3) / 4 * 4;
            d.k = std::make_unique<gpu::Buffer>(*dev_, k_bytes, gpu::Memory::device);
            d.v = std::make_unique<gpu::Buffer>(*dev_, v_bytes, gpu::Memory::device);
            d.k->zero();
            d.v->zero();
            kv_bytes_ += k_bytes + v_bytes;
        }
        const RopeParams& r = hp.layers[(size_t)il].rope;
        d.rope = -1;
        for (size_t i = 0; i < ropes_.size() && d.rope < 0; i++)
            if (same_rope(ropes_[i], r)) d.rope = (int)i;
        if (d.rope < 0) {
            d.rope = (int)ropes_.size();
            ropes_.push_back(r);
        }
    }
    if (plan.head) {
        output_norm_ = upload(w.output_norm, "output_norm", -1);
        output_ = upload(w.output, "output", -1);
    }
    b_.allocate(*dev_, hp, n_ub_, (int)ropes_.size());
    if (!kv_offload_) b_.allocate_host_attention(*dev_, hp, n_ub_);
}

DevWeight VulkanOffload::upload(const Weight& w, const char* what, int il) {
    if (!w) return {};
    if (w.ne1 > 1 && !gpu::Ops::supports_matmul(w.type))
        fail(
            "-ngl: %s%s%s has type %s, which has no device matmul yet (device types: f32 f16 bf16 q4_0 q4_1 q5_0 "
            "q5_1 q8_0 q4_k q5_k q6_k); offload fewer layers (or keep this one on the CPU: -ot '%s=CPU')",
            il >= 0 ? "blk." : "", il >= 0 ? (std::to_string(il) + ".").c_str() : "", what, ggml_type_name(w.type),
            il >= 0 ? ("blk\\." + std::to_string(il) + "\\.").c_str() : "output");
    DevWeight d = upload_weight(*dev_, w);
    weight_bytes_ += d.buf->size();
    return d;
}

std::string VulkanOffload::describe() const {
    GgmlType tk = GgmlType::F16, tv = GgmlType::F16;  // the first device layer's (V may differ at the boundaries)
    for (int il = hp_.n_layer - 1; il >= 0; il--)
        if (on_device(il)) tk = layers_[(size_t)il].kf.type, tv = layers_[(size_t)il].vf.type;
    return strfmt("%s on %s (%.1f MiB of weights, %s)", plan_.describe().c_str(), dev_->info().name.c_str(),
                  weight_bytes_ / 1048576.0,
                  kv_offload_ ? strfmt("%.1f MiB of KV, K %s, V %s", kv_bytes_ / 1048576.0, ggml_type_name(tk),
                                       ggml_type_name(tv))
                                    .c_str()
                              : "their KV in host memory, attention on the CPU (-nkvo)");
}

void VulkanOffload::begin(const OffloadStep& s) {
    if (s.n_rows <= 0 || s.n_rows > n_ub_) fail("offload: %d rows in a ubatch of %d", s.n_rows, n_ub_);
    n_rows_ = s.n_rows;
    if (b_.stage(*dev_, hp_, s, ropes_)) lists_->clear();  // a grown input buffer: recordings bind the old one
    pending_ = true;
}

void VulkanOffload::upload_x(const float* x) {
    b_.stage_x(hp_, n_rows_, x);
    x_pending_ = true;
}

void VulkanOffload::record_pending(bool uploads, bool x_up) {
    if (!uploads && !x_up) return;
    cl_->begin_group();  // the copies are independent of each other
    if (uploads) b_.record_uploads(*cl_);
    if (x_up) cl_->copy(whole(*b_.x_host), whole(*b_.x));
    cl_->end_group();
}

void VulkanOffload::pending_key(std::vector<int64_t>& key) const {
    key.push_back(x_pending_);
    key.push_back(pending_);
    if (pending_) b_.upload_spans(key);
}

void VulkanOffload::norm(BufferRange in, const DevWeight& w, BufferRange out, int64_t n, int64_t n_rows,
                         int64_t stride) {
    ops_->rms_norm(*cl_, in, w.range(), out, n, n_rows, stride, hp_.norm_eps);
}

void VulkanOffload::linear(const DevWeight& w, const DevWeight& bias, BufferRange in, int64_t in_stride,
                           BufferRange out, int64_t out_stride) {
    ops_->matmul(*cl_, w.type, w.range(), w.ne1, w.ne0, in, in_stride, n_rows_, out, out_stride);
    if (bias) ops_->add_row(*cl_, out, bias.range(), w.ne1, n_rows_, out_stride);
}

// model/forward.cpp self_attention: projections (+biases), per-head q/k norms, rope, KV write, attention
// over the visible cells, output projection into out.
void VulkanOffload::self_attention(int il) {
    const HParams& hp = hp_;
    DevLayer& L = layer(il);
    const int64_t se = b_.s_embd, nq = (int64_t)hp.n_head * hp.head_dim, nk = (int64_t)hp.n_head_kv * hp.head_dim;
    const BufferRange xn = whole(*b_.xn), q = whole(*b_.q), k = whole(*b_.k), v = whole(*b_.v);
    // q, k and v are independent until attention: each step below is one group without barriers inside
    const DevWeight* w[3] = {&L.wq, &L.wk, &L.wv};
    const DevWeight* bias[3] = {&L.bq, &L.bk, &L.bv};
    const BufferRange out[3] = {q, k, v};
    const int64_t n_out[3] = {nq, nk, nk};
    static const DevWeight none;
    cl_->begin_group();
    for (int i = 0; i < 3; i++) linear(*w[i], none, xn, se, out[i], n_out[i]);
    cl_->end_group();
    cl_->begin_group();
    for (int i = 0; i < 3; i++)
        if (*bias[i]) ops_->add_row(*cl_, out[i], bias[i]->range(), w[i]->ne1, n_rows_, n_out[i]);
    cl_->end_group();
    cl_->begin_group();
    if (L.q_norm) norm(q, L.q_norm, q, hp.head_dim, (int64_t)n_rows_ * hp.n_head, hp.head_dim);
    if (L.k_norm) norm(k, L.k_norm, k, hp.head_dim, (int64_t)n_rows_ * hp.n_head_kv, hp.head_dim);
    cl_->end_group();
    if (!kv_offload_) {  // -nkvo: rope, KV write and attention on the host, into att
        host_attention(il);
        linear(L.wo, L.bo, whole(*b_.att), b_.s_att, whole(*b_.out), se);
        return;
    }
    const gpu::RopeArgs ra = device_rope(ropes_[(size_t)L.rope]);
    const BufferRange cs = b_.rope_table(L.rope);
    cl_->begin_group();
    ops_->rope(*cl_, q, cs, n_rows_, hp.n_head, hp.head_dim, ra);
    ops_->rope(*cl_, k, cs, n_rows_, hp.n_head_kv, hp.head_dim, ra);
    cl_->end_group();
    cl_->begin_group();
    ops_->kv_write(*cl_, k, nk, n_rows_, b_.cells.dev_range(), whole(*L.k), L.kf);
    ops_->kv_write(*cl_, v, nk, n_rows_, b_.cells.dev_range(), whole(*L.v), L.vf);
    cl_->end_group();
    const bool swa = hp.layers[(size_t)il].swa;
    gpu::AttentionOp a;
    a.n_rows = n_rows_;
    a.n_head = hp.n_head;
    a.n_head_kv = hp.n_head_kv;
    a.head_dim = hp.head_dim;
    a.n_cells = n_cells_;
    a.n_visible = swa ? b_.n_visible_swa : b_.n_visible_full;
    a.scale = hp.attn_scale;
    a.softcap = hp.attn_softcap;
    a.q = q;
    a.k = whole(*L.k);
    a.v = whole(*L.v);
    a.offsets = (swa ? b_.off_swa : b_.off_full).dev_range();
    a.cells = (swa ? b_.vis_swa : b_.vis_full).dev_range();
    a.out = whole(*b_.att);
    a.out_stride = b_.s_att;
    a.k_type = L.kf.type;
    a.v_type = L.vf.type;
    a.k_rot = L.kf.rot;
    a.v_rot = L.vf.rot;
    ops_->attention(*cl_, a);
    linear(L.wo, L.bo, whole(*b_.att), b_.s_att, whole(*b_.out), se);
}

// -nkvo: q, k, v down to the host (ending the recording), the host's attention, its output up into att (a
// new recording).
void VulkanOffload::host_attention(int il) {
    const size_t nq = (size_t)hp_.n_head * hp_.head_dim, nk = (size_t)hp_.n_head_kv * hp_.head_dim,
                 rows = (size_t)n_rows_;
    cl_->copy({b_.q.get(), 0, rows * nq * 4}, {b_.q_host.get(), 0, rows * nq * 4});
    cl_->copy({b_.k.get(), 0, rows * nk * 4}, {b_.k_host.get(), 0, rows * nk * 4});
    cl_->copy({b_.v.get(), 0, rows * nk * 4}, {b_.v_host.get(), 0, rows * nk * 4});
    cl_->end();
    cl_->submit_and_wait();
    hq_.assign((const float*)b_.q_host->mapped(), (const float*)b_.q_host->mapped() + rows * nq);
    hk_.assign((const float*)b_.k_host->mapped(), (const float*)b_.k_host->mapped() + rows * nk);
    hv_.assign((const float*)b_.v_host->mapped(), (const float*)b_.v_host->mapped() + rows * nk);
    const float* att = (*host_)(il, hq_.data(), hk_.data(), hv_.data());
    float* ah = (float*)b_.att_host->mapped();
    for (size_t r = 0; r < rows; r++) std::memcpy(ah + r * (size_t)b_.s_att, att + r * nq, nq * sizeof(float));
    cl_->begin();
    cl_->copy({b_.att_host.get(), 0, rows * (size_t)b_.s_att * 4}, {b_.att.get(), 0, rows * (size_t)b_.s_att * 4});
}

// model/forward.cpp ffn_gated: down(act(gate(xn)) * up(xn)) into out.
void VulkanOffload::ffn_gated(int il) {
    DevLayer& L = layer(il);
    const BufferRange xn = whole(*b_.xn), a = whole(*b_.ff_a), b = whole(*b_.ff_b);
    static const DevWeight none;
    cl_->begin_group();  // gate and up are independent
    linear(L.ffn_gate, none, xn, b_.s_embd, a, b_.s_ff);
    linear(L.ffn_up, none, xn, b_.s_embd, b, b_.s_ff);
    cl_->end_group();
    ops_->act_mul(*cl_, block_.act == FfnAct::silu ? gpu::Activation::silu : gpu::Activation::gelu_tanh, a, b,
                  (int64_t)n_rows_ * b_.s_ff);
    linear(L.ffn_down, none, a, b_.s_ff, whole(*b_.out), b_.s_embd);
}

// model/forward.cpp residual_norm: y = post(y) when given, x += y, xn = next(x) when given.
void VulkanOffload::residual_norm(BufferRange y, const DevWeight& post, const DevWeight* next) {
    const int64_t e = hp_.n_embd, se = b_.s_embd;
    if (post) norm(y, post, y, e, n_rows_, se);
    if (next)  // one dispatch for both
        ops_->add_rms_norm(*cl_, whole(*b_.x), y, next->range(), whole(*b_.xn), e, n_rows_, se, hp_.norm_eps);
    else ops_->add(*cl_, whole(*b_.x), y, (int64_t)n_rows_ * se);
}

void VulkanOffload::submit(const std::vector<int64_t>& key, const std::function<void()>& record) {
    gpu::CommandList& cl = lists_->get(key, [&](gpu::CommandList& c) {
        cl_ = &c;
        record();
    });
    cl_ = nullptr;
    cl.submit_and_wait();
}

// A recording depends on the segment of device layers [l0, l1) (-ot may leave several per step), the rows
// (every dispatch's grid and push constants), whether it copies x up (every segment and a head after a CPU
// layer) and whether it copies the staged inputs in (their spans); the inputs themselves are read from
// buffers at run time, so a later step of the same shape resubmits it with only the host-visible buffers
// rewritten. -nkvo's layers are recorded every step (run_layers).
enum ListKind : int64_t { kLayers, kDownload, kHead };

void VulkanOffload::run_layers(int l0, int l1, const HostAttention& host) {
    for (int il = l0; il < l1; il++)
        if (!on_device(il)) fail("offload: layer %d is not on the device", il);
    if (l0 >= l1) fail("offload: no layers in [%d, %d)", l0, l1);
    if (!kv_offload_ && !host) fail("offload: -nkvo needs the host's attention");
    const bool uploads = pending_, x_up = x_pending_;
    if (kv_offload_) {
        std::vector<int64_t> key{kLayers, l0, l1, n_rows_};
        pending_key(key);
        pending_ = x_pending_ = false;
        submit(key, [&] { record_layers(l0, l1, uploads, x_up); });
        return;
    }
    // -nkvo: recorded anew (each host attention ends a recording and starts the next)
    pending_ = x_pending_ = false;
    host_ = &host;
    cl_ = step_list_.get();
    cl_->begin();
    record_layers(l0, l1, uploads, x_up);
    cl_->end();
    n_step_lists_++;
    cl_->submit_and_wait();
    cl_ = nullptr;
    host_ = nullptr;
}

void VulkanOffload::record_layers(int l0, int l1, bool uploads, bool x_up) {
    static const DevWeight none;
    record_pending(uploads, x_up);
    norm(whole(*b_.x), layer(l0).attn_norm, whole(*b_.xn), hp_.n_embd, n_rows_, b_.s_embd);
    for (int il = l0; il < l1; il++) {  // the DecoderBlock: attention, then the gated FFN, each a residual step
        DevLayer& L = layer(il);
        self_attention(il);
        residual_norm(whole(*b_.out), block_.post_norms ? L.post_attn_norm : none, &L.ffn_norm);
        ffn_gated(il);
        residual_norm(whole(*b_.out), block_.post_norms ? L.post_ffn_norm : none,
                      il + 1 < l1 ? &layer(il + 1).attn_norm : nullptr);
    }
}

void VulkanOffload::download_x(float* x) {
    submit({kDownload}, [&] { cl_->copy(whole(*b_.x), whole(*b_.x_host)); });
    b_.read_x(hp_, n_rows_, x);
}

void VulkanOffload::head(const std::vector<int32_t>& rows, float* logits) {
    if (!output_) fail("offload: the output head is not on the device");
    const int n = (int)rows.size();
    if (n == 0) return;
    if (b_.ensure_logits(*dev_, (size_t)n * (size_t)hp_.n_vocab)) lists_->clear();
    std::vector<int64_t> key{kHead, n};
    key.insert(key.end(), rows.begin(), rows.end());
    pending_key(key);  // the head after a CPU layer uploads x (and the step's inputs when no layer ran)
    const bool uploads = pending_, x_up = x_pending_;
    pending_ = x_pending_ = false;
    submit(key, [&] { record_head(rows, uploads, x_up); });
    std::memcpy(logits, b_.logits->mapped(), (size_t)n * (size_t)hp_.n_vocab * sizeof(float));
}

void VulkanOffload::record_head(const std::vector<int32_t>& rows, bool uploads, bool x_up) {
    const int n = (int)rows.size();
    const int64_t se = b_.s_embd;
    record_pending(uploads, x_up);
    for (int j = 0; j < n;) {  // gather the rows (runs of consecutive rows in one copy)
        int e = j + 1;
        while (e < n && rows[(size_t)e] == rows[(size_t)e - 1] + 1) e++;
        const size_t row_bytes = (size_t)se * 4;
        cl_->copy({b_.x.get(), (size_t)rows[(size_t)j] * row_bytes, (size_t)(e - j) * row_bytes},
                  {b_.hid.get(), (size_t)j * row_bytes, (size_t)(e - j) * row_bytes});
        j = e;
    }
    ops_->rms_norm(*cl_, whole(*b_.hid), output_norm_.range(), whole(*b_.hid), hp_.n_embd, n, se, hp_.norm_eps);
    ops_->matmul(*cl_, output_.type, output_.range(), hp_.n_vocab, hp_.n_embd, whole(*b_.hid), se, n, whole(*b_.logits),
                 hp_.n_vocab);
}

void VulkanOffload::pull_kv(KvCache& kv) {
    for (int il = 0; il < hp_.n_layer; il++) {
        DevLayer& L = layer(il);
        if (!L.k) continue;
        L.k->download(kv.k_row(il, 0), (size_t)n_cells_ * kv.k_row_bytes());
        L.v->download(kv.v_row(il, 0), (size_t)n_cells_ * kv.v_row_bytes(il));
    }
}

void VulkanOffload::push_kv(const KvCache& kv) {
    for (int il = 0; il < hp_.n_layer; il++) {
        DevLayer& L = layer(il);
        if (!L.k) continue;
        L.k->upload(kv.k_data(il), (size_t)n_cells_ * kv.k_row_bytes());
        L.v->upload(kv.v_data(il), (size_t)n_cells_ * kv.v_row_bytes(il));
    }
}

}  // namespace

std::unique_ptr<Offload> Offload::create(const Model& model, const KvCache& kv, int n_ubatch, const OffloadParams& p,
                                         const OffloadPlan& plan, std::string* no_device) {
    const HParams& hp = model.hparams();
    if (!plan.any()) fail("offload: the plan puts nothing on the device");
    if (!model.arch().block)
        fail("-ngl: architecture %s runs on the CPU only (no device forward yet)", model.arch().name);
    if (hp.head_dim != hp.head_dim_v || hp.head_dim > 256 || hp.head_dim % 2)
        fail("-ngl: heads of %d (K) / %d (V) values are not supported on the device (equal, even, <= 256)", hp.head_dim,
             hp.head_dim_v);
    if (p.kv_offload) {
        std::vector<GgmlType> types{kv.params().type_k};
        for (int il = 0; il < kv.params().n_layer; il++) types.push_back(kv.v_type(il));
        for (GgmlType t : types) {
            if (!gpu::Ops::supports_kv(t))
                fail(
                    "-ngl: the device KV cache has no %s: pick another type with -ctk / -ctv, keep the K/V of "
                    "offloaded layers in host memory (-nkvo), or -ngl 0",
                    ggml_type_name(t));
            if (kv_padded_dim(t, hp.head_dim) > 256)
                fail("-ngl: heads of %d values take %d in %s blocks; the device takes at most 256", hp.head_dim,
                     kv_padded_dim(t, hp.head_dim), ggml_type_name(t));
        }
    }
    // -ot naming VulkanN picks device N when --device does not name one
    const bool named = !p.device.empty() || plan.device >= 0;
    const std::string selector = p.device.empty() && plan.device >= 0 ? std::to_string(plan.device) : p.device;
    std::unique_ptr<gpu::Device> dev;
    try {
        dev = std::make_unique<gpu::Device>(selector);
    } catch (const Error& e) {
        if (!p.device.empty()) fail("--device %s: %s", p.device.c_str(), e.what());
        if (named) fail("-ot ...=Vulkan%d: %s", plan.device, e.what());
        *no_device = e.what();
        return nullptr;
    }
    if (plan.device >= 0 && dev->info().index != plan.device)
        fail(
            "-ot names Vulkan%d but --device %s is Vulkan%d (%s): Bee runs the offloaded layers on one device; name "
            "the same one in both",
            plan.device, p.device.c_str(), dev->info().index, dev->info().name.c_str());
    // Without --device (or -ot naming one), a CPU implementation of Vulkan (Mesa's llvmpipe) is no GPU: running
    // layers there is far slower than Bee's own CPU kernels. Naming it (--device llvmpipe or its index) still
    // uses it.
    if (!named && dev->info().type == "cpu") {
        *no_device = "the only Vulkan device is " + dev->info().name +
                     ", a CPU implementation (name it with --device to use it anyway)";
        return nullptr;
    }
    int n_lists = p.n_lists;
    if (const char* e = getenv("BEE_GPU_LISTS")) n_lists = atoi(e);  // 0: record every step (for comparisons)
    return std::make_unique<VulkanOffload>(std::move(dev), model, kv, n_ubatch, plan, p.kv_offload, n_lists);
}

}  // namespace bee
#endif
