// model/offload_vulkan: Offload on a gpu::Device: the offloaded layers' weights and K/V, the ubatch's
// buffers, and the decoder layer (arch DecoderBlock) as device ops in model/forward.cpp's order.
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
    gpu::KvFormat kf, vf;               // their types, rotation groups, V's TurboQuant alpha
    int rope = 0;                       // index of the layer's rope settings in ropes_
};

class VulkanOffload final : public Offload {
public:
    VulkanOffload(std::unique_ptr<gpu::Device> dev, const Model& m, const KvCache& kv, int n_ubatch, int n_gpu_layers,
                  int n_lists);

    ~VulkanOffload() override {
        const ListStats st = list_stats();
        BEE_LOG_DEBUG("offload: %llu command lists recorded (%.1f ms), %llu resubmitted as recorded",
                      (unsigned long long)st.recorded, st.record_s * 1e3, (unsigned long long)st.reused);
    }

    int first_layer() const override { return first_; }
    bool has_head() const override { return (bool)output_; }
    std::string describe() const override;
    void begin(const OffloadStep& s, const float* x) override;
    void run_layers(int l0, int l1) override;
    void download_x(float* x) override;
    void head(const std::vector<int32_t>& rows, float* logits) override;
    void pull_kv(KvCache& kv) override;
    void push_kv(const KvCache& kv) override;
    ListStats list_stats() const override { return {lists_->misses(), lists_->hits(), lists_->record_seconds()}; }

private:
    DevWeight upload(const Weight& w, const char* what, int il);
    void linear(const DevWeight& w, const DevWeight& bias, BufferRange in, int64_t in_stride, BufferRange out,
                int64_t out_stride);
    void record_layers(int l0, int l1, bool uploads);
    void record_head(const std::vector<int32_t>& rows);
    void self_attention(int il);
    void ffn_gated(int il);
    void residual_norm(BufferRange y, const DevWeight& post, const DevWeight* next);
    void norm(BufferRange in, const DevWeight& w, BufferRange out, int64_t n, int64_t n_rows, int64_t stride);
    DevLayer& layer(int il) { return layers_[(size_t)(il - first_)]; }
    // Submits the list recorded under key (recording it with `record` into cl_ on a miss) and waits.
    void submit(const std::vector<int64_t>& key, const std::function<void()>& record);

    const HParams& hp_;
    const DecoderBlock& block_;
    int first_ = 0, n_ub_ = 0, n_cells_ = 0;
    std::unique_ptr<gpu::Device> dev_;
    std::unique_ptr<gpu::Ops> ops_;
    std::unique_ptr<gpu::CommandCache> lists_;  // recorded per shape (submit's keys), resubmitted
    gpu::CommandList* cl_ = nullptr;            // the list being recorded
    std::vector<DevLayer> layers_;              // [il - first_]
    DevWeight output_norm_, output_;
    std::vector<RopeParams> ropes_;  // the distinct rope settings of the offloaded layers
    size_t weight_bytes_ = 0, kv_bytes_ = 0;
    StepBuffers b_;
    int n_rows_ = 0;
    bool pending_ = false;  // begin()'s inputs are staged but not yet copied to the device
};

bool same_rope(const RopeParams& a, const RopeParams& b) {
    return a.n_rot == b.n_rot && a.freq_base == b.freq_base && a.freq_scale == b.freq_scale && a.mode == b.mode &&
           a.freq_factors == b.freq_factors && a.yarn == b.yarn;
}

