// tests/unit/runtime/smollm_test: the real SmolLM2 model the scheduler tests run on, loaded once per suite
// (a failure, not a skip, when `make models` has not fetched it).
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "model/model.h"

namespace bee::runtime {

inline const std::string kSmolLM = std::string(BEE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";

template <class Base = ::testing::Test>
class WithSmolLM : public Base {
protected:
    static void SetUpTestSuite() {
        if (std::filesystem::exists(kSmolLM)) model_ = Model::load(kSmolLM).release();
    }
    static void TearDownTestSuite() {
        delete model_;
        model_ = nullptr;
    }
    void SetUp() override {
        if (!model_) GTEST_FAIL() << kSmolLM << " is missing: run `make models`";
    }
    static inline Model* model_ = nullptr;
};

}  // namespace bee::runtime
