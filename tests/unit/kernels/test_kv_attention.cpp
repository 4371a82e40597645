// tests/unit/kernels/test_kv_attention: attention over every compressed KV type (legacy blocks, bf16,
// TurboQuant, TCQ), on every ISA: the fast path against the double reference on the same stored
// bytes (tight), against f32 attention on the unquantized K/V (per-type error bound), the per-ISA
// primitives against the scalar ones, and rows alone vs in a batch (bit-identical).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/kernels_impl.h"
#include "kernels_test_util.h"
#include "quant/turbo.h"

namespace bee {
namespace {

using test::all_isas;
using test::IsaScope;
using test::random_floats;

const GgmlType kKvTypes[] = {
    GgmlType::F32,       GgmlType::F16,       GgmlType::BF16,       GgmlType::Q8_0,
    GgmlType::Q4_0,      GgmlType::Q4_1,      GgmlType::Q5_0,       GgmlType::Q5_1,
    GgmlType::TURBO2,    GgmlType::TURBO3,    GgmlType::TURBO4,     GgmlType::TURBO2_64,
    GgmlType::TURBO3_64, GgmlType::TURBO4_64, GgmlType::TURBO2_TCQ, GgmlType::TURBO3_TCQ,
};

// One layer's K or V for n_cells cells of n_head_kv heads, each head zero-padded and quantized as the
// KV cache does (kv_head_bytes layout), cells 16 bytes apart beyond the packed size.
struct KvStore {
    GgmlType type;
    size_t cell_bytes;
    std::vector<uint8_t> data;
};

KvStore make_kv(GgmlType t, const std::vector<float>& x, int n_cells, int n_head_kv, int head_dim) {
    const int padded = kv_padded_dim(t, head_dim);
    const size_t hb = kv_head_bytes(t, head_dim);
    KvStore s{t, n_head_kv * hb + 16, {}};
    s.data.assign(s.cell_bytes * n_cells, 0xAB);
    std::vector<float> buf(padded, 0.0f);
    for (int c = 0; c < n_cells; c++)
        for (int h = 0; h < n_head_kv; h++) {
            memcpy(buf.data(), &x[((size_t)c * n_head_kv + h) * head_dim], head_dim * sizeof(float));
            quant_traits(t)->quantize_row(buf.data(), s.data.data() + c * s.cell_bytes + h * hb, padded);
        }
    return s;
}

struct AttnSetup {
    int n_head = 6, n_head_kv = 2, head_dim, n_cells, n_rows = 4;
    std::vector<float> q, kf, vf;
    std::vector<std::vector<int32_t>> lists;
    std::vector<const std::vector<int32_t>*> vis;
    explicit AttnSetup(int hd, int cells = 90) : head_dim(hd), n_cells(cells) {
        q = random_floats((size_t)n_rows * n_head * hd, 11, -2, 2);
        kf = random_floats((size_t)n_cells * n_head_kv * hd, 12);
        vf = random_floats((size_t)n_cells * n_head_kv * hd, 13);
        lists.resize(n_rows);
        for (int r = 0; r < n_rows; r++)  // causal over the first cells, one row with a short window
            for (int c = r == 2 ? 60 : 0; c <= n_cells - n_rows + r; c++) lists[r].push_back(c);
        for (auto& l : lists) vis.push_back(&l);
    }
    AttentionArgs args(const KvStore& k, const KvStore& v, float* out) const {
        AttentionArgs a;
        a.n_rows = n_rows;
        a.n_head = n_head;
        a.n_head_kv = n_head_kv;
        a.head_dim = head_dim;
        a.q = q.data();
        a.out = out;
        a.scale = 2.0f / std::sqrt((float)head_dim);
        a.k_type = k.type;
        a.v_type = v.type;
        a.k = k.data.data();
        a.v = v.data.data();
        a.k_cell_bytes = k.cell_bytes;
        a.v_cell_bytes = v.cell_bytes;
        a.visible = vis.data();
        return a;
    }
};

double rms(const std::vector<float>& a) {
    double s = 0;
    for (float x : a) s += (double)x * x;
    return std::sqrt(s / a.size());
}

// Relative RMS error of the attention output with K and V stored as `t` vs f32 K/V. The output is a
// mix of ~80 random V rows, so it is small and the relative error large; the bounds are 1.5x the
// worst this test measured over head sizes 64/128/80. The per-vector distortion of each type is held
// to the spec's figures in tests/unit/quant/test_turbo.cpp.
double error_bound(GgmlType t) {
    switch (t) {
        case GgmlType::F32: return 1e-6;
        case GgmlType::F16: return 1e-3;
        case GgmlType::BF16: return 5e-3;
        case GgmlType::Q8_0: return 1e-2;
        case GgmlType::Q5_0:
        case GgmlType::Q5_1: return 0.075;
        case GgmlType::Q4_0:
        case GgmlType::Q4_1: return 0.16;
        case GgmlType::TURBO4:
        case GgmlType::TURBO4_64: return 0.27;
        case GgmlType::TURBO3_TCQ: return 0.34;
        case GgmlType::TURBO3:
        case GgmlType::TURBO3_64: return 0.52;
        case GgmlType::TURBO2_TCQ: return 0.65;
        default: return 0.82;  // turbo2, turbo2_64
    }
}

TEST(KvAttention, EveryTypeMatchesReferenceOnEveryIsa) {
    ThreadPool pool(2);
    for (int hd : {64, 128, 80}) {  // 80: padded up to the block in every blocked type
        AttnSetup s(hd);
        const KvStore kf32 = make_kv(GgmlType::F32, s.kf, s.n_cells, s.n_head_kv, hd);
        const KvStore vf32 = make_kv(GgmlType::F32, s.vf, s.n_cells, s.n_head_kv, hd);
        std::vector<float> exact(s.q.size());
        ref::attention(s.args(kf32, vf32, exact.data()));
        for (GgmlType t : kKvTypes) {
            const KvStore k = make_kv(t, s.kf, s.n_cells, s.n_head_kv, hd);
            const KvStore v = make_kv(t, s.vf, s.n_cells, s.n_head_kv, hd);
            std::vector<float> want(s.q.size());
            ref::attention(s.args(k, v, want.data()));
            std::vector<float> diff(want.size());
            for (size_t i = 0; i < want.size(); i++) diff[i] = want[i] - exact[i];
            const double rel = rms(diff) / rms(exact);
            printf("[ kv-attn ] hd %3d %-10s rel. RMS error vs f32 KV: %.4f\n", hd, ggml_type_name(t), rel);
            EXPECT_LT(rel, error_bound(t)) << ggml_type_name(t) << " hd " << hd;
            for (Isa isa : all_isas()) {
                IsaScope scope(isa);
                std::vector<float> got(s.q.size(), NAN);
                attention(pool, s.args(k, v, got.data()));
                for (size_t i = 0; i < got.size(); i++)
                    ASSERT_NEAR(got[i], want[i], 2e-5)
                        << ggml_type_name(t) << " " << isa_name(isa) << " hd " << hd << " i " << i;
            }
        }
    }
}

TEST(KvAttention, MixedKAndVTypes) {
    ThreadPool pool(2);
    AttnSetup s(64);
    const GgmlType pairs[][2] = {{GgmlType::Q8_0, GgmlType::TURBO3},
                                 {GgmlType::TURBO3, GgmlType::F16},
                                 {GgmlType::TURBO3_TCQ, GgmlType::TURBO2_TCQ},
                                 {GgmlType::TURBO4_64, GgmlType::TURBO3},
                                 {GgmlType::TURBO2, GgmlType::Q4_0}};
    for (const auto& p : pairs) {
        const KvStore k = make_kv(p[0], s.kf, s.n_cells, s.n_head_kv, 64);
        const KvStore v = make_kv(p[1], s.vf, s.n_cells, s.n_head_kv, 64);
        std::vector<float> want(s.q.size());
        ref::attention(s.args(k, v, want.data()));
        for (Isa isa : all_isas()) {
            IsaScope scope(isa);
            std::vector<float> got(s.q.size(), NAN);
            attention(pool, s.args(k, v, got.data()));
            for (size_t i = 0; i < got.size(); i++)
                ASSERT_NEAR(got[i], want[i], 2e-5)
                    << ggml_type_name(p[0]) << "/" << ggml_type_name(p[1]) << " " << isa_name(isa);
        }
    }
}

// The per-ISA head decoders against the scalar ones on the same bytes.
TEST(KvAttention, IsaPrimitivesMatchScalar) {
    for (GgmlType t : kKvTypes) {
        const int n = kv_padded_dim(t, 256);
        const std::vector<float> x = random_floats(n, 21);
        std::vector<uint8_t> row(ggml_row_size(t, n));
        quant_traits(t)->quantize_row(x.data(), row.data(), n);
        const KvOps ref_ops = kv_scalar::ops(t);
        ASSERT_TRUE(ref_ops.supported) << ggml_type_name(t);
        std::vector<float> want(n);
        if (ref_ops.decode) ref_ops.decode(row.data(), want.data(), n);
        else memcpy(want.data(), row.data(), n * sizeof(float));
        for (Isa isa : all_isas()) {
            IsaScope scope(isa);
            const KvOps ops = kv_ops_for(t);
            EXPECT_EQ(ops.rot_group, ref_ops.rot_group);
            if (!ops.decode) continue;
            std::vector<float> got(n, NAN);
            ops.decode(row.data(), got.data(), n);
            for (int i = 0; i < n; i++)  // decoders compute the same products; fma may round once less
                ASSERT_NEAR(got[i], want[i], 1e-6 * (1 + std::fabs(want[i])))
                    << ggml_type_name(t) << " " << isa_name(isa) << " i " << i;
        }
    }
}

// The f32 tile kernels of every ISA against the scalar ones, over head widths with and without tails,
// partial tiles and 1..7 query heads (more than one pass of 4).
TEST(KvAttention, IsaTileKernelsMatchScalar) {
    const AttnMath ref = kv_scalar::attn_math();
    for (int n : {16, 64, 72, 100, 256})
        for (int nt : {1, 7, 16, 19, kAttnTile})
            for (int nh : {1, 3, 4, 7}) {
                const std::vector<float> q = random_floats((size_t)nh * n, 23),
                                         p = random_floats((size_t)nh * kAttnTile, 25, 0, 1);
                std::vector<float> corr = random_floats(nh, 27, 0, 1);  // the online softmax's rescale
                corr[0] = 1.0f;
                const std::vector<float> heads = random_floats((size_t)nt * n, 24);
                std::vector<const uint8_t*> ptr(nt);
                for (int c = 0; c < nt; c++) ptr[c] = (const uint8_t*)(heads.data() + (size_t)c * n);
                std::vector<float> want_s((size_t)nh * kAttnTile, 0), want_acc = random_floats((size_t)nh * n, 26);
                std::vector<float> acc0 = want_acc;
                ref.score(q.data(), nh, n, ptr.data(), nt, want_s.data());
                ref.accum(want_acc.data(), nh, n, corr.data(), p.data(), ptr.data(), nt);
                for (Isa isa : all_isas()) {
                    IsaScope scope(isa);
                    const AttnMath m = attn_math_for();
                    std::vector<float> got_s((size_t)nh * kAttnTile, 0), got_acc = acc0;
                    m.score(q.data(), nh, n, ptr.data(), nt, got_s.data());
                    m.accum(got_acc.data(), nh, n, corr.data(), p.data(), ptr.data(), nt);
                    for (int i = 0; i < nh; i++)
                        for (int c = 0; c < nt; c++)
                            ASSERT_NEAR(got_s[i * kAttnTile + c], want_s[i * kAttnTile + c], 1e-4)
                                << isa_name(isa) << " n " << n << " nt " << nt << " nh " << nh;
                    for (size_t e = 0; e < got_acc.size(); e++)
                        ASSERT_NEAR(got_acc[e], want_acc[e], 1e-5) << isa_name(isa) << " n " << n << " nt " << nt;
                }
            }
}

// The online-softmax step of every ISA against the scalar one: first tiles (running max -inf) and later
// ones whose max rises or not, partial tiles, more heads than one AVX-512 pass (16); and each head's bits
// the same alone as among nh heads (tasks split a GQA group's heads, attention.cpp).
TEST(KvAttention, IsaSoftmaxStepMatchesScalar) {
    const AttnMath ref = kv_scalar::attn_math();
    for (int nh : {1, 3, 7, 17})
        for (int nt : {1, 5, 16, 17, kAttnTile}) {
            const std::vector<float> s0 = random_floats((size_t)nh * kAttnTile, 41, -8, 8);
            std::vector<float> m0 = random_floats(nh, 42, -2, 6), l0 = random_floats(nh, 43, 0.5f, 4);
            for (int i = 0; i < nh; i += 3) m0[i] = -INFINITY, l0[i] = 0;  // a partition's first tile
            std::vector<float> s_ref = s0, m_ref = m0, l_ref = l0, c_ref(nh);
            ref.softmax(s_ref.data(), nh, nt, 0.7f, m_ref.data(), l_ref.data(), c_ref.data());
            for (Isa isa : all_isas()) {
                IsaScope scope(isa);
                const AttnMath mth = attn_math_for();
                std::vector<float> s = s0, m = m0, l = l0, c(nh);
                mth.softmax(s.data(), nh, nt, 0.7f, m.data(), l.data(), c.data());
                for (int i = 0; i < nh; i++) {
                    const std::string at = std::string(isa_name(isa)) + " nh " + std::to_string(nh) + " nt " +
                                           std::to_string(nt) + " head " + std::to_string(i);
                    ASSERT_EQ(m[i], m_ref[i]) << at;  // a max is exact
                    ASSERT_NEAR(c[i], c_ref[i], 3e-7 * c_ref[i]) << at;
                    ASSERT_NEAR(l[i], l_ref[i], 1e-6 * l_ref[i]) << at;
                    for (int k = 0; k < nt; k++)
                        ASSERT_NEAR(s[i * kAttnTile + k], s_ref[i * kAttnTile + k],
                                    3e-7 * s_ref[i * kAttnTile + k] + 1e-38f)
                            << at;
                    std::vector<float> s1(s0.begin() + i * kAttnTile, s0.begin() + (i + 1) * kAttnTile);
                    float m1 = m0[i], l1 = l0[i], c1;
                    mth.softmax(s1.data(), 1, nt, 0.7f, &m1, &l1, &c1);
                    ASSERT_EQ(0, memcmp(s1.data(), s.data() + i * kAttnTile, nt * sizeof(float))) << at;
                    ASSERT_EQ(0, memcmp(&l1, &l[i], sizeof(float))) << at;
                    ASSERT_EQ(0, memcmp(&c1, &c[i], sizeof(float))) << at;
                }
            }
        }
}

// A type's fused tile kernels (reading stored bytes) give exactly the bits of its decoder followed by
// the f32 tile kernels, which the driver uses on pre-decoded cells in multi-row batches (invariant 2).
TEST(KvAttention, FusedTileKernelsEqualDecodeThenF32) {
    int checked = 0;
    for (GgmlType t : kKvTypes) {
        const int n = kv_padded_dim(t, 64 + 8);
        const size_t hb = ggml_row_size(t, n);
        const int nt = 21, nh = 5;
        const std::vector<float> x = random_floats((size_t)nt * n, 31);
        std::vector<uint8_t> rows(hb * nt);
        for (int c = 0; c < nt; c++) quant_traits(t)->quantize_row(x.data() + (size_t)c * n, rows.data() + c * hb, n);
        const std::vector<float> q = random_floats((size_t)nh * n, 32),
                                 p = random_floats((size_t)nh * kAttnTile, 33, 0, 1);
        const std::vector<float> corr = random_floats(nh, 35, 0, 1);
        for (Isa isa : all_isas()) {
            IsaScope scope(isa);
            const KvOps ops = kv_ops_for(t);
            if (!ops.score) continue;
            ASSERT_TRUE(ops.accum && ops.decode) << ggml_type_name(t);
            checked++;
            const AttnMath m = attn_math_for();
            std::vector<float> dec((size_t)nt * n);
            std::vector<const uint8_t*> raw(nt), f32(nt);
            for (int c = 0; c < nt; c++) {
                raw[c] = rows.data() + c * hb;
                ops.decode(raw[c], dec.data() + (size_t)c * n, n);
                f32[c] = (const uint8_t*)(dec.data() + (size_t)c * n);
            }
            std::vector<float> s1((size_t)nh * kAttnTile, 0), s2 = s1, a1 = random_floats((size_t)nh * n, 34), a2 = a1;
            ops.score(q.data(), nh, n, raw.data(), nt, s1.data());
            m.score(q.data(), nh, n, f32.data(), nt, s2.data());
            ops.accum(a1.data(), nh, n, corr.data(), p.data(), raw.data(), nt);
            m.accum(a2.data(), nh, n, corr.data(), p.data(), f32.data(), nt);
            EXPECT_EQ(0, memcmp(s1.data(), s2.data(), s1.size() * sizeof(float)))
                << ggml_type_name(t) << " " << isa_name(isa);
            EXPECT_EQ(0, memcmp(a1.data(), a2.data(), a1.size() * sizeof(float)))
                << ggml_type_name(t) << " " << isa_name(isa);
        }
    }
    // f16, bf16, q8_0 and six scalar turbo types have fused kernels on every SIMD ISA this CPU runs
    EXPECT_EQ(checked, 9 * (int)(all_isas().size() - 1));
}

// DESIGN.md invariant 2 with compressed KV: a row's output is bit-identical alone or in a batch. The
// batch on 1 thread has 4 rows per thread, so its tasks take every kv head of a row (attention.cpp
// kv_per_task), while a row alone is split by kv head.
// Row r of the setup's batch computed on its own.
std::vector<float> row_alone(ThreadPool& pool, const AttnSetup& s, const KvStore& k, const KvStore& v, int r) {
    const size_t row = (size_t)s.n_head * s.head_dim;
    std::vector<float> one(row);
    AttentionArgs a = s.args(k, v, nullptr);
    a.n_rows = 1;
    a.q = s.q.data() + r * row;
    a.out = one.data();
    a.visible = s.vis.data() + r;
    attention(pool, a);
    return one;
}

TEST(KvAttention, RowAloneEqualsRowInBatch) {
    ThreadPool pool1(1), pool2(2);
    AttnSetup s(64);
    for (GgmlType t : {GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_1, GgmlType::TURBO3,
                       GgmlType::TURBO4, GgmlType::TURBO3_64, GgmlType::TURBO2_TCQ}) {
        const KvStore k = make_kv(t, s.kf, s.n_cells, s.n_head_kv, 64);
        const KvStore v = make_kv(t, s.vf, s.n_cells, s.n_head_kv, 64);
        for (Isa isa : all_isas()) {
            IsaScope scope(isa);
            for (ThreadPool* batch_pool : {&pool1, &pool2}) {
                std::vector<float> batch(s.q.size());
                attention(*batch_pool, s.args(k, v, batch.data()));
                const size_t row = (size_t)s.n_head * 64;
                for (int r = 0; r < s.n_rows; r++) {
                    const std::vector<float> one = row_alone(pool1, s, k, v, r);
                    ASSERT_EQ(0, memcmp(one.data(), batch.data() + r * row, row * sizeof(float)))
                        << ggml_type_name(t) << " " << isa_name(isa) << " row " << r << " batch threads "
                        << batch_pool->size();
                }
            }
        }
    }
}

// Lists longer than one split-K partition (attention.cpp kPart): the partials merged in order match
// the double reference, and a row's bits are the same alone or in a batch whatever the thread count.
TEST(KvAttention, SplitRowsMatchReferenceAndAreBatchInvariant) {
    ThreadPool pool1(1), pool2(2), pool3(3);
    AttnSetup s(64, 700);  // rows see 697..700 cells (3 partitions), row 2 a 640-cell window
    const size_t row = (size_t)s.n_head * 64;
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::TURBO3, GgmlType::TURBO3_TCQ}) {
        const KvStore k = make_kv(t, s.kf, s.n_cells, s.n_head_kv, 64);
        const KvStore v = make_kv(t, s.vf, s.n_cells, s.n_head_kv, 64);
        std::vector<float> want(s.q.size());
        ref::attention(s.args(k, v, want.data()));
        for (Isa isa : all_isas()) {
            IsaScope scope(isa);
            std::vector<float> batch(s.q.size(), NAN);
            attention(pool2, s.args(k, v, batch.data()));
            for (size_t i = 0; i < want.size(); i++)
                ASSERT_NEAR(batch[i], want[i], 2e-5) << ggml_type_name(t) << " " << isa_name(isa) << " i " << i;
            for (int r = 0; r < s.n_rows; r++)
                for (ThreadPool* pool : {&pool1, &pool3}) {
                    const std::vector<float> one = row_alone(*pool, s, k, v, r);
                    ASSERT_EQ(0, memcmp(one.data(), batch.data() + r * row, row * sizeof(float)))
                        << ggml_type_name(t) << " " << isa_name(isa) << " row " << r << " threads " << pool->size();
                }
        }
    }
}

}  // namespace
}  // namespace bee
