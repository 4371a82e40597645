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
    const std::vector<std::vector<GgmlType>> groups = {
        {GgmlType::Q4_0, GgmlType::Q4_0, GgmlType::Q4_0},  // q/k/v of one type: shared
        {GgmlType::Q4_K, GgmlType::Q6_K},                  // gate/up of a K-quant mix
        {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::F16},   // different activation formats
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

}  // namespace
}  // namespace bee
