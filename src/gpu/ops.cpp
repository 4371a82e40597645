// gpu/ops: shape checks, push constants and workgroup grids of the compute shaders.
#include "gpu/ops.h"

#include <cmath>
#include <vector>

#include "base/error.h"
#include "gpu/command_list.h"
#include "gpu/device.h"
#include "gpu/pipeline.h"
#include "quant/turbo.h"

namespace bee::gpu {

namespace {

// Matmul shader per weight type (gpu/shaders/matmul_<type>.comp).
const char* matmul_shader(GgmlType t) {
    switch (t) {
        case GgmlType::F32: return "matmul_f32";
        case GgmlType::F16: return "matmul_f16";
        case GgmlType::BF16: return "matmul_bf16";
        case GgmlType::Q4_0: return "matmul_q4_0";
        case GgmlType::Q4_1: return "matmul_q4_1";
        case GgmlType::Q5_0: return "matmul_q5_0";
        case GgmlType::Q5_1: return "matmul_q5_1";
        case GgmlType::Q8_0: return "matmul_q8_0";
        case GgmlType::Q4_K: return "matmul_q4_k";
        case GgmlType::Q5_K: return "matmul_q5_k";
        case GgmlType::Q6_K: return "matmul_q6_k";
        default: return nullptr;
    }
}

// KV type code of the quantized KV shaders (kv_types.glsl), -1 if the device has no shader for t.
int kv_code(GgmlType t) {
    switch (t) {
        case GgmlType::F16: return 0;
        case GgmlType::Q8_0: return 1;
        case GgmlType::Q4_0: return 2;
        case GgmlType::Q4_1: return 5;
        case GgmlType::Q5_0: return 6;
        case GgmlType::Q5_1: return 7;
        case GgmlType::F32: return 8;
        case GgmlType::BF16: return 9;
        default: break;
    }
    const TurboFormat* f = turbo_format(t);
    if (!f) return -1;
    return f->tcq ? 4 : 3;
}

// Per K or V: code, index bits, values and bytes per block, head and row bytes, padded head, rotation group.
struct KvShape {
    uint32_t code, bits, blk, bb, head_bytes, row_bytes, pd, rot;
};
KvShape kv_shape(GgmlType t, int n_head_kv, int head_dim, int rot) {
    const TurboFormat* f = turbo_format(t);
    const GgmlTypeInfo ti = ggml_type_info(t);
    KvShape s{};
    s.code = (uint32_t)kv_code(t);
    s.bits = f ? (uint32_t)f->bits : 0;
    s.blk = (uint32_t)ti.block_size;
    s.bb = (uint32_t)ti.type_size;
    s.head_bytes = (uint32_t)kv_head_bytes(t, head_dim);
    s.row_bytes = (uint32_t)n_head_kv * s.head_bytes;
    s.pd = (uint32_t)kv_padded_dim(t, head_dim);
    s.rot = f ? (uint32_t)f->group : (uint32_t)rot;  // TurboQuant types rotate inside their format
    return s;
}
float inv_sqrt(uint32_t g) { return g ? 1.0f / sqrtf((float)g) : 0.0f; }

// Bytes a binding can see from its offset.
size_t range_bytes(const BufferRange& r) { return r.size ? r.size : r.buffer->size() - r.offset; }

void need_bytes(const BufferRange& r, size_t bytes, const char* op, const char* what) {
    if (!r.buffer) fail("gpu: %s: no %s buffer", op, what);
    if (r.offset > r.buffer->size() || range_bytes(r) < bytes)
        fail("gpu: %s: %s needs %zu bytes, its range has %zu", op, what, bytes,
             r.offset > r.buffer->size() ? (size_t)0 : range_bytes(r));
}

// A 1-D count of workgroups as an x * y grid within the 65535 per-dimension minimum limit.
void grid_2d(uint64_t groups, uint32_t* gx, uint32_t* gy) {
    *gx = (uint32_t)(groups < 32768 ? groups : 32768);
    *gy = *gx ? (uint32_t)((groups + *gx - 1) / *gx) : 0;
    if (*gy > 65535) fail("gpu: %llu workgroups is too many for one dispatch", (unsigned long long)groups);
}

}  // namespace

Ops::Ops(Device& dev) : dev_(dev), subgroups_(dev.info().subgroup_arithmetic) {}

bool Ops::set_subgroups(bool on) {
    subgroups_ = on && dev_.info().subgroup_arithmetic;
    return subgroups_;
}
Ops::~Ops() = default;

bool Ops::supports_matmul(GgmlType t) { return matmul_shader(t) != nullptr; }

Pipeline& Ops::pipeline(const char* name, int n_buffers, uint32_t push_bytes, const std::vector<uint32_t>& spec) {
    std::string key = name;
    for (uint32_t v : spec) key += "/" + std::to_string(v);
    std::unique_ptr<Pipeline>& p = pipelines_[key];
    if (!p) p = std::make_unique<Pipeline>(dev_, name, n_buffers, push_bytes, spec);
    return *p;
}

void Ops::matmul(CommandList& cl, GgmlType wtype, BufferRange w, int64_t n_out, int64_t n_in, BufferRange x,
                 int64_t x_stride, int64_t n_tok, BufferRange y, int64_t y_stride) {
    const char* shader = matmul_shader(wtype);
    if (!shader) fail("gpu: matmul: no shader for weight type %s", ggml_type_name(wtype));
    const GgmlTypeInfo ti = ggml_type_info(wtype);
    if (n_out <= 0 || n_in <= 0 || n_tok <= 0)
        fail("gpu: matmul: empty shape %lld x %lld, %lld rows", (long long)n_out, (long long)n_in, (long long)n_tok);
    if (n_in % ti.block_size)
        fail("gpu: matmul: n_in %lld is not a multiple of %s's block of %lld", (long long)n_in, ti.name,
             (long long)ti.block_size);
    if (x_stride % 32 || x_stride < n_in)
        fail("gpu: matmul: x_stride %lld must be a multiple of 32 >= n_in %lld", (long long)x_stride, (long long)n_in);
    if (y_stride < n_out) fail("gpu: matmul: y_stride %lld < n_out %lld", (long long)y_stride, (long long)n_out);
    const size_t w_bytes = (size_t)n_out * (size_t)n_in / (size_t)ti.block_size * ti.type_size;
    if (w_bytes + 4 > 0xFFFFFFFFull || (uint64_t)n_tok * (uint64_t)x_stride > 0xFFFFFFFFull ||
        (uint64_t)n_tok * (uint64_t)y_stride > 0xFFFFFFFFull)
        fail("gpu: matmul: %zu weight bytes or %lld rows of %lld / %lld floats past 32-bit offsets", w_bytes,
             (long long)n_tok, (long long)x_stride, (long long)y_stride);
    need_bytes(w, w_bytes + 4, "matmul", "W (plus 4 bytes of slack)");
    need_bytes(x, (size_t)n_tok * (size_t)x_stride * 4, "matmul", "X");
    need_bytes(y, ((size_t)(n_tok - 1) * (size_t)y_stride + (size_t)n_out) * 4, "matmul", "Y");

    struct {
        uint32_t n_out, n_in, n_tok, x_stride, y_stride, row_groups;
    } push{(uint32_t)n_out, (uint32_t)n_in, (uint32_t)n_tok, (uint32_t)x_stride, (uint32_t)y_stride, 0};
    uint32_t gx, gy;
    grid_2d((uint64_t)n_out, &gx, &gy);
    push.row_groups = gx;
    const uint64_t gz = ((uint64_t)n_tok + 7) / 8;  // 8 X rows per workgroup (matmul_main.glsl TOK)
    if (gz > 65535) fail("gpu: matmul: %lld X rows is too many for one dispatch", (long long)n_tok);
    const std::string name = std::string(shader) + (subgroups_ ? "_sg" : "");
    cl.dispatch(pipeline(name.c_str(), 3, sizeof push), {w, x, y}, &push, gx, gy, (uint32_t)gz);
}

namespace {

// rms_norm / add_rms_norm: n values per row, n_rows rows `stride` floats apart (at most one dispatch of
// rows); the bytes a row-major buffer of that shape spans.
size_t norm_rows_bytes(const char* op, int64_t n, int64_t n_rows, int64_t stride) {
    if (n <= 0 || n_rows <= 0 || stride < n || n_rows > 65535)
        fail("gpu: %s: bad shape n %lld, %lld rows (at most 65535), stride %lld", op, (long long)n, (long long)n_rows,
             (long long)stride);
    return ((size_t)(n_rows - 1) * (size_t)stride + (size_t)n) * 4;
}

struct NormPush {
    uint32_t n, stride;
    float eps;
    uint32_t has_w;
};

}  // namespace

void Ops::rms_norm(CommandList& cl, BufferRange x, BufferRange w, BufferRange y, int64_t n, int64_t n_rows,
                   int64_t stride, float eps) {
    const size_t bytes = norm_rows_bytes("rms_norm", n, n_rows, stride);
    need_bytes(x, bytes, "rms_norm", "x");
    need_bytes(y, bytes, "rms_norm", "y");
    if (w.buffer) need_bytes(w, (size_t)n * 4, "rms_norm", "w");
    const NormPush push{(uint32_t)n, (uint32_t)stride, eps, w.buffer ? 1u : 0u};
    cl.dispatch(pipeline("rms_norm", 3, sizeof push), {x, w.buffer ? w : x, y}, &push, (uint32_t)n_rows);
}

void Ops::add_rms_norm(CommandList& cl, BufferRange x, BufferRange y, BufferRange w, BufferRange xn, int64_t n,
                       int64_t n_rows, int64_t stride, float eps) {
    const size_t bytes = norm_rows_bytes("add_rms_norm", n, n_rows, stride);
    need_bytes(x, bytes, "add_rms_norm", "x");
    need_bytes(y, bytes, "add_rms_norm", "y");
    need_bytes(xn, bytes, "add_rms_norm", "xn");
    if (w.buffer) need_bytes(w, (size_t)n * 4, "add_rms_norm", "w");
    const NormPush push{(uint32_t)n, (uint32_t)stride, eps, w.buffer ? 1u : 0u};
    cl.dispatch(pipeline("add_rms_norm", 4, sizeof push), {x, y, w.buffer ? w : y, xn}, &push, (uint32_t)n_rows);
}

// Same arithmetic as kernels/ops.cpp rope_table and ref::rope (the build keeps both unfused: -ffp-contract=off).
void Ops::rope_table(const int32_t* pos, int n_rows, const RopeArgs& a, float* cs) {
    const int half = a.n_rot / 2;
    const float theta_scale = powf(a.freq_base, -2.0f / (float)a.n_rot);
    for (int r = 0; r < n_rows; ++r) {
        float* row = cs + (size_t)r * (size_t)half * 2;  // (half, 2)
        float theta = (float)pos[r];
        for (int i = 0; i < half; ++i) {
            const float ff = a.freq_factors ? a.freq_factors[i] : 1.0f;
            rope_cos_sin(theta / ff, a.freq_scale, a.yarn, i, &row[2 * i], &row[2 * i + 1]);
            theta *= theta_scale;
        }
    }
}

void Ops::rope(CommandList& cl, BufferRange x, BufferRange cos_sin, int n_rows, int n_head, int head_dim,
               const RopeArgs& a) {
    if (n_rows <= 0 || n_head <= 0 || a.n_rot <= 0 || a.n_rot % 2 || a.n_rot > head_dim)
        fail("gpu: rope: bad shape %d rows, %d heads, head_dim %d, n_rot %d", n_rows, n_head, head_dim, a.n_rot);
    need_bytes(x, (size_t)n_rows * (size_t)n_head * (size_t)head_dim * 4, "rope", "x");
    need_bytes(cos_sin, (size_t)n_rows * (size_t)a.n_rot * 4, "rope", "cos_sin");
    struct {
        uint32_t n_rows, n_head, head_dim, n_rot, neox, groups_x;
    } push{(uint32_t)n_rows, (uint32_t)n_head, (uint32_t)head_dim, (uint32_t)a.n_rot, a.neox ? 1u : 0u, 0};
    uint32_t gx, gy;
    grid_2d(((uint64_t)n_rows * (uint64_t)n_head * (uint64_t)(a.n_rot / 2) + 63) / 64, &gx, &gy);
    push.groups_x = gx;
    cl.dispatch(pipeline("rope", 2, sizeof push), {x, cos_sin}, &push, gx, gy);
}

void Ops::act_mul(CommandList& cl, Activation act, BufferRange gate, BufferRange up, int64_t n) {
    if (n <= 0) fail("gpu: act_mul: n %lld", (long long)n);
    need_bytes(gate, (size_t)n * 4, "act_mul", "gate");
    need_bytes(up, (size_t)n * 4, "act_mul", "up");
    struct {
        uint32_t n, groups_x, act;
    } push{(uint32_t)n, 0, (uint32_t)act};
    uint32_t gx, gy;
    grid_2d(((uint64_t)n + 255) / 256, &gx, &gy);
    push.groups_x = gx;
    cl.dispatch(pipeline("act_mul", 2, sizeof push), {gate, up}, &push, gx, gy);
}

void Ops::softmax(CommandList& cl, BufferRange x, int64_t n, int64_t n_rows, int64_t stride, float cap) {
    if (n <= 0 || n_rows <= 0 || stride < n)
        fail("gpu: softmax: bad shape n %lld, %lld rows, stride %lld", (long long)n, (long long)n_rows,
             (long long)stride);
    if (n_rows > 65535) fail("gpu: softmax: %lld rows is too many for one dispatch", (long long)n_rows);
    need_bytes(x, ((size_t)(n_rows - 1) * (size_t)stride + (size_t)n) * 4, "softmax", "x");
    struct {
        uint32_t n, stride;
        float cap;
    } push{(uint32_t)n, (uint32_t)stride, cap};
    cl.dispatch(pipeline("softmax", 1, sizeof push), {x}, &push, (uint32_t)n_rows);
}

namespace {

// Push constants of eltwise.comp.
struct EltwisePush {
    uint32_t n, n_cols, stride, op;
    float s;
    uint32_t groups_x;
};

}  // namespace

void Ops::add(CommandList& cl, BufferRange x, BufferRange y, int64_t n) {
    if (n <= 0) fail("gpu: add: n %lld", (long long)n);
    need_bytes(x, (size_t)n * 4, "add", "x");
    need_bytes(y, (size_t)n * 4, "add", "y");
    EltwisePush push{(uint32_t)n, 1, 1, 0, 0.0f, 0};
    uint32_t gx, gy;
    grid_2d(((uint64_t)n + 255) / 256, &gx, &gy);
    push.groups_x = gx;
    cl.dispatch(pipeline("eltwise", 2, sizeof push), {x, y}, &push, gx, gy);
}

void Ops::scale(CommandList& cl, BufferRange x, float s, int64_t n) {
    if (n <= 0) fail("gpu: scale: n %lld", (long long)n);
    need_bytes(x, (size_t)n * 4, "scale", "x");
    EltwisePush push{(uint32_t)n, 1, 1, 1, s, 0};
    uint32_t gx, gy;
    grid_2d(((uint64_t)n + 255) / 256, &gx, &gy);
    push.groups_x = gx;
    cl.dispatch(pipeline("eltwise", 2, sizeof push), {x, x}, &push, gx, gy);
}

void Ops::add_row(CommandList& cl, BufferRange x, BufferRange bias, int64_t n_cols, int64_t n_rows, int64_t stride) {
    if (n_cols <= 0 || n_rows <= 0 || stride < n_cols)
        fail("gpu: add_row: bad shape %lld columns, %lld rows, stride %lld", (long long)n_cols, (long long)n_rows,
             (long long)stride);
    need_bytes(x, ((size_t)(n_rows - 1) * (size_t)stride + (size_t)n_cols) * 4, "add_row", "x");
    need_bytes(bias, (size_t)n_cols * 4, "add_row", "bias");
    EltwisePush push{(uint32_t)(n_cols * n_rows), (uint32_t)n_cols, (uint32_t)stride, 2, 0.0f, 0};
    uint32_t gx, gy;
    grid_2d(((uint64_t)push.n + 255) / 256, &gx, &gy);
    push.groups_x = gx;
    cl.dispatch(pipeline("eltwise", 2, sizeof push), {x, bias}, &push, gx, gy);
}

void Ops::kv_write(CommandList& cl, BufferRange x, int64_t x_stride, int n_rows, BufferRange cells, BufferRange kv,
                   int64_t n_embd) {
    if (n_rows <= 0 || n_embd <= 0 || n_embd % 2 || x_stride < n_embd)
        fail("gpu: kv_write: bad shape %d rows of %lld values, stride %lld", n_rows, (long long)n_embd,
             (long long)x_stride);
    need_bytes(x, ((size_t)(n_rows - 1) * (size_t)x_stride + (size_t)n_embd) * 4, "kv_write", "x");
    need_bytes(cells, (size_t)n_rows * 4, "kv_write", "cells");
    need_bytes(kv, (size_t)n_embd * 2, "kv_write", "kv");
    struct {
        uint32_t n_rows, n_half, x_stride, groups_x;
    } push{(uint32_t)n_rows, (uint32_t)(n_embd / 2), (uint32_t)x_stride, 0};
    uint32_t gx, gy;
    grid_2d(((uint64_t)n_rows * (uint64_t)(n_embd / 2) + 63) / 64, &gx, &gy);
    push.groups_x = gx;
    cl.dispatch(pipeline("kv_write", 3, sizeof push), {x, cells, kv}, &push, gx, gy);
}

size_t KvFormat::head_bytes() const { return kv_head_bytes(type, head_dim); }

bool Ops::supports_kv(GgmlType t) { return kv_code(t) >= 0; }

BufferRange Ops::kv_table(GgmlType t) {
    std::unique_ptr<Buffer>& b = kv_tables_[t];
    if (!b) {
        const TurboFormat* f = turbo_format(t);
        const size_t n = f ? (size_t)1 << (f->bits + (f->tcq ? 6 : 0)) : 1;
        std::vector<float> v(n, 0.0f);
        if (f) v.assign(f->values, f->values + n);
        b = std::make_unique<Buffer>(dev_, n * sizeof(float), Memory::device);
        b->upload(v.data(), n * sizeof(float));
    }
    return whole(*b);
}

void Ops::kv_write(CommandList& cl, BufferRange x, int64_t x_stride, int n_rows, BufferRange cells, BufferRange kv,
                   const KvFormat& f) {
    if (!supports_kv(f.type)) fail("gpu: kv_write: no device KV shader for type %s", ggml_type_name(f.type));
    if (f.type == GgmlType::F16) return kv_write(cl, x, x_stride, n_rows, cells, kv, (int64_t)f.n_head_kv * f.head_dim);
    const KvShape s = kv_shape(f.type, f.n_head_kv, f.head_dim, f.rot);
    if (n_rows <= 0 || f.n_head_kv <= 0 || f.head_dim <= 0 || s.pd > 256 ||
        x_stride < (int64_t)f.n_head_kv * f.head_dim ||
        (f.rot > 0 && (f.head_dim % f.rot || (f.rot != 64 && f.rot != 128))))
        fail("gpu: kv_write: bad shape %d rows of %d heads of %d (%s, rotation %d), stride %lld", n_rows, f.n_head_kv,
             f.head_dim, ggml_type_name(f.type), f.rot, (long long)x_stride);
    need_bytes(x, ((size_t)(n_rows - 1) * (size_t)x_stride + (size_t)f.n_head_kv * f.head_dim) * 4, "kv_write", "x");
    need_bytes(cells, (size_t)n_rows * 4, "kv_write", "cells");
    need_bytes(kv, (s.row_bytes + 3) / 4 * 4, "kv_write", "kv");
    const bool tcq = s.code == 4;
    struct {
        uint32_t n_rows, n_head_kv, head_dim, x_stride, type, bits, blk, bb, head_bytes, row_bytes, pd, rot;
        float rs, alpha;
        uint32_t groups_x;
    } push{(uint32_t)n_rows,
           (uint32_t)f.n_head_kv,
           (uint32_t)f.head_dim,
           (uint32_t)x_stride,
           s.code,
           s.bits,
           s.blk,
           s.bb,
           s.head_bytes,
           s.row_bytes,
           s.pd,
           (uint32_t)f.rot,
           inv_sqrt(s.rot),
           f.alpha,
           0};
    uint32_t gx, gy;
    grid_2d((uint64_t)n_rows * (uint64_t)f.n_head_kv * (tcq ? s.pd / 128 : 1), &gx, &gy);
    push.groups_x = gx;
    cl.dispatch(pipeline(tcq ? "kv_write_tcq" : "kv_write_q", 4, sizeof push), {x, cells, kv, kv_table(f.type)}, &push,
                gx, gy);
}

void Ops::attention(CommandList& cl, const AttentionOp& a) {
    if (a.n_rows <= 0 || a.n_head <= 0 || a.n_head_kv <= 0 || a.n_head % a.n_head_kv || a.head_dim <= 0 ||
        a.head_dim % 2 || a.head_dim > 256 || a.n_cells <= 0 || a.out_stride < (int64_t)a.n_head * a.head_dim)
        fail(
            "gpu: attention: bad shape %d rows, %d heads (%d kv) of %d, %d cells, out stride %lld (head_dim even "
            "and <= 256)",
            a.n_rows, a.n_head, a.n_head_kv, a.head_dim, a.n_cells, (long long)a.out_stride);
    const size_t hd = (size_t)a.head_dim;
    need_bytes(a.q, (size_t)a.n_rows * (size_t)a.n_head * hd * 4, "attention", "q");
    if (!supports_kv(a.k_type) || !supports_kv(a.v_type))
        fail("gpu: attention: no device KV shader for K %s / V %s", ggml_type_name(a.k_type), ggml_type_name(a.v_type));
    const KvShape ks = kv_shape(a.k_type, a.n_head_kv, a.head_dim, a.k_rot),
                  vs = kv_shape(a.v_type, a.n_head_kv, a.head_dim, a.v_rot);
    if (ks.pd > 256 || vs.pd > 256)
        fail("gpu: attention: heads of %d padded to %u / %u values (K %s, V %s): at most 256", a.head_dim, ks.pd, vs.pd,
             ggml_type_name(a.k_type), ggml_type_name(a.v_type));
    for (int rot : {a.k_rot, a.v_rot})
        if (rot != 0 && ((rot != 64 && rot != 128) || a.head_dim % rot))
            fail("gpu: attention: rotation group %d for heads of %d (64 or 128, dividing the head)", rot, a.head_dim);
    need_bytes(a.k, (size_t)a.n_cells * ks.row_bytes, "attention", "k");
    need_bytes(a.v, (size_t)a.n_cells * vs.row_bytes, "attention", "v");
    need_bytes(a.offsets, ((size_t)a.n_rows + 1) * 4, "attention", "offsets");
    need_bytes(a.cells, (size_t)(a.n_visible > 0 ? a.n_visible : 1) * 4, "attention", "cells");
    need_bytes(a.out, ((size_t)(a.n_rows - 1) * (size_t)a.out_stride + (size_t)a.n_head * hd) * 4, "attention", "out");
    struct {
        uint32_t n_head, n_head_kv, head_dim, o_stride;
        float scale, cap;
        uint32_t groups_x;
    } push{
        (uint32_t)a.n_head, (uint32_t)a.n_head_kv, (uint32_t)a.head_dim, (uint32_t)a.out_stride, a.scale, a.softcap, 0};
    uint32_t gx, gy;
    grid_2d((uint64_t)a.n_rows * (uint64_t)a.n_head, &gx, &gy);
    push.groups_x = gx;
    if (a.k_type == GgmlType::F16 && a.v_type == GgmlType::F16) {
        cl.dispatch(pipeline("attention", 6, sizeof push), {a.q, a.k, a.v, a.offsets, a.cells, a.out}, &push, gx, gy);
        return;
    }
    struct {
        decltype(push) base;
        KvShape k, v;
        float k_rs, v_rs;
    } qpush{push, ks, vs, inv_sqrt(ks.rot), inv_sqrt(vs.rot)};
    // K's and V's type codes are specialization constants: one pipeline per pair in use, the type
    // branches of kv_read.glsl compiled away.
    cl.dispatch(pipeline("attention_q", 8, sizeof qpush, {ks.code, vs.code}),
                {a.q, a.k, a.v, a.offsets, a.cells, a.out, kv_table(a.k_type), kv_table(a.v_type)}, &qpush, gx, gy);
}

}  // namespace bee::gpu
