// kernels/kernels: CPU compute used by model/: matmul for every weight type, norms, rope, activations,
// softmax, attention over the KV cache. Each op has a scalar reference in kernels/ref and a fast path
// chosen at run time from cpu_isa(). Every output element is reduced in one fixed order, whatever the
// batch size or thread count (DESIGN.md invariant 2).
#pragma once
#include <cstdint>
#include <vector>

#include "base/rope_yarn.h"
#include "base/thread_pool.h"
#include "gguf/ggml_type.h"
#include "kernels/repack.h"
#include "quant/quant.h"

namespace bee {

// Dot product of a weight row (type wtype) and an activation row in quant_traits(wtype)->vec_dot_type,
// for the active ISA (falls back to the reference where no fast path exists); nullptr if unsupported.
VecDotFn vec_dot_for(GgmlType wtype);
// Activation conversion for the active ISA: float row -> vec_dot_type row (may be the reference).
QuantizeRowFn quantize_activation_for(GgmlType vec_dot_type);

// y (n_tok, n_out) = x (n_tok, n_in) · Wᵀ where W (n_out, n_in) is row-major in type wtype.
// n_in must be a multiple of the type's block size; wtype must have a vec_dot (model/ checks at load;
// here it aborts). Each x row is converted once to the vec_dot_type in a scratch buffer owned by the
// calling thread; threads split output rows in fixed chunks; y[t][o] is one vec_dot call, or one
// element of a blocked tile (kernels/gemm.h) reduced exactly as when the tile holds only that element.
// `layout`: how W is stored (kernels/repack.h). A repacked W gives the same bits as its GGUF copy; on an
// ISA without a tile for that layout (BEE_CPU / tests), each row is unpacked back and takes vec_dot.
void matmul(ThreadPool& pool, GgmlType wtype, const void* w, int64_t n_out, int64_t n_in, const float* x, int64_t n_tok,
            float* y, WeightLayout layout = WeightLayout::gguf);

// matmul() of act(gate) ⊙ up (a gated FFN's down projection): each row's product is formed in place in
// `gate` by the task that quantizes that row, so the activation needs no parallel region of its own. Same
// bits as silu_mul / gelu_tanh_mul over the rows followed by matmul().
enum class GatedAct { silu, gelu_tanh };
void matmul_gated(ThreadPool& pool, GgmlType wtype, const void* w, int64_t n_out, int64_t n_in, float* gate,
                  const float* up, GatedAct act, int64_t n_tok, float* y, WeightLayout layout = WeightLayout::gguf);

// Several matmuls of one input x (n_tok, n_in), e.g. q/k/v or gate/up: where their tile kernels read the
// same prepared activations, x is quantized and prepared once for all of them. Same bits as separate
// matmul() calls (the same bytes reach the same tiles).
struct MatmulOut {
    GgmlType wtype;
    const void* w;  // (n_out, n_in) in `layout`
    int64_t n_out;
    WeightLayout layout;
    float* y;  // (n_tok, n_out)
};
void matmul_shared_input(ThreadPool& pool, const MatmulOut* outs, int n_outs, int64_t n_in, const float* x,
                         int64_t n_tok);

// Copies rows `ids` of a (n_rows, n) matrix of type `type` into dst (ids.size(), n) as float.
void get_rows(GgmlType type, const void* w, int64_t n, const int32_t* ids, int64_t n_ids, float* dst);

// y = x / sqrt(mean(x²) + eps) * w   (w may be nullptr: no scale). x and y may alias.
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);

enum class RopeMode { normal = 0, neox = 2 };  // normal: pairs (2i, 2i+1); neox: pairs (i, i + n_rot/2)

struct RopeParams {
    int n_rot = 0;  // rotated dims per head (<= head_dim)
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;  // linear scaling: position multiplied by this
    RopeMode mode = RopeMode::normal;
    const float* freq_factors = nullptr;  // optional rope_freqs, n_rot/2 divisors of theta (rope() caches
                                          // tables by this pointer: the values must not change)
    RopeYarn yarn;                        // YaRN scaling (base/rope_yarn.h); default: none
};
// Rotates x (n_head, head_dim) in place for position pos.
void rope(float* x, int n_head, int head_dim, int32_t pos, const RopeParams& p);

void silu(float* x, int64_t n);                 // x = x * sigmoid(x)
void gelu_tanh(float* x, int64_t n);            // tanh approximation of GELU
void mul(float* x, const float* y, int64_t n);  // x *= y
// Gated FFN activations in one pass: x = act(x) * y, the same bits as act(x) then mul(x, y).
void silu_mul(float* x, const float* y, int64_t n);
void gelu_tanh_mul(float* x, const float* y, int64_t n);
void add(float* x, const float* y, int64_t n);  // x += y
void scale(float* x, float s, int64_t n);       // x *= s
void softmax(float* x, int64_t n);              // in place, max-subtracted
void softcap(float* x, float cap, int64_t n);   // x = cap * tanh(x / cap)

