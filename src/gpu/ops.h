// gpu/ops: host side of the compute shaders: checks the shapes, records one dispatch into a CommandList.
// Same semantics as the CPU ops in kernels/kernels.h (the tests hold them to kernels/ref and quant/).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/rope_yarn.h"
#include "gguf/ggml_type.h"
#include "gpu/buffer.h"

namespace bee::gpu {

class CommandList;
class Device;
class Pipeline;

enum class Activation { silu = 0, gelu_tanh = 1 };

struct RopeArgs {
    int n_rot = 0;  // rotated dims per head (<= head_dim, even)
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;              // linear scaling: position multiplied by this
    bool neox = false;                    // false: pairs (2i, 2i+1); true: pairs (i, i + n_rot/2)
    const float* freq_factors = nullptr;  // host memory: n_rot/2 divisors of theta (rope_freqs), or none
    RopeYarn yarn;                        // YaRN scaling (base/rope_yarn.h); default: none
};

// How one layer's K or V rows are stored (kv/kv_cache.h, the bytes KvCache keeps): type, heads and their
// width (each head zero-padded to whole blocks, quant/turbo.h kv_padded_dim), the rotation group of a
// Hadamard-rotated legacy type (kv_rot_group; 0: none) and the TurboQuant norm alpha (turbo_v_alpha for V).
struct KvFormat {
    GgmlType type = GgmlType::F16;
    int n_head_kv = 0, head_dim = 0;
    int rot = 0;
    float alpha = 1.0f;
    size_t head_bytes() const;
    size_t row_bytes() const { return (size_t)n_head_kv * head_bytes(); }
};

// Buffers and shape of Ops::attention.
struct AttentionOp {
    int n_rows = 0, n_head = 0, n_head_kv = 0, head_dim = 0;
    int n_cells = 0;        // cells in k and v
    int64_t n_visible = 0;  // entries in cells (offsets[n_rows])
    float scale = 1.0f, softcap = 0.0f;
    BufferRange q, k, v, offsets, cells, out;
    int64_t out_stride = 0;  // floats between output rows (>= n_head * head_dim)
    // K / V storage (Ops::supports_kv): types and rotation groups (kv_rot_group); f16 rows by default.
    GgmlType k_type = GgmlType::F16, v_type = GgmlType::F16;
    int k_rot = 0, v_rot = 0;
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
    // x += y, then xn = rms_norm(x) (as add() and rms_norm() one after the other, same bits): x, y, xn
    // (n_rows, stride) with the padding past n untouched; xn may not alias x or y.
    void add_rms_norm(CommandList& cl, BufferRange x, BufferRange y, BufferRange w, BufferRange xn, int64_t n,
                      int64_t n_rows, int64_t stride, float eps);
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
    // x += y over n floats (the residual add).
    void add(CommandList& cl, BufferRange x, BufferRange y, int64_t n);
    // x *= s over n floats.
    void scale(CommandList& cl, BufferRange x, float s, int64_t n);
    // x (n_rows, stride): the first n_cols floats of every row += bias (n_cols) (projection biases).
    void add_row(CommandList& cl, BufferRange x, BufferRange bias, int64_t n_cols, int64_t n_rows, int64_t stride);
    // Stores rows of x (n_rows, x_stride) as f16 into cells[r] of kv (n_cells, n_embd f16), the bytes
    // KvCache::write_k gives an f16 cache (round to nearest even). n_embd even; cells (n_rows) uint32.
    void kv_write(CommandList& cl, BufferRange x, int64_t x_stride, int n_rows, BufferRange cells, BufferRange kv,
                  int64_t n_embd);
    // KV storage types kv_write() and attention() take: every KvCache type (f32, f16, bf16, q8_0, q4_0, q4_1,
    // q5_0, q5_1, turbo2/3/4(_64), turbo2/3_tcq).
    static bool supports_kv(GgmlType t);
    // Stores rows of x (n_rows, x_stride) into cells[r] of kv (n_cells, f.row_bytes()) in format f: the bytes
    // KvCache::write_k / write_v store (quantized and rotated as there; kv_write_q.comp says where a
    // TurboQuant norm may differ). cells (n_rows) uint32. Bytes of other cells are kept.
    void kv_write(CommandList& cl, BufferRange x, int64_t x_stride, int n_rows, BufferRange cells, BufferRange kv,
                  const KvFormat& f);
    // Attention over the KV cache (kernels/ref attention; f16 K and V unless a.k_type / v_type say otherwise,
    // rows in KvFormat's layout with k_rot / v_rot as its rot): out row r, head h
    // (at r * out_stride + h * head_dim) = softmax over row r's visible cells of scale · q·k (soft-capped
    // when softcap > 0) times V, for query head h and KV head h / (n_head / n_head_kv). q (n_rows, n_head,
    // head_dim); k, v (n_cells, n_head_kv, head_dim) f16; row r's cells are cells[offsets[r] ..
    // offsets[r + 1]) (uint32, ascending position). head_dim even and <= 256. A row's result depends only
    // on its own list (fixed reduction order).
    void attention(CommandList& cl, const AttentionOp& a);

private:
    Pipeline& pipeline(const char* name, int n_buffers, uint32_t push_bytes, const std::vector<uint32_t>& spec = {});
    BufferRange kv_table(GgmlType t);  // TurboQuant centroids / TCQ codebook of t (4 zero bytes otherwise)

    Device& dev_;
    bool subgroups_ = false;
    std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;  // built on first use, by shader name (+ spec)
    std::map<GgmlType, std::unique_ptr<Buffer>> kv_tables_;       // uploaded on first use
};

}  // namespace bee::gpu
