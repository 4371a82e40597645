// tests/unit/gguf/test_gguf_models: opens the real models from `make models` and checks known keys and tensors.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "gguf_test_util.h"

namespace bee {
namespace {

std::string model_path(const char* file) { return std::string(BEE_SOURCE_DIR "/models/") + file; }

bool file_exists(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Checks that hold for any model: tensors inside the file, aligned, and the token table present.
void check_common(const GgufFile& f) {
    EXPECT_GT(f.tensors().size(), 0u);
    EXPECT_NE(f.find_tensor("token_embd.weight"), nullptr);
    EXPECT_EQ(f.data_offset() % f.alignment(), 0u);
    uint64_t total = 0;
    for (const GgufTensor& t : f.tensors()) {
        EXPECT_EQ(t.offset % f.alignment(), 0u) << t.name;
        EXPECT_LE(f.data_offset() + t.offset + t.nbytes, f.file_size()) << t.name;
        EXPECT_EQ((uintptr_t)t.data % f.alignment(), 0u) << t.name;
        total += t.nbytes;
    }
    EXPECT_GT(total, f.file_size() / 2);  // the weights are most of the file
    EXPECT_GT(f.get_str_array("tokenizer.ggml.tokens").size(), 1000u);
}

TEST(GgufModels, SmolLM2Q4_1) {
    std::string path = model_path("SmolLM2-135M-Instruct.Q4_1.gguf");
    ASSERT_TRUE(file_exists(path)) << path << " is missing: run `make models`";
    GgufFile f = GgufFile::open(path);
    EXPECT_EQ(f.get_str("general.architecture"), "llama");
    EXPECT_EQ(f.get_int("llama.block_count"), 30);
    EXPECT_EQ(f.get_int("llama.embedding_length"), 576);
    EXPECT_EQ(f.get_str_array("tokenizer.ggml.tokens").size(), 49152u);
    const GgufTensor* emb = f.find_tensor("token_embd.weight");
    ASSERT_NE(emb, nullptr);
    EXPECT_EQ(emb->n_dims, 2);
    EXPECT_EQ(emb->ne[0], 576);
    EXPECT_EQ(emb->ne[1], 49152);
    EXPECT_NE(f.find_tensor("blk.29.ffn_down.weight"), nullptr);
    check_common(f);
}

TEST(GgufModels, Gemma3Q4_K_M) {
    std::string path = model_path("gemma-3-270m-q4_k_m.gguf");
    ASSERT_TRUE(file_exists(path)) << path << " is missing: run `make models`";
    GgufFile f = GgufFile::open(path);
    EXPECT_EQ(f.get_str("general.architecture"), "gemma3");
    EXPECT_EQ(f.get_int("gemma3.block_count"), 18);
    EXPECT_EQ(f.get_int("gemma3.embedding_length"), 640);
    EXPECT_EQ(f.get_str_array("tokenizer.ggml.tokens").size(), 262144u);
    EXPECT_EQ(f.get_float_array("tokenizer.ggml.scores").size(), 262144u);
    const GgufTensor* emb = f.find_tensor("token_embd.weight");
    ASSERT_NE(emb, nullptr);
    EXPECT_EQ(emb->ne[0], 640);
    EXPECT_EQ(emb->ne[1], 262144);
    bool has_q4_k = false;
    for (const GgufTensor& t : f.tensors()) has_q4_k |= t.type == GgmlType::Q4_K;
    EXPECT_TRUE(has_q4_k);
    check_common(f);
}

}  // namespace
}  // namespace bee
