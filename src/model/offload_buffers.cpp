// model/offload_buffers: weight upload in GGUF rows, and the staging of one ubatch's inputs.
#ifdef BEE_HAVE_VULKAN
#include "model/offload_buffers.h"

#include <cstring>

#include "base/error.h"
#include "kernels/repack.h"

namespace bee {

DevWeight upload_weight(gpu::Device& dev, const Weight& w) {
    DevWeight d;
    d.type = w.type;
    d.ne0 = w.ne0;
    d.ne1 = w.ne1;
    const size_t row = ggml_row_size(w.type, w.ne0), bytes = row * (size_t)w.ne1;
    d.buf = std::make_unique<gpu::Buffer>(dev, bytes, gpu::Memory::device);
    if (w.layout == WeightLayout::gguf) {
        d.buf->upload(w.data, bytes);
        return d;
    }
    std::vector<uint8_t> rows(bytes);
    for (int64_t r = 0; r < w.ne1; r++) unpack_row(w.type, w.layout, w.data, w.ne1, w.ne0, r, &rows[(size_t)r * row]);
    d.buf->upload(rows.data(), bytes);
    return d;
}

gpu::RopeArgs device_rope(const RopeParams& r) {
    gpu::RopeArgs a;
    a.n_rot = r.n_rot;
    a.freq_base = r.freq_base;
    a.freq_scale = r.freq_scale;
    a.neox = r.mode == RopeMode::neox;
    a.freq_factors = r.freq_factors;
    a.yarn = r.yarn;
    return a;
}

static size_t pow2_at_least(size_t n) {
    size_t p = 256;
    while (p < n) p *= 2;
    return p;
}

bool Staged::write(gpu::Device& d, const void* src, size_t n) {
    const size_t need = pow2_at_least(n);
    const bool grow = !host || host->size() < need;
    if (grow) {
        host = std::make_unique<gpu::Buffer>(d, need, gpu::Memory::host);
        dev = std::make_unique<gpu::Buffer>(d, need, gpu::Memory::device);
    }
    if (n) std::memcpy(host->mapped(), src, n);
    bytes = n;
    return grow;
}

size_t Staged::span() const { return host ? pow2_at_least(bytes) : 0; }

void Staged::record(gpu::CommandList& cl) const {
    if (host) cl.copy({host.get(), 0, span()}, {dev.get(), 0, span()});
}

void StepBuffers::allocate(gpu::Device& dev, const HParams& hp, int n_ub, int n_ropes) {
    s_embd = gpu::Ops::x_stride_for(hp.n_embd);
    s_att = gpu::Ops::x_stride_for((int64_t)hp.n_head * hp.head_dim);
    s_ff = gpu::Ops::x_stride_for(hp.n_ff);
    const size_t n = (size_t)n_ub * 4;
    auto make = [&](size_t floats_per_row, gpu::Memory where) {
        auto b = std::make_unique<gpu::Buffer>(dev, n * floats_per_row, where);
        b->zero();
        return b;
    };
    x = make((size_t)s_embd, gpu::Memory::device);
    xn = make((size_t)s_embd, gpu::Memory::device);
    out = make((size_t)s_embd, gpu::Memory::device);
    hid = make((size_t)s_embd, gpu::Memory::device);
    q = make((size_t)hp.n_head * hp.head_dim, gpu::Memory::device);
    k = make((size_t)hp.n_head_kv * hp.head_dim, gpu::Memory::device);
    v = make((size_t)hp.n_head_kv * hp.head_dim, gpu::Memory::device);
    att = make((size_t)s_att, gpu::Memory::device);
    ff_a = make((size_t)s_ff, gpu::Memory::device);
    ff_b = make((size_t)s_ff, gpu::Memory::device);
    x_host = make((size_t)s_embd, gpu::Memory::host);
    ropes.resize((size_t)n_ropes);
}

void StepBuffers::allocate_host_attention(gpu::Device& dev, const HParams& hp, int n_ub) {
    const size_t n = (size_t)n_ub * 4;
    auto make = [&](size_t floats_per_row) {
        auto b = std::make_unique<gpu::Buffer>(dev, n * floats_per_row, gpu::Memory::host);
        b->zero();
        return b;
    };
    q_host = make((size_t)hp.n_head * hp.head_dim);
    k_host = make((size_t)hp.n_head_kv * hp.head_dim);
    v_host = make((size_t)hp.n_head_kv * hp.head_dim);
    att_host = make((size_t)s_att);
}

// Concatenates the rows' lists: offsets (n_rows + 1) into one array of cells.
static bool stage_lists(gpu::Device& dev, const OffloadStep& s, const std::vector<int32_t>* const* lists, Staged& off,
                        Staged& cells, int64_t* n_visible) {
    std::vector<uint32_t> o(1, 0), c;
    for (int r = 0; r < s.n_rows; r++) {
        for (int32_t cell : *lists[r]) c.push_back((uint32_t)cell);
        o.push_back((uint32_t)c.size());
    }
    *n_visible = (int64_t)c.size();
    const bool grew = off.write(dev, o.data(), o.size() * 4);
    return cells.write(dev, c.data(), c.size() * 4) || grew;
}

void StepBuffers::stage_x(const HParams& hp, int n_rows, const float* xs) {
    float* xh = (float*)x_host->mapped();
    for (int r = 0; r < n_rows; r++)
        std::memcpy(xh + (size_t)r * s_embd, xs + (size_t)r * hp.n_embd, (size_t)hp.n_embd * sizeof(float));
}

bool StepBuffers::stage(gpu::Device& dev, const HParams& hp, const OffloadStep& s,
                        const std::vector<RopeParams>& rope_settings) {
    std::vector<uint32_t> c(s.cells, s.cells + s.n_rows);
    bool grew = cells.write(dev, c.data(), c.size() * 4);
    grew = stage_lists(dev, s, s.visible_full, off_full, vis_full, &n_visible_full) || grew;
    if (hp.n_swa > 0) grew = stage_lists(dev, s, s.visible_swa, off_swa, vis_swa, &n_visible_swa) || grew;
    std::vector<float> cs;
    for (size_t i = 0; i < rope_settings.size(); i++) {
        const RopeParams& r = rope_settings[i];
        cs.resize((size_t)s.n_rows * (size_t)r.n_rot);
        gpu::Ops::rope_table(s.pos, s.n_rows, device_rope(r), cs.data());
        grew = ropes[i].write(dev, cs.data(), cs.size() * sizeof(float)) || grew;
    }
    return grew;
}

void StepBuffers::record_uploads(gpu::CommandList& cl) const {
    for (const Staged* st : {&cells, &off_full, &vis_full, &off_swa, &vis_swa}) st->record(cl);
    for (const Staged& r : ropes) r.record(cl);
}

void StepBuffers::upload_spans(std::vector<int64_t>& key) const {
    for (const Staged* st : {&cells, &off_full, &vis_full, &off_swa, &vis_swa}) key.push_back((int64_t)st->span());
    for (const Staged& r : ropes) key.push_back((int64_t)r.span());
}

void StepBuffers::read_x(const HParams& hp, int n_rows, float* xs) const {
    const float* xh = (const float*)x_host->mapped();
    for (int r = 0; r < n_rows; r++)
        std::memcpy(xs + (size_t)r * hp.n_embd, xh + (size_t)r * s_embd, (size_t)hp.n_embd * sizeof(float));
}

bool StepBuffers::ensure_logits(gpu::Device& dev, size_t floats) {
    if (logits && logits->size() >= floats * 4) return false;
    logits = std::make_unique<gpu::Buffer>(dev, floats * 4, gpu::Memory::host);
    return true;
}

}  // namespace bee
#endif
