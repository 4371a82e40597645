// tests/unit/model/qwen35_test_util: the tiny qwen35 model of the qwen35 tests (`bee gguf synth --shape
// qwen35-tiny --type f32 --seed 42`, written into the build tree by ctest's qwen35_tiny_model fixture).
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "model/model.h"

namespace bee::test {

// Loaded once per test binary; nullptr (with a failure naming the fix) when the file is not there.
inline const Model* qwen35_tiny() {
    static std::unique_ptr<Model> m;
    static bool tried = false;
    const std::string path = BEE_QWEN35_TINY;
    if (!tried) {
        tried = true;
        if (std::filesystem::exists(path)) m = Model::load(path);
    }
    if (!m)
        ADD_FAILURE() << path << " is missing: ctest makes it (fixture qwen35_tiny_model), or run `bee gguf synth "
                      << path
                      << " --shape qwen35-tiny --type f32 --seed 42 --vocab "
                         "../shared/data/vocab/ggml-vocab-deepseek-coder.gguf`";
    return m.get();
}

}  // namespace bee::test
