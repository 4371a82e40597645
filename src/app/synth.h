// app/synth: what `bee gguf synth` writers share: options, a seeded stream, tensor helpers, the tokenizer
// copy. One writer per architecture family (cmd_synth.cpp: llama-style; synth_qwen35.cpp: qwen35).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"

namespace bee {

struct SynthOptions {
    std::vector<std::string> pos;  // OUT.gguf
    std::string shape = "qwen2.5-0.5b", vocab, type = "f16";
    int32_t seed = 42, n_layer = 0;
};

// splitmix64: a fast seeded stream (the weights only need to be reproducible, not good random numbers).
struct SynthRng {
    uint64_t s;
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    float uniform(float scale) { return scale * (float)((double)(next() >> 11) * 0x1.0p-53 * 2.0 - 1.0); }
};

// Adds a (ne1, ne0) matrix of uniform values in [-scale, scale] as F16 or F32.
void synth_matrix(GgufWriter& w, const std::string& name, int64_t ne0, int64_t ne1, float scale, bool f16,
                  SynthRng& rng);
// A 1-D F32 vector: `base` plus uniform noise of `scale` (norm weights around 1, biases around 0).
void synth_vector(GgufWriter& w, const std::string& name, int64_t n, float base, float scale, SynthRng& rng);
// Copies tokenizer.* from a BPE vocab file and pads tokens / token types (and scores if present) to n_vocab.
void synth_copy_tokenizer(const std::string& path, int n_vocab, GgufWriter& w);

// qwen35 shapes (synth_qwen35.cpp): comma-separated names, and the writer; false if `o.shape` is not one.
std::string synth_qwen35_shapes();
bool synth_qwen35(const SynthOptions& o);

}  // namespace bee
