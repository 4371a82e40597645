// tests/unit/kernels/test_matmul_shared: matmul_shared_input (kernels.h) gives the same bits as one matmul()
// per weight, on every ISA, for weights whose tiles share prepared activations (converted once), weights
// whose tiles do not (each converts its own) and repacked layouts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/repack.h"
#include "kernels_test_util.h"

namespace bee {
namespace {

using test::all_isas;
using test::IsaScope;
using test::random_floats;

std::vector<uint8_t> quantized(GgmlType t, int64_t n_out, int64_t n_in, uint32_t seed) {
    const std::vector<float> f = random_floats((size_t)(n_out * n_in), seed);
    std::vector<uint8_t> w(ggml_row_size(t, n_in) * n_out);
    quantize_matrix(t, f.data(), w.data(), n_out, n_in);
    return w;
}

TEST(MatmulShared, EqualsSeparateMatmulsBitForBit) {
    ThreadPool pool(2);
    const int64_t n_in = 512, n_tok = 5;
    const int64_t n_outs[3] = {40, 16, 23};
    const std::vector<float> x = random_floats((size_t)(n_tok * n_in), 3, -2, 2);
    const std::vector<std::vector<GgmlType>> groups = {{GgmlType::Q4_0, GgmlType::Q4_0,
                                                        GgmlType::Q4_0},                  // q/k/v of one type: shared
                                                       {GgmlType::Q4_K, GgmlType::Q6_K},  // gate/up of a K-quant mix
                                                       {GgmlType::Q4_0, GgmlType::Q8_0,
                                                        GgmlType::F16},  // different activation formats
                                                       {GgmlType::F16, GgmlType::BF16}};
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        for (const std::vector<GgmlType>& types : groups)
            for (bool repack : {false, true}) {
                std::vector<std::vector<uint8_t>> w;
                std::vector<RepackedWeight> packed(types.size());
                std::vector<std::vector<float>> y(types.size()), y_ref(types.size());
                std::vector<MatmulOut> outs;
                for (size_t i = 0; i < types.size(); i++) {
                    w.push_back(quantized(types[i], n_outs[i], n_in, 10 + (uint32_t)i));
                    y[i].assign((size_t)(n_tok * n_outs[i]), NAN);
                    y_ref[i].assign(y[i].size(), NAN);
                    MatmulOut o{types[i], w[i].data(), n_outs[i], WeightLayout::gguf, y[i].data()};
                    if (repack) packed[i] = repack_weight(types[i], w[i].data(), n_outs[i], n_in);
                    if (packed[i].data) o.w = packed[i].data.get(), o.layout = packed[i].layout;
                    outs.push_back(o);
                    matmul(pool, types[i], o.w, n_outs[i], n_in, x.data(), n_tok, y_ref[i].data(), o.layout);
                }
                matmul_shared_input(pool, outs.data(), (int)outs.size(), n_in, x.data(), n_tok);
                for (size_t i = 0; i < types.size(); i++)
                    ASSERT_EQ(0, memcmp(y[i].data(), y_ref[i].data(), y[i].size() * sizeof(float)))
                        << isa_name(isa) << " " << ggml_type_name(types[i]) << " output " << i << " repack " << repack;
            }
    }
}

// matmul_gated forms act(gate) ⊙ up row by row while quantizing: the same bits as silu_mul / gelu_tanh_mul
// over every row, then matmul(), and the same gated rows left in `gate` (tile, vec_dot and f32 paths).
TEST(MatmulGated, EqualsActivationThenMatmul) {
    ThreadPool pool(2);
    const int64_t n_in = 256, n_out = 40;
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        for (GgmlType t : {GgmlType::Q4_1, GgmlType::Q4_K, GgmlType::F16, GgmlType::F32})
            for (bool repack : {false, true})
                for (int64_t n_tok : {1, 5, 9})
                    for (GatedAct act : {GatedAct::silu, GatedAct::gelu_tanh}) {
                        const std::vector<uint8_t> w = quantized(t, n_out, n_in, 21);
                        RepackedWeight packed;
                        if (repack) packed = repack_weight(t, w.data(), n_out, n_in);
                        const void* wp = packed.data ? (const void*)packed.data.get() : (const void*)w.data();
                        const WeightLayout layout = packed.data ? packed.layout : WeightLayout::gguf;
                        const std::vector<float> up = random_floats((size_t)(n_tok * n_in), 4, -2, 2);
                        std::vector<float> gate = random_floats((size_t)(n_tok * n_in), 5, -6, 6), want_gate = gate;
                        std::vector<float> y((size_t)(n_tok * n_out), NAN), want(y.size(), NAN);
                        if (act == GatedAct::silu) silu_mul(want_gate.data(), up.data(), n_tok * n_in);
                        else gelu_tanh_mul(want_gate.data(), up.data(), n_tok * n_in);
                        matmul(pool, t, wp, n_out, n_in, want_gate.data(), n_tok, want.data(), layout);
                        matmul_gated(pool, t, wp, n_out, n_in, gate.data(), up.data(), act, n_tok, y.data(), layout);
                        ASSERT_EQ(0, memcmp(y.data(), want.data(), y.size() * sizeof(float)))
                            << isa_name(isa) << " " << ggml_type_name(t) << " n_tok " << n_tok << " repack " << repack;
                        ASSERT_EQ(0, memcmp(gate.data(), want_gate.data(), gate.size() * sizeof(float)));
                    }
    }
}

}  // namespace
}  // namespace bee
