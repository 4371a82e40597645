// app/synth_util: the tensor helpers and tokenizer copy of `bee gguf synth` (app/synth.h).
#include <cstdint>
#include <string>
#include <vector>

#include "app/synth.h"
#include "base/error.h"
#include "base/fp16.h"
#include "gguf/gguf.h"

namespace bee {

// Adds a (ne1, ne0) matrix of uniform values in [-scale, scale] as F16 or F32.
void synth_matrix(GgufWriter& w, const std::string& name, int64_t ne0, int64_t ne1, float scale, bool f16,
                  SynthRng& rng) {
    const size_t n = (size_t)ne0 * (size_t)ne1;
    if (f16) {
        std::vector<fp16_t> v(n);
        for (fp16_t& x : v) x = fp32_to_fp16(rng.uniform(scale));
        w.add_tensor(name, GgmlType::F16, {ne0, ne1}, v.data(), n * sizeof(fp16_t));
    } else {
        std::vector<float> v(n);
        for (float& x : v) x = rng.uniform(scale);
        w.add_tensor(name, GgmlType::F32, {ne0, ne1}, v.data(), n * sizeof(float));
    }
}

// A 1-D F32 vector: `base` plus uniform noise of `scale` (norm weights around 1, biases around 0).
void synth_vector(GgufWriter& w, const std::string& name, int64_t n, float base, float scale, SynthRng& rng) {
    std::vector<float> v((size_t)n);
    for (float& x : v) x = base + rng.uniform(scale);
    w.add_tensor(name, GgmlType::F32, {n}, v.data(), v.size() * sizeof(float));
}

// Copies tokenizer.* from a BPE vocab file and pads tokens / token types (and scores if present) to n_vocab.
void synth_copy_tokenizer(const std::string& path, int n_vocab, GgufWriter& w) {
    const GgufFile v = GgufFile::open(path);
    if (v.get_str("tokenizer.ggml.model", "") != "gpt2")
        fail("%s: tokenizer.ggml.model is '%s'; synth needs a BPE ('gpt2') vocab file", path.c_str(),
             v.get_str("tokenizer.ggml.model", "").c_str());
    std::vector<std::string> tokens = v.get_str_array("tokenizer.ggml.tokens");
    if ((int64_t)tokens.size() > n_vocab)
        fail("%s: %zu tokens, more than the shape's vocabulary of %d", path.c_str(), tokens.size(), n_vocab);
    const size_t n_real = tokens.size();
    for (const auto& [key, value] : v.metadata())
        if (key.rfind("tokenizer.", 0) == 0) w.set(key, value);
    for (size_t i = n_real; i < (size_t)n_vocab; i++) tokens.push_back(strfmt("<|synth_pad_%zu|>", i));
    w.set_str_array("tokenizer.ggml.tokens", tokens);
    std::vector<int32_t> types;
    if (v.has("tokenizer.ggml.token_type"))
        for (int64_t t : v.get_int_array("tokenizer.ggml.token_type")) types.push_back((int32_t)t);
    types.resize(n_real, 1);           // normal
    types.resize((size_t)n_vocab, 5);  // unused
    w.set_i32_array("tokenizer.ggml.token_type", types);
    if (v.has("tokenizer.ggml.scores")) {
        std::vector<float> scores = v.get_float_array("tokenizer.ggml.scores");
        scores.resize((size_t)n_vocab, 0.0f);
        w.set_f32_array("tokenizer.ggml.scores", scores);
    }
}

}  // namespace bee
