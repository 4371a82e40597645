// gpu/ops: host side of the compute shaders: checks the shapes, records one dispatch into a CommandList.
// Same semantics as the CPU ops in kernels/kernels.h (the tests hold them to kernels/ref and quant/).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "gguf/ggml_type.h"
#include "gpu/buffer.h"

namespace bee::gpu {

class CommandList;
class Device;
class Pipeline;

enum class Activation { silu = 0, gelu_tanh = 1 };

struct RopeArgs {
    int n_rot = 0;              // rotated dims per head (<= head_dim, even)
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;    // linear scaling: position multiplied by this
    bool neox = false;          // false: pairs (2i, 2i+1); true: pairs (i, i + n_rot/2)
    const float* freq_factors = nullptr;  // host memory: n_rot/2 divisors of theta (rope_freqs), or none
};

class Ops {
public:
    explicit Ops(Device& dev);
    ~Ops();
    Ops(const Ops&) = delete;
    Ops& operator=(const Ops&) = delete;

    // Weight types matmul() takes: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q4_K Q5_K Q6_K.
    static bool supports_matmul(GgmlType t);
    // Whether matmul() takes the subgroup-reduction shaders (on by default where the device has subgroup
    // arithmetic; tests turn it off to check the shared-memory reduction too). Returns the setting in force.
    bool set_subgroups(bool on);
    bool subgroups() const { return subgroups_; }

    // X rows for matmul() are this many floats apart (n_in rounded up to 32), zero past n_in.
    static int64_t x_stride_for(int64_t n_in) { return (n_in + 31) / 32 * 32; }

    // y (n_tok, y_stride) = x (n_tok, x_stride) · Wᵀ with W (n_out, n_in) in GGUF rows of `wtype`, f32 sums.
    // n_in must be a multiple of the type's block (any n_in for F32/F16/BF16); x_stride a multiple of 32
    // >= n_in with zeros (or any finite values times a zero weight) past n_in. y may not alias x or w.
    void matmul(CommandList& cl, GgmlType wtype, BufferRange w, int64_t n_out, int64_t n_in, BufferRange x,
                int64_t x_stride, int64_t n_tok, BufferRange y, int64_t y_stride);
    // y = x / sqrt(mean(x²) + eps) * w per row of n (w.buffer == nullptr: no scale); y may be x.
    void rms_norm(CommandList& cl, BufferRange x, BufferRange w, BufferRange y, int64_t n, int64_t n_rows,
                  int64_t stride, float eps);
    // The cos/sin table rope() reads, on the host: cs (n_rows, n_rot/2, 2) = cos, sin of pair i at pos[r],
    // the same floats as kernels/ rope (same angles, same libm cosf/sinf). note: one table per batch of
    // positions serves q and k of every layer; angles reach thousands of radians, where the device's
    // division and sin/cos are off by ~1e-5 (NVIDIA), so they are not computed in the shader.
    static void rope_table(const int32_t* pos, int n_rows, const RopeArgs& args, float* cs);
    // Rotates x (n_rows, n_head, head_dim) in place, row r by row r of cos_sin (rope_table of the positions).
    void rope(CommandList& cl, BufferRange x, BufferRange cos_sin, int n_rows, int n_head, int head_dim,
              const RopeArgs& args);
    // gate = act(gate) * up over n floats (the gated FFN: SiLU for llama/qwen, GELU-tanh for gemma).
    void act_mul(CommandList& cl, Activation act, BufferRange gate, BufferRange up, int64_t n);
    // Per row of n (stride apart): cap > 0: x = cap * tanh(x / cap); then softmax in place.
    void softmax(CommandList& cl, BufferRange x, int64_t n, int64_t n_rows, int64_t stride, float cap);

private:
    Pipeline& pipeline(const char* name, int n_buffers, uint32_t push_bytes);

    Device& dev_;
    bool subgroups_ = false;
    std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;  // built on first use, by shader name
};

}  // namespace bee::gpu