VulkanOffload::VulkanOffload(std::unique_ptr<gpu::Device> dev, const Model& m, const KvCache& kv, int n_ubatch,
                             int n_gpu_layers, int n_lists)
    : hp_(m.hparams()), block_(*m.arch().block), n_ub_(n_ubatch), n_cells_(kv.n_cells()), dev_(std::move(dev)) {
    const HParams& hp = hp_;
    const int n_dev = std::min(n_gpu_layers, hp.n_layer);
    first_ = hp.n_layer - n_dev;
    ops_ = std::make_unique<gpu::Ops>(*dev_);
    lists_ = std::make_unique<gpu::CommandCache>(*dev_, n_lists, 32 * n_dev + 64);
    const ModelWeights& w = m.weights();
    for (int il = first_; il < hp.n_layer; il++) {
        const LayerWeights& L = w.layers[(size_t)il];
        DevLayer d;
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
        // whole words (vkCmdFillBuffer, the shaders' 32-bit access): rows of 2-byte blocks may end mid-word
        const size_t k_bytes = ((size_t)n_cells_ * kv.k_row_bytes() + 3) / 4 * 4,
                     v_bytes = ((size_t)n_cells_ * kv.v_row_bytes(il) + 3) / 4 * 4;
        d.k = std::make_unique<gpu::Buffer>(*dev_, k_bytes, gpu::Memory::device);
        d.v = std::make_unique<gpu::Buffer>(*dev_, v_bytes, gpu::Memory::device);
        d.k->zero();
        d.v->zero();
        kv_bytes_ += k_bytes + v_bytes;
        const RopeParams& r = hp.layers[(size_t)il].rope;
        d.rope = -1;
        for (size_t i = 0; i < ropes_.size() && d.rope < 0; i++)
            if (same_rope(ropes_[i], r)) d.rope = (int)i;
        if (d.rope < 0) {
            d.rope = (int)ropes_.size();
            ropes_.push_back(r);
        }
        layers_.push_back(std::move(d));
    }
    if (n_gpu_layers >= hp.n_layer) {
        output_norm_ = upload(w.output_norm, "output_norm", -1);
        output_ = upload(w.output, "output", -1);
    }
    b_.allocate(*dev_, hp, n_ub_, (int)ropes_.size());
}

DevWeight VulkanOffload::upload(const Weight& w, const char* what, int il) {
    if (!w) return {};
    if (w.ne1 > 1 && !gpu::Ops::supports_matmul(w.type))
        fail(
            "-ngl: %s%s%s has type %s, which has no device matmul yet (device types: f32 f16 bf16 q4_0 q4_1 q5_0 "
            "q5_1 q8_0 q4_k q5_k q6_k); offload fewer layers",
            il >= 0 ? "blk." : "", il >= 0 ? (std::to_string(il) + ".").c_str() : "", what, ggml_type_name(w.type));
    DevWeight d = upload_weight(*dev_, w);
    weight_bytes_ += d.buf->size();
    return d;
}

std::string VulkanOffload::describe() const {
    const DevLayer& L = layers_.front();
    return strfmt("layers %d..%d%s on %s (%.1f MiB of weights, %.1f MiB of KV, K %s, V %s)", first_, hp_.n_layer - 1,
                  output_ ? " and the output head" : "", dev_->info().name.c_str(), weight_bytes_ / 1048576.0,
                  kv_bytes_ / 1048576.0, ggml_type_name(L.kf.type), ggml_type_name(L.vf.type));
}

