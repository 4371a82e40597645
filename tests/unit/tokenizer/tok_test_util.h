// tests/unit/tokenizer/tok_test_util: loading vocab files and real models, reading the llama.cpp
// vocab test cases (.inp / .out), printing id lists.
#pragma once
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace bee::test {

inline std::string vocab_dir() { return BEE_SHARED_DIR "/data/vocab"; }

inline bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
    GgufFile f = GgufFile::open(path);
    return Tokenizer::from_gguf(f);
}

// A real model from `make models`; a missing file fails the test (never skips).
inline std::unique_ptr<Tokenizer> load_model_tokenizer(const std::string& name) {
    const std::string path = std::string(BEE_SOURCE_DIR "/models/") + name;
    if (!file_exists(path)) {
        ADD_FAILURE() << path << " is missing: run `make models` first";
        return nullptr;
    }
    return load_tokenizer(path);
}

// .inp: test strings separated by "\n__ggml_vocab_test__\n" (the file ends with a separator).
inline std::vector<std::string> read_inp(const std::string& path) {
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::string text = read_file(path);
    std::vector<std::string> out;
    size_t pos;
    while ((pos = text.find(sep)) != std::string::npos) {
        out.push_back(text.substr(0, pos));
        text.erase(0, pos + sep.size());
    }
    return out;
}

// .out: one line of space-separated ids per test string.
inline std::vector<std::vector<int32_t>> read_out(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::vector<int32_t>> out;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ss(line);
        std::vector<int32_t> ids;
        int32_t id;
        while (ss >> id) ids.push_back(id);
        out.push_back(ids);
    }
    return out;
}

inline std::string ids_str(const std::vector<int32_t>& ids) {
    std::string s;
    for (int32_t id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
    return s;
}

}  // namespace bee::test
