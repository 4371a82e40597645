// model/offload_buffers: the device memory of model/offload_vulkan: weights in GGUF rows, and one ubatch's
// activations and inputs (residual stream, projections, KV cells, visibility lists, rope tables, logits).
#pragma once
#ifdef BEE_HAVE_VULKAN
#include <memory>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/command_list.h"
#include "gpu/ops.h"
#include "model/hparams.h"
#include "model/offload.h"
#include "model/weights.h"

namespace bee {

// A weight in device memory, in GGUF rows.
struct DevWeight {
    std::unique_ptr<gpu::Buffer> buf;
    GgmlType type = GgmlType::F32;
    int64_t ne0 = 0, ne1 = 1;
    explicit operator bool() const { return buf != nullptr; }
    gpu::BufferRange range() const { return gpu::whole(*buf); }
};
// w's bytes in device memory in GGUF rows (a host copy repacked for the CPU tiles is unpacked row by row).
DevWeight upload_weight(gpu::Device& dev, const Weight& w);

// The device rope's arguments for a layer's rope settings.
gpu::RopeArgs device_rope(const RopeParams& r);

// An input written on the host each step (host-visible) and copied into device memory by the step's
// command list; both grow on demand, to powers of two. The copy covers span() bytes: the bytes written
// rounded up to a power of two, so a recorded copy serves every later step whose input fits it.
struct Staged {
    std::unique_ptr<gpu::Buffer> host, dev;
    size_t bytes = 0;  // written this step
    // Returns true when the buffers were replaced (recordings that bind them are stale).
    bool write(gpu::Device& d, const void* src, size_t n);
    size_t span() const;
    void record(gpu::CommandList& cl) const;
    gpu::BufferRange dev_range() const { return {dev.get(), 0, 0}; }
};

struct StepBuffers {
    // Floats between rows: n_embd, n_head * head_dim (attention output) and n_ff rounded up to 32 (matmul
    // inputs, gpu::Ops::x_stride_for); padding stays zero.
    int64_t s_embd = 0, s_att = 0, s_ff = 0;
    // Device (n_ubatch rows): x, xn, out, hid (s_embd); q (n_head * head_dim); k, v (n_head_kv * head_dim);
    // att (s_att); ff_a, ff_b (s_ff).
    std::unique_ptr<gpu::Buffer> x, xn, out, hid, q, k, v, att, ff_a, ff_b;
    std::unique_ptr<gpu::Buffer> x_host;  // host-visible (n_ubatch, s_embd): x in and out
    // -nkvo (allocate_host_attention): host-visible q, k, v (as the device ones) down and att (s_att) up.
    std::unique_ptr<gpu::Buffer> q_host, k_host, v_host, att_host;
    std::unique_ptr<gpu::Buffer> logits;  // host-visible (rows, n_vocab), grown on demand
    // Per step: each row's cell (uint32), each row's visible cells (offsets (n_rows + 1) and the lists,
    // full and sliding-window), and a cos/sin table per distinct rope setting (gpu::Ops::rope_table).
    Staged cells, off_full, vis_full, off_swa, vis_swa;
    std::vector<Staged> ropes;
    int64_t n_visible_full = 0, n_visible_swa = 0;

    void allocate(gpu::Device& dev, const HParams& hp, int n_ubatch, int n_ropes);
    void allocate_host_attention(gpu::Device& dev, const HParams& hp, int n_ubatch);
    // Writes the step's inputs into the host-visible buffers. Returns true when a buffer was replaced
    // (grown): command lists recorded before bind freed buffers.
    bool stage(gpu::Device& dev, const HParams& hp, const OffloadStep& s, const std::vector<RopeParams>& rope_settings);
    // Writes x (n_rows, n_embd) into x_host (its copy to x is recorded by the caller).
    void stage_x(const HParams& hp, int n_rows, const float* x);
    // Records the copies of the staged inputs (not x) into device memory (each Staged's span()).
    void record_uploads(gpu::CommandList& cl) const;
    // The spans record_uploads() copies: part of the key of a recording that includes them.
    void upload_spans(std::vector<int64_t>& key) const;
    gpu::BufferRange rope_table(int i) const { return ropes[(size_t)i].dev_range(); }
    // x_host's first n_rows rows into x (n_rows, n_embd).
    void read_x(const HParams& hp, int n_rows, float* x) const;
    // Returns true when the logits buffer was replaced.
    bool ensure_logits(gpu::Device& dev, size_t floats);
};

}  // namespace bee
#endif
