// tests/unit/kv/test_kv_types: KvCache storage of every KV type: row sizes (heads padded to whole
// blocks), quantize-on-write / read-back per head, type names and the errors for unsupported ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "kv/kv_cache.h"
#include "quant/turbo.h"

namespace bee {
namespace {

KvCacheParams heads_params(GgmlType k, GgmlType v, int n_head_kv, int head_dim) {
    KvCacheParams p;
    p.n_layer = 2;
    p.n_cells = 8;
    p.n_head_kv = n_head_kv;
    p.head_dim_k = p.head_dim_v = head_dim;
    p.n_embd_k = p.n_embd_v = (int64_t)n_head_kv * head_dim;
    p.type_k = k;
    p.type_v = v;
    return p;
}

// Bytes of one cell's K row, per layer: SmolLM2 (3 KV heads x 64) and Gemma 3 270M (1 x 256) shapes.
TEST(KvTypes, RowBytesPadHeadsToWholeBlocks) {
    struct Case {
        GgmlType t;
        int heads, hd;
        size_t bytes;
    };
    const Case cases[] = {
        {GgmlType::F16, 3, 64, 384},
        {GgmlType::BF16, 3, 64, 384},
        {GgmlType::Q8_0, 3, 64, 3 * 68},
        {GgmlType::Q4_0, 3, 64, 3 * 36},
        {GgmlType::Q5_1, 3, 64, 3 * 48},
        {GgmlType::TURBO3, 3, 64, 3 * 50},  // 64 padded to one 128-group: 3.125 bits per padded value
        {GgmlType::TURBO3_64, 3, 64, 3 * 26},
        {GgmlType::TURBO2_64, 3, 64, 3 * 18},
        {GgmlType::TURBO4_64, 3, 64, 3 * 34},
        {GgmlType::TURBO2_TCQ, 3, 64, 3 * 36},
        {GgmlType::TURBO3, 1, 256, 100},
        {GgmlType::TURBO4, 1, 256, 132},
        {GgmlType::TURBO3_TCQ, 1, 256, 104},
        {GgmlType::Q4_1, 1, 80, 3 * 20},  // 80 -> 96: three q4_1 blocks
    };
    for (const Case& c : cases) {
        KvCache kv(heads_params(c.t, GgmlType::F16, c.heads, c.hd));
        EXPECT_EQ(kv.k_row_bytes(), c.bytes) << ggml_type_name(c.t) << " " << c.heads << "x" << c.hd;
        EXPECT_EQ(kv.bytes_per_token(), 2 * (c.bytes + (size_t)c.heads * c.hd * 2));
    }
}

// write_k then read_k gives back each head within the type's error; padding never leaks across heads.
TEST(KvTypes, WriteReadRoundTripPerHead) {
    const GgmlType types[] = {GgmlType::F32,       GgmlType::F16,       GgmlType::BF16,       GgmlType::Q8_0,
                              GgmlType::Q4_0,      GgmlType::Q4_1,      GgmlType::Q5_0,       GgmlType::Q5_1,
                              GgmlType::TURBO2,    GgmlType::TURBO3,    GgmlType::TURBO4,     GgmlType::TURBO2_64,
                              GgmlType::TURBO3_64, GgmlType::TURBO4_64, GgmlType::TURBO2_TCQ, GgmlType::TURBO3_TCQ};
    std::mt19937 rng(3);
    std::normal_distribution<float> nd;
    for (GgmlType t : types) {
        for (int hd : {64, 96}) {
            KvCache kv(heads_params(t, t, 3, hd));
            std::vector<float> x(3 * hd), y(3 * hd, NAN);
            for (size_t i = 0; i < x.size(); i++)
                x[i] = nd(rng) * (1 + (float)(i / hd) * 10);  // heads of different scale
            kv.write_k(1, 5, x.data());
            kv.read_k(1, 5, y.data());
            for (int h = 0; h < 3; h++) {
                double e = 0, n = 0;
                for (int i = 0; i < hd; i++) {
                    const double d = x[h * hd + i] - y[h * hd + i];
                    e += d * d, n += (double)x[h * hd + i] * x[h * hd + i];
                }
                // relative squared error: 2-bit turbo ~0.12 (spec §10), 4-bit legacy ~0.01
                const double bound = t == GgmlType::F32 ? 1e-12 : is_turbo_type(t) ? 0.16 : 0.02;
                EXPECT_LT(e / n, bound) << ggml_type_name(t) << " hd " << hd << " head " << h;
            }
            kv.write_v(0, 0, x.data());
            kv.read_v(0, 0, y.data());
            EXPECT_FALSE(std::isnan(y[0]));
        }
    }
}

// TurboQuant V is written with the norm alpha turbo_v_alpha = 1/sqrt(1 - D): the same codes as K, only
// the block norms differ, and the decoded V rows keep the input's component along itself (projection ~1)
// where K's, with the spec's plain norm correction, is shrunk to ~sqrt(1 - D).
TEST(KvTypes, TurboVIsStoredUnshrunk) {
    const GgmlType types[] = {GgmlType::TURBO2,    GgmlType::TURBO3,     GgmlType::TURBO4,
                              GgmlType::TURBO3_64, GgmlType::TURBO2_TCQ, GgmlType::TURBO3_TCQ};
    std::mt19937 rng(17);
    std::normal_distribution<float> nd;
    for (GgmlType t : types) {
        KvCache kv(heads_params(t, t, 1, 128));
        const size_t block = ggml_type_info(t).type_size, n_blocks = kv.k_row_bytes() / block;
        const double alpha = turbo_v_alpha(t);
        EXPECT_GT(alpha, 1.0) << ggml_type_name(t);
        double proj_k = 0, proj_v = 0;
        const int n_rows = 100;
        std::vector<float> x(128), yk(128), yv(128);
        for (int r = 0; r < n_rows; r++) {
            for (float& e : x) e = nd(rng);
            kv.write_k(0, 0, x.data());
            kv.write_v(0, 0, x.data());
            for (size_t b = 0; b < n_blocks; b++)  // same codes; the norms differ by alpha (fp16)
                ASSERT_EQ(0, memcmp(kv.k_row(0, 0) + b * block + 2, kv.v_row(0, 0) + b * block + 2, block - 2))
                    << ggml_type_name(t);
            kv.read_k(0, 0, yk.data());
            kv.read_v(0, 0, yv.data());
            double xk = 0, xv = 0, xx = 0;
            for (int i = 0; i < 128; i++)
                xk += (double)x[i] * yk[i], xv += (double)x[i] * yv[i], xx += (double)x[i] * x[i];
            proj_k += xk / xx / n_rows, proj_v += xv / xx / n_rows;
        }
        EXPECT_NEAR(proj_v, 1.0, 0.01) << ggml_type_name(t);
        EXPECT_NEAR(proj_k, 1.0 / alpha, 0.01) << ggml_type_name(t);
    }
    EXPECT_EQ(turbo_v_alpha(GgmlType::Q8_0), 1.0f);
}

TEST(KvTypes, NamesAndErrors) {
    EXPECT_EQ(kv_type_from_name("turbo3", "-ctk"), GgmlType::TURBO3);
    EXPECT_EQ(kv_type_from_name("Q8_0", "-ctk"), GgmlType::Q8_0);
    EXPECT_EQ(kv_type_from_name("turbo2_tcq", "-ctv"), GgmlType::TURBO2_TCQ);
    for (const char* bad : {"q4_k", "turbo5", "", "i8"}) {
        try {
            kv_type_from_name(bad, "-ctk/--cache-type-k");
            ADD_FAILURE() << bad;
        } catch (const Error& e) {
            const std::string m = e.what();
            EXPECT_NE(m.find("-ctk/--cache-type-k"), std::string::npos) << m;
            EXPECT_NE(m.find("turbo3_tcq"), std::string::npos) << m;  // lists what is supported
        }
    }
    EXPECT_THROW(KvCache(heads_params(GgmlType::Q4_K, GgmlType::F16, 1, 256)), Error);
    EXPECT_THROW(KvCache(heads_params(GgmlType::F16, GgmlType::TQ2_0, 1, 256)), Error);
    KvCacheParams p = heads_params(GgmlType::F16, GgmlType::F16, 3, 64);
    p.n_embd_k = 100;  // not 3 heads x 64
    EXPECT_THROW(KvCache{p}, Error);
}

}  // namespace
}  // namespace bee