void VulkanOffload::begin(const OffloadStep& s, const float* x) {
    if (s.n_rows <= 0 || s.n_rows > n_ub_) fail("offload: %d rows in a ubatch of %d", s.n_rows, n_ub_);
    n_rows_ = s.n_rows;
    if (b_.stage(*dev_, hp_, s, x, ropes_)) lists_->clear();  // a grown input buffer: recordings bind the old one
    pending_ = true;
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

// A recording depends on the layers, the rows (every dispatch's grid and push constants), and whether it
// copies the staged inputs in (their spans); the inputs themselves are read from buffers at run time, so
// a later step of the same shape resubmits it with only the host-visible buffers rewritten.
enum ListKind : int64_t { kLayers, kDownload, kHead };

void VulkanOffload::run_layers(int l0, int l1) {
    if (l0 < first_ || l1 > hp_.n_layer || l0 >= l1) fail("offload: layers [%d, %d) are not on the device", l0, l1);
    std::vector<int64_t> key{kLayers, l0, l1, n_rows_, pending_};
    if (pending_) b_.upload_spans(key);
    const bool uploads = pending_;
    pending_ = false;
    submit(key, [&] { record_layers(l0, l1, uploads); });
}

void VulkanOffload::record_layers(int l0, int l1, bool uploads) {
    static const DevWeight none;
    if (uploads) {  // the copies are independent of each other
        cl_->begin_group();
        b_.record_uploads(*cl_);
        cl_->end_group();
    }
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
    submit(key, [&] { record_head(rows); });
    std::memcpy(logits, b_.logits->mapped(), (size_t)n * (size_t)hp_.n_vocab * sizeof(float));
}

void VulkanOffload::record_head(const std::vector<int32_t>& rows) {
    const int n = (int)rows.size();
    const int64_t se = b_.s_embd;
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
    for (int il = first_; il < hp_.n_layer; il++) {
        DevLayer& L = layer(il);
        L.k->download(kv.k_row(il, 0), (size_t)n_cells_ * kv.k_row_bytes());
        L.v->download(kv.v_row(il, 0), (size_t)n_cells_ * kv.v_row_bytes(il));
    }
}

void VulkanOffload::push_kv(const KvCache& kv) {
    for (int il = first_; il < hp_.n_layer; il++) {
        DevLayer& L = layer(il);
        L.k->upload(kv.k_data(il), (size_t)n_cells_ * kv.k_row_bytes());
        L.v->upload(kv.v_data(il), (size_t)n_cells_ * kv.v_row_bytes(il));
    }
}

}  // namespace

std::unique_ptr<Offload> Offload::create(const Model& model, const KvCache& kv, int n_ubatch, const OffloadParams& p,
                                         std::string* no_device) {
    const HParams& hp = model.hparams();
    if (p.n_gpu_layers <= 0) fail("offload: -ngl %d offloads nothing", p.n_gpu_layers);
    if (!model.arch().block)
        fail("-ngl: architecture %s runs on the CPU only (no device forward yet)", model.arch().name);
    if (hp.head_dim != hp.head_dim_v || hp.head_dim > 256 || hp.head_dim % 2)
        fail("-ngl: heads of %d (K) / %d (V) values are not supported on the device (equal, even, <= 256)", hp.head_dim,
             hp.head_dim_v);
    std::vector<GgmlType> types{kv.params().type_k};
    for (int il = 0; il < kv.params().n_layer; il++) types.push_back(kv.v_type(il));
    for (GgmlType t : types) {
        if (!gpu::Ops::supports_kv(t))
            fail(
                "-ngl: the device KV cache has no %s (device KV types: f16 q8_0 q4_0 turbo2 turbo3 turbo4 turbo2_64 "
                "turbo3_64 turbo4_64 turbo2_tcq turbo3_tcq): pick one with -ctk / -ctv, or -ngl 0",
                ggml_type_name(t));
        if (kv_padded_dim(t, hp.head_dim) > 256)
            fail("-ngl: heads of %d values take %d in %s blocks; the device takes at most 256", hp.head_dim,
                 kv_padded_dim(t, hp.head_dim), ggml_type_name(t));
    }
    std::unique_ptr<gpu::Device> dev;
    try {
        dev = std::make_unique<gpu::Device>(p.device);
    } catch (const Error& e) {
        if (!p.device.empty()) fail("--device %s: %s", p.device.c_str(), e.what());
        *no_device = e.what();
        return nullptr;
    }
    // Without --device, a CPU implementation of Vulkan (Mesa's llvmpipe) is no GPU: running layers there is
    // far slower than Bee's own CPU kernels. Naming it (--device llvmpipe or its index) still uses it.
    if (p.device.empty() && dev->info().type == "cpu") {
        *no_device = "the only Vulkan device is " + dev->info().name +
                     ", a CPU implementation (name it with --device to use it anyway)";
        return nullptr;
    }
    int n_lists = p.n_lists;
    if (const char* e = getenv("BEE_GPU_LISTS")) n_lists = atoi(e);  // 0: record every step (for comparisons)
    return std::make_unique<VulkanOffload>(std::move(dev), model, kv, n_ubatch, p.n_gpu_layers, n_lists);
}

}  // namespace bee
#endif
