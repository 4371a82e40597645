// tests/unit/gguf/gguf_test_util: raw GGUF byte builder (broken files), writer sample files, error checks.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"

namespace bee::test {

// Appends GGUF fields by hand; every put returns the byte offset it wrote at, so a test can name
// the exact offset the reader must report.
struct RawGguf {
    std::vector<uint8_t> b;

    template <class T> size_t put(T v) {
        size_t at = b.size();
        const uint8_t* p = (const uint8_t*)&v;
        b.insert(b.end(), p, p + sizeof(T));
        return at;
    }
    size_t str(const std::string& s) {
        size_t at = put<uint64_t>(s.size());
        b.insert(b.end(), s.begin(), s.end());
        return at;
    }
    void header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
        b.insert(b.end(), {'G', 'G', 'U', 'F'});
        put<uint32_t>(version);
        put<uint64_t>(n_tensors);
        put<uint64_t>(n_kv);
    }
    // Key and type tag; returns the key's offset. The caller puts the value.
    size_t key(const std::string& k, GgufValueType t) {
        size_t at = str(k);
        put<uint32_t>((uint32_t)t);
        return at;
    }
    struct TensorAt {
        size_t name, n_dims, ne[4], type, offset;
    };
    TensorAt tensor(const std::string& name, const std::vector<int64_t>& ne, uint32_t type, uint64_t offset) {
        TensorAt at{};
        at.name = str(name);
        at.n_dims = put<uint32_t>((uint32_t)ne.size());
        for (size_t d = 0; d < ne.size(); d++) {
            size_t o = put<int64_t>(ne[d]);
            if (d < 4) at.ne[d] = o;
        }
        at.type = put<uint32_t>(type);
        at.offset = put<uint64_t>(offset);
        return at;
    }
    void pad(size_t a) { b.resize((b.size() + a - 1) / a * a, 0); }
    void zeros(size_t n) { b.resize(b.size() + n, 0); }
};

// Parses a copy of `img` in a heap buffer of exactly its size (so a sanitizer sees any over-read).
// Returns the Error's message, or "" if the image parsed.
inline std::string try_parse(const std::vector<uint8_t>& img) {
    std::unique_ptr<uint8_t[]> buf(new uint8_t[img.size()]);
    if (!img.empty()) std::memcpy(buf.get(), img.data(), img.size());
    try {
        GgufFile::parse(buf.get(), img.size(), "t.gguf");
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// The message of the Error that parsing `img` throws, or "" (and a test failure) if none is thrown.
inline std::string parse_error(const std::vector<uint8_t>& img) {
    std::string msg = try_parse(img);
    if (msg.empty()) ADD_FAILURE() << "expected an Error, parse succeeded";
    return msg;
}

// Parsing must throw "t.gguf: <field> at byte <at>: ..." whose problem part contains `problem`.
inline void expect_gguf_error(const std::vector<uint8_t>& img, const std::string& field, size_t at,
                              const std::string& problem) {
    std::string msg = parse_error(img);
    std::string head = "t.gguf: " + field + " at byte " + std::to_string(at) + ": ";
    EXPECT_EQ(msg.rfind(head, 0), 0u) << "message: " << msg << "\nexpected start: " << head;
    EXPECT_NE(msg.find(problem), std::string::npos) << "message: " << msg << "\nexpected to contain: " << problem;
}

// Deterministic bytes for tensor data.
inline std::vector<uint8_t> pattern_bytes(size_t n, uint32_t seed) {
    std::vector<uint8_t> v(n);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        v[i] = (uint8_t)(x >> 24);
    }
    return v;
}

inline void add_pattern_tensor(GgufWriter& w, const std::string& name, GgmlType type, const std::vector<int64_t>& ne,
                               uint32_t seed) {
    int64_t rows = 1;
    for (size_t d = 1; d < ne.size(); d++) rows *= ne[d];
    std::vector<uint8_t> data = pattern_bytes(ggml_row_size(type, ne[0]) * (size_t)rows, seed);
    w.add_tensor(name, type, ne, data.data(), data.size());
}

// A small file with a few keys of several types and three tensors; the last tensor is 32 bytes
// so the file ends exactly at the end of its data (no trailing padding): every proper prefix is invalid.
inline std::vector<uint8_t> small_sample_file() {
    GgufWriter w;
    w.set_str("general.architecture", "llama");
    w.set_u32("llama.block_count", 2);
    w.set_f32("llama.rope.freq_base", 10000.0f);
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    w.set_str_array("tokenizer.ggml.tokens", {"<s>", "a", "bc"});
    w.set_i32_array("tokenizer.ggml.token_type", {3, 1, 1});
    w.set("test.nested", GgufValue::make_array(GgufValueType::ARRAY,
                                               {GgufValue::make_array(GgufValueType::INT8,
                                                                      {GgufValue::make_int(GgufValueType::INT8, -1)}),
                                                GgufValue::make_array(GgufValueType::STRING, {})}));
    add_pattern_tensor(w, "token_embd.weight", GgmlType::Q4_0, {32, 3}, 1);
    add_pattern_tensor(w, "blk.0.attn_norm.weight", GgmlType::F16, {8}, 2);
    add_pattern_tensor(w, "output_norm.weight", GgmlType::F32, {8}, 3);
    return w.serialize();
}

}  // namespace bee::test
