// tests/unit/kernels/test_matmul: matmul for every weight type on every ISA against ref::matmul and a
// double-precision dot of the dequantized operands; batch invariance (bit-identical rows) for 1 and 3 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "base/fp16.h"
#include "kernels/kernels.h"
#include "kernels_test_util.h"
#include "quant/blocks.h"

namespace bee {
namespace {

using test::all_isas;
using test::IsaScope;
using test::random_floats;

struct TypeCase {
    GgmlType type;
    double ref_tol;    // |ref - exact| <= ref_tol * Σ|w·a| (exact: double dot of the dequantized operands)
    double fast_tol;   // |fast - ref| <= fast_tol * Σ|w·a| (float reassociation inside the SIMD dot)
    double quant_rel;  // rms(ref - x·w) / rms(x·w) of the unquantized product: quantization sanity
};

// note: measured worst cases on 37x512 (x5 tokens): ref vs exact <= 2.4e-8, fast vs ref <= 4.7e-8; the
// limits leave ~10x margin. quant_rel is a sanity check of the whole pipeline (measured x1.5-2 below).
const TypeCase kTypes[] = {
    {GgmlType::F32, 1e-7, 5e-7, 1e-6},  {GgmlType::F16, 1e-7, 5e-7, 5e-4},  {GgmlType::BF16, 1e-7, 5e-7, 4e-3},
    {GgmlType::Q4_0, 3e-7, 5e-7, 0.1},  {GgmlType::Q4_1, 3e-7, 5e-7, 0.1},  {GgmlType::Q5_0, 3e-7, 5e-7, 0.05},
    {GgmlType::Q5_1, 3e-7, 5e-7, 0.05}, {GgmlType::Q8_0, 3e-7, 5e-7, 0.01}, {GgmlType::Q2_K, 3e-7, 5e-7, 0.4},
    {GgmlType::Q3_K, 3e-7, 5e-7, 0.2},  {GgmlType::Q4_K, 3e-7, 5e-7, 0.08}, {GgmlType::Q5_K, 3e-7, 5e-7, 0.05},
    {GgmlType::Q6_K, 3e-7, 5e-7, 0.02},
};

struct Problem {
    int64_t n_out, n_in, n_tok;
    std::vector<float> w_f, x;  // (n_out, n_in), (n_tok, n_in)
    std::vector<uint8_t> w;     // (n_out, row bytes) in the weight type
    std::vector<float> w_deq;   // (n_out, n_in) dequantized weights
    std::vector<float> a_deq;   // (n_tok, n_in) activations as vec_dot sees them
    std::vector<double> a_fix;  // (n_tok, n_in / 32) Q8_1 only: s - d·Σq, the fp16 rounding of s
    std::vector<double> w_min;  // (n_out, n_in / 32) Q4_1/Q5_1 only: block min m
};

// Q4_1 and Q5_1 dot with Q8_1 as m·s + d_w·d_a·Σ q_w·q_a, where s = fp16(d_a·Σq_a): the exact value of
// the format is Σ w·a over the dequantized operands plus Σ_blocks m·(s - d_a·Σq_a).
void add_q8_1_terms(Problem& p, GgmlType t) {
    const size_t w_row = ggml_row_size(t, p.n_in);
    const size_t w_blk = ggml_type_info(t).type_size;
    const int64_t nb = p.n_in / QK8_1;
    p.w_min.resize(p.n_out * nb);
    for (int64_t o = 0; o < p.n_out; o++)
        for (int64_t b = 0; b < nb; b++) {
            fp16_t m;
            memcpy(&m, p.w.data() + o * w_row + b * w_blk + 2, 2);  // Q4_1 and Q5_1: d, then m
            p.w_min[o * nb + b] = fp16_to_fp32(m);
        }
    std::vector<BlockQ8_1> row(nb);
    p.a_fix.resize(p.n_tok * nb);
    for (int64_t r = 0; r < p.n_tok; r++) {
        quant_traits(GgmlType::Q8_1)->quantize_row(p.x.data() + r * p.n_in, row.data(), p.n_in);
        for (int64_t b = 0; b < nb; b++) {
            int sum = 0;
            for (int i = 0; i < QK8_1; i++) sum += row[b].qs[i];
            p.a_fix[r * nb + b] = fp16_to_fp32(row[b].s) - (double)fp16_to_fp32(row[b].d) * sum;
        }
    }
}

// Σ w·a of row o and token t in double, exact for the format; *mag = Σ|w·a|.
double exact_dot(const Problem& p, int64_t o, int64_t t, double* mag) {
    double dot = 0, m = 0;
    for (int64_t i = 0; i < p.n_in; i++) {
        const double v = (double)p.w_deq[o * p.n_in + i] * p.a_deq[t * p.n_in + i];
        dot += v;
        m += std::fabs(v);
    }
    const int64_t nb = p.n_in / QK8_1;
    if (!p.a_fix.empty())
        for (int64_t b = 0; b < nb; b++) dot += p.w_min[o * nb + b] * p.a_fix[t * nb + b];
    *mag = m;
    return dot;
}

Problem make_problem(GgmlType t, int64_t n_out, int64_t n_in, int64_t n_tok, uint32_t seed) {
    Problem p;
    p.n_out = n_out;
    p.n_in = n_in;
    p.n_tok = n_tok;
    p.w_f = random_floats(n_out * n_in, seed);
    p.x = random_floats(n_tok * n_in, seed + 1, -2, 2);
    const QuantTraits* tr = quant_traits(t);
    p.w.resize(ggml_row_size(t, n_in) * n_out);
    quantize_matrix(t, p.w_f.data(), p.w.data(), n_out, n_in);
    p.w_deq.resize(n_out * n_in);
    for (int64_t o = 0; o < n_out; o++)
        tr->dequantize_row(p.w.data() + o * ggml_row_size(t, n_in), p.w_deq.data() + o * n_in, n_in);
    p.a_deq = p.x;
    if (tr->vec_dot_type != GgmlType::F32) {
        const QuantTraits* at = quant_traits(tr->vec_dot_type);
        std::vector<uint8_t> row(ggml_row_size(tr->vec_dot_type, n_in));
        for (int64_t r = 0; r < n_tok; r++) {
            at->quantize_row(p.x.data() + r * n_in, row.data(), n_in);
            at->dequantize_row(row.data(), p.a_deq.data() + r * n_in, n_in);
        }
    }
    if (tr->vec_dot_type == GgmlType::Q8_1) add_q8_1_terms(p, t);
    return p;
}

TEST(Matmul, EveryTypeEveryIsaMatchesReference) {
    ThreadPool pool(3);
    for (const TypeCase& tc : kTypes) {
        const char* name = ggml_type_name(tc.type);
        Problem p = make_problem(tc.type, 37, 512, 5, 100 + (uint32_t)tc.type);
        std::vector<float> y_ref(p.n_tok * p.n_out);
        ref::matmul(tc.type, p.w.data(), p.n_out, p.n_in, p.x.data(), p.n_tok, y_ref.data());
        double err2 = 0, norm2 = 0, worst_ref = 0, worst_fast = 0;
        for (int64_t t = 0; t < p.n_tok; t++) {
            for (int64_t o = 0; o < p.n_out; o++) {
                double mag, unq = 0;
                const double exact = exact_dot(p, o, t, &mag);
                for (int64_t i = 0; i < p.n_in; i++) unq += (double)p.w_f[o * p.n_in + i] * p.x[t * p.n_in + i];
                ASSERT_NEAR(y_ref[t * p.n_out + o], exact, tc.ref_tol * mag) << name << " t=" << t << " o=" << o;
                worst_ref = std::max(worst_ref, std::fabs(y_ref[t * p.n_out + o] - exact) / mag);
                err2 += (y_ref[t * p.n_out + o] - unq) * (y_ref[t * p.n_out + o] - unq);
                norm2 += unq * unq;
            }
        }
        EXPECT_LT(std::sqrt(err2 / norm2), tc.quant_rel) << name;
        for (Isa isa : all_isas()) {
            IsaScope scope(isa);
            std::vector<float> y(p.n_tok * p.n_out, NAN);
            matmul(pool, tc.type, p.w.data(), p.n_out, p.n_in, p.x.data(), p.n_tok, y.data());
            if (isa == Isa::scalar) {  // same functions as the reference: bit-identical
                ASSERT_EQ(0, memcmp(y.data(), y_ref.data(), y.size() * 4)) << name;
                continue;
            }
            for (int64_t t = 0; t < p.n_tok; t++) {
                for (int64_t o = 0; o < p.n_out; o++) {
                    double mag;
                    exact_dot(p, o, t, &mag);
                    ASSERT_NEAR(y[t * p.n_out + o], y_ref[t * p.n_out + o], tc.fast_tol * mag)
                        << name << " " << isa_name(isa) << " t=" << t << " o=" << o;
                    worst_fast = std::max(worst_fast, std::fabs(y[t * p.n_out + o] - y_ref[t * p.n_out + o]) / mag);
                }
            }
        }
        printf("[ matmul   ] %-5s max/Σ|w·a|: ref vs exact %.2e, fast vs ref %.2e; rel. quant. error %.2e\n", name,
               worst_ref, worst_fast, std::sqrt(err2 / norm2));
    }
}

// A row's output alone == the same row inside any batch of 1..17 rows, at any position, for 1 and 3
// threads: bit-identical (DESIGN.md invariant 2).
TEST(Matmul, BatchInvariance) {
    const int64_t n_out = 100, n_in = 512, max_tok = 17;
    ThreadPool pool1(1), pool3(3);
    for (const TypeCase& tc : kTypes) {
        const char* name = ggml_type_name(tc.type);
        Problem p = make_problem(tc.type, n_out, n_in, max_tok, 200 + (uint32_t)tc.type);
        for (Isa isa : all_isas()) {
            IsaScope scope(isa);
            std::vector<float> alone(max_tok * n_out);  // (max_tok, n_out)
            for (int64_t t = 0; t < max_tok; t++)
                matmul(pool1, tc.type, p.w.data(), n_out, n_in, p.x.data() + t * n_in, 1, alone.data() + t * n_out);
            for (int64_t b = 1; b <= max_tok; b++) {
                for (ThreadPool* pool : {&pool1, &pool3}) {
                    const int64_t first = (b * 7) % (max_tok - b + 1);  // batch rows [first, first + b)
                    std::vector<float> y(b * n_out);
                    matmul(*pool, tc.type, p.w.data(), n_out, n_in, p.x.data() + first * n_in, b, y.data());
                    ASSERT_EQ(0, memcmp(y.data(), alone.data() + first * n_out, y.size() * 4))
                        << name << " " << isa_name(isa) << " batch=" << b << " threads=" << pool->size();
                }
            }
        }
    }
}

TEST(Matmul, DispatchFallsBackToReference) {
    IsaScope scope(Isa::scalar);
    for (const TypeCase& tc : kTypes) {
        EXPECT_EQ(vec_dot_for(tc.type), quant_traits(tc.type)->vec_dot);
        const GgmlType at = quant_traits(tc.type)->vec_dot_type;
        EXPECT_EQ(quantize_activation_for(at), quant_traits(at)->quantize_row);
    }
    EXPECT_EQ(vec_dot_for(GgmlType::IQ2_XXS), nullptr);
}

}  // namespace
}  // namespace bee
