// tests/unit/model/test_repacked_model: a model whose weights were repacked at load (kernels/repack.h;
// AVX-512 or AVX2) computes exactly what the same model read in the GGUF
// layout computes — on the path
// that reads the repacked tiles and on every other ISA, which unpacks rows back. The tiny models of the
// other tests are cached from a scalar load and so never repacked; here each model is loaded twice.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine_test_util.h"
#include "kernels/repack.h"
#include "tiny_model.h"

namespace bee::test {
namespace {

class RepackedModel : public ::testing::TestWithParam<GgmlType> {};

TEST_P(RepackedModel, SameLogitsAsTheGgufLayoutOnEveryIsa) {
    TinyConfig cfg = tiny_config("llama_tied");  // tied head: the output matrix is repacked apart from token_embd
    cfg.wtype = GetParam();
    const bool k_quant = ggml_type_info(cfg.wtype).block_size == 256;
    const Isa pack_isa = cpu_isa_max() >= Isa::avx512 ? Isa::avx512 : Isa::avx2;
    if (cpu_isa_max() < Isa::avx2) GTEST_SKIP() << "no tiles on this CPU: nothing is repacked";
    cfg.n_ff = 96;  // 3 blocks of 32 per ffn_down row: an odd block count leaves a half-empty pair
    if (k_quant) {  // K-quants: every input length a whole super-block
        cfg.n_embd = 256;
        cfg.head_dim = 64;  // 4 heads: attn_output's input is 256 too
        cfg.n_ff = 768;     // 3 super-blocks per ffn_down row
    }
    const std::string path = temp_path("repacked");
    write_tiny_model(cfg, path);

    std::unique_ptr<Model> plain, packed;
    {
        IsaScope scope(Isa::scalar);
        plain = Model::load(path);
    }
    {
        IsaScope scope(pack_isa);
        packed = Model::load(path);
    }
    ASSERT_TRUE(plain->weights().repacked.empty());
    ASSERT_FALSE(packed->weights().repacked.empty()) << "nothing was repacked for " << ggml_type_name(cfg.wtype);
    EXPECT_EQ(packed->weights().layers[0].ffn_down.layout, WeightLayout::rows16);
    EXPECT_EQ(packed->weights().output.layout, WeightLayout::rows16);

    const std::vector<int32_t> toks = tiny_tokens(12, cfg.n_vocab, 7);
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        SCOPED_TRACE(isa_name(isa));
        Engine a(*plain, engine_params(2));
        Engine b(*packed, engine_params(2));
        const std::vector<float> ref = decode_chunks(a, toks, 0, 0, 5);
        EXPECT_TRUE(same_bits(decode_chunks(b, toks, 0, 0, 5), ref));
        Engine one(*packed, engine_params(1));
        EXPECT_TRUE(same_bits(decode_chunks(one, toks, 0, 0, 1), ref)) << "token by token differs from chunks";
    }
}

INSTANTIATE_TEST_SUITE_P(Types, RepackedModel,
                         ::testing::Values(GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q8_0,
                                           GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                                           GgmlType::Q6_K),
                         [](const auto& info) { return std::string(ggml_type_name(info.param)); });

}  // namespace
}  // namespace bee::test