// Gated DeltaNet pieces (../shared/specs/drafters.md §8.5), one token of one sequence at a time.
// y = x / max(||x||₂, eps) (ggml_l2_norm). x and y may alias.
void l2_norm(const float* x, float* y, int64_t n, float eps);
// x *= sigmoid(g) (the attention output gate of qwen35).
void sigmoid_mul(float* x, const float* g, int64_t n);
// One token of a short causal depthwise conv over n channels: `state` holds the k-1 previous inputs, oldest
// first, rows `ld` floats apart; `taps` holds k rows of n (tap-major, rows `ld` apart, row k-1 multiplies the
// newest input). y[c] = taps[0][c]·state[0][c] + … + taps[k-2][c]·state[k-2][c] + taps[k-1][c]·x[c] (products
// added in that order, fused), then the state drops its oldest row and appends x. Every channel is computed
// by the same operations whatever n is, so splitting the channels over threads does not change a bit.
void conv1d_step(float* state, const float* taps, int k, int64_t ld, const float* x, float* y, int64_t n);
// One token of the gated delta rule for one value head. M holds the state transposed, dv rows of dk floats
// (M[j][i] = S[i][j]). With e = exp(g): for each row j, s = Σ_i (e·M[j][i])·k[i]; δ = β·(v[j] − s);
// M[j][i] = δ·k[i] + e·M[j][i]; o[j] = scale · Σ_i M[j][i]·q[i]. Rows are independent.
void gdn_step(float* M, int dk, int dv, const float* q, const float* k, const float* v, float g, float beta,
              float scale, float* o);
// n tokens of one sequence through gdn_step, in order: token t reads q + t·qk_stride, k + t·qk_stride,
// v + t·v_stride, g[t·gb_stride], beta[t·gb_stride] and writes dv outputs at o + t·o_stride. The same bits as
// n calls of gdn_step. note: rows are independent, so 128-wide heads take each row through a chunk of
// tokens while it sits in registers: the state crosses the cache once per chunk, not once per token.
struct GdnTokens {
    int n = 0;
    const float *q = nullptr, *k = nullptr, *v = nullptr, *g = nullptr, *beta = nullptr;
    int64_t qk_stride = 0, v_stride = 0, gb_stride = 0, o_stride = 0;
    float* o = nullptr;
};
void gdn_steps(float* M, int dk, int dv, const GdnTokens& t, float scale);

// Attention of a batch of query rows over KV cells of one layer.
// The caller (model/ with kv/) gives, per query row, the cells it may see, in a fixed order
// (ascending position), so the result does not depend on what else is in the batch.
// Tasks are (row, head) pairs; each runs an online softmax over fixed tiles of its visible list.
// GQA: head h reads kv head h / (n_head / n_head_kv). An empty list gives zeros.
struct AttentionArgs {
    int n_rows = 0;  // query rows
    int n_head = 0, n_head_kv = 0, head_dim = 0;
    const float* q = nullptr;  // (n_rows, n_head, head_dim)
    float* out = nullptr;      // (n_rows, n_head, head_dim)
    float scale = 1.0f;        // applied to q·k
    float softcap = 0.0f;      // 0 = none; else scores = softcap * tanh(scores / softcap)
    GgmlType k_type = GgmlType::F32, v_type = GgmlType::F32;  // F32 or F16 for now
    const uint8_t* k = nullptr;  // cell c, kv head h at k + c*k_cell_bytes + h*head_dim*elem
    const uint8_t* v = nullptr;  // same layout as k
    size_t k_cell_bytes = 0, v_cell_bytes = 0;
    // Legacy block K / V stored Hadamard-rotated in groups of this size (kv/kv_cache.h kv_rot_group;
    // 0: not rotated): q is rotated before scoring and the V sum un-rotated, as for TurboQuant types.
    int k_rot_group = 0, v_rot_group = 0;
    const std::vector<int32_t>* const* visible = nullptr;  // [n_rows] -> cell indices, ascending pos
};
void attention(ThreadPool& pool, const AttentionArgs& a);
// True when attention() takes t as a K or V storage type (model/ checks this at start-up).
bool attention_supports_kv_type(GgmlType t);

// Scalar references of the above (always built; tests hold the fast paths to them).
namespace ref {
void matmul(GgmlType wtype, const void* w, int64_t n_out, int64_t n_in, const float* x, int64_t n_tok, float* y);
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);
void rope(float* x, int n_head, int head_dim, int32_t pos, const RopeParams& p);
void silu(float* x, int64_t n);
void gelu_tanh(float* x, int64_t n);
void softmax(float* x, int64_t n);
void attention(const AttentionArgs& a);
void conv1d_step(float* state, const float* taps, int k, int64_t ld, const float* x, float* y, int64_t n);
void gdn_step(float* M, int dk, int dv, const float* q, const float* k, const float* v, float g, float beta,
              float scale, float* o);
}  // namespace ref

}  // namespace bee
