// tests/unit/kv/test_kv_rotate: the Hadamard rotation of the legacy block KV types (kv_rot_group):
// which types and head sizes rotate, the stored bytes (the rotated row quantized), read-back in the
// original domain, the error it removes on rows with outlier channels, and that a rotated state never
// loads into an unrotated cache (in memory or from a slot file, including the pre-rotation format).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/error.h"
#include "kv/kv_cache.h"
#include "kv/kv_state.h"
#include "quant/quant.h"
#include "quant/turbo.h"

namespace bee {
namespace {

const GgmlType kLegacy[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1};

KvCacheParams rot_params(GgmlType t, int n_head_kv, int head_dim, bool rotate) {
    KvCacheParams p;
    p.n_layer = 2;
    p.n_cells = 8;
    p.n_head_kv = n_head_kv;
    p.head_dim_k = p.head_dim_v = head_dim;
    p.n_embd_k = p.n_embd_v = (int64_t)n_head_kv * head_dim;
    p.type_k = p.type_v = t;
    p.rotate = rotate;
    return p;
}

// K-like rows: Gaussian channels plus a few channels 12x larger (what RoPE'd K looks like; they set the
// block scale of a plain legacy block and crush the other 31 values).
std::vector<float> outlier_rows(int n, int head_dim, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd;
    std::vector<float> x((size_t)n * head_dim);
    for (size_t i = 0; i < x.size(); i++) {
        const int ch = (int)(i % head_dim);
        x[i] = nd(rng) * (ch % 29 == 3 ? 12.0f : 1.0f);
    }
    return x;
}

// Relative squared error of write_k / read_k over cells 0..7 of layer 1, rows from outlier_rows.
double round_trip_error(GgmlType t, int n_head_kv, int head_dim, bool rotate) {
    KvCache kv(rot_params(t, n_head_kv, head_dim, rotate));
    const int row = n_head_kv * head_dim;
    const std::vector<float> x = outlier_rows(8, row, 5);
    std::vector<float> y(row);
    double e = 0, n = 0;
    for (int c = 0; c < 8; c++) {
        kv.write_k(1, c, x.data() + (size_t)c * row);
        kv.read_k(1, c, y.data());
        for (int i = 0; i < row; i++) {
            const double d = x[(size_t)c * row + i] - y[i];
            e += d * d, n += (double)x[(size_t)c * row + i] * x[(size_t)c * row + i];
        }
    }
    return e / n;
}

TEST(KvRotate, GroupPerTypeAndHeadSize) {
    for (GgmlType t : kLegacy) {
        EXPECT_EQ(kv_rot_group(t, 64, true), 64) << ggml_type_name(t);
        EXPECT_EQ(kv_rot_group(t, 128, true), 128) << ggml_type_name(t);
        EXPECT_EQ(kv_rot_group(t, 256, true), 128) << ggml_type_name(t);
        EXPECT_EQ(kv_rot_group(t, 192, true), 64) << ggml_type_name(t);
        EXPECT_EQ(kv_rot_group(t, 80, true), 0) << ggml_type_name(t);  // not a multiple of 64: stored plain
        EXPECT_EQ(kv_rot_group(t, 128, false), 0) << ggml_type_name(t);
    }
    for (GgmlType t :
         {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::TURBO3, GgmlType::TURBO4_64, GgmlType::TURBO3_TCQ})
        EXPECT_EQ(kv_rot_group(t, 128, true), 0) << ggml_type_name(t);  // turbo rotates inside its format
    KvCache kv(rot_params(GgmlType::Q8_0, 3, 64, true));
    EXPECT_EQ(kv.k_rot_group(), 64);
    EXPECT_EQ(kv.v_rot_group(), 64);
    KvCacheParams mixed = rot_params(GgmlType::Q4_0, 1, 256, true);
    mixed.type_v = GgmlType::F16;
    KvCache kv2(mixed);
    EXPECT_EQ(kv2.k_rot_group(), 128);
    EXPECT_EQ(kv2.v_rot_group(), 0);
}

// The stored head is exactly the rotated head quantized (so the attention kernel can score it against
// the rotated query); the unrotated cache stores the plain quantization.
TEST(KvRotate, StoredBytesAreTheRotatedRowQuantized) {
    for (GgmlType t : kLegacy)
        for (int hd : {64, 256}) {
            const int rot = hd % 128 == 0 ? 128 : 64;
            KvCache on(rot_params(t, 2, hd, true)), off(rot_params(t, 2, hd, false));
            const std::vector<float> x = outlier_rows(1, 2 * hd, 7);
            on.write_v(0, 3, x.data());
            off.write_v(0, 3, x.data());
            const size_t hb = kv_head_bytes(t, hd);
            for (int h = 0; h < 2; h++) {
                std::vector<float> r(x.begin() + h * hd, x.begin() + (h + 1) * hd);
                std::vector<uint8_t> plain(hb), rotated(hb);
                quant_traits(t)->quantize_row(r.data(), plain.data(), hd);
                for (int g = 0; g < hd; g += rot) turbo_rotate(r.data() + g, rot);
                quant_traits(t)->quantize_row(r.data(), rotated.data(), hd);
                EXPECT_EQ(0, memcmp(on.v_row(0, 3) + h * hb, rotated.data(), hb)) << ggml_type_name(t) << " hd " << hd;
                EXPECT_EQ(0, memcmp(off.v_row(0, 3) + h * hb, plain.data(), hb)) << ggml_type_name(t) << " hd " << hd;
            }
        }
}

// Read-back is in the original domain, and on rows with outlier channels the rotation cuts the error
// (ratios measured here: 0.15-0.21 for q8_0 / q4_0 / q5_0, 0.36-0.42 for q4_1 / q5_1).
TEST(KvRotate, RoundTripErrorFallsOnOutlierRows) {
    for (GgmlType t : kLegacy)
        for (int hd : {64, 128}) {
            const double on = round_trip_error(t, 3, hd, true), off = round_trip_error(t, 3, hd, false);
            printf("[ kv-rot ] %-5s hd %3d rel. squared error: rotated %.3g, plain %.3g (x%.2f)\n", ggml_type_name(t),
                   hd, on, off, on / off);
            EXPECT_LT(on, 0.5 * off) << ggml_type_name(t) << " hd " << hd;
            EXPECT_LT(on, t == GgmlType::Q8_0 ? 1e-4 : 0.02) << ggml_type_name(t) << " hd " << hd;
        }
    // Unrotatable head size: stored plain, same error either way.
    EXPECT_EQ(round_trip_error(GgmlType::Q4_0, 2, 80, true), round_trip_error(GgmlType::Q4_0, 2, 80, false));
}

// A state keeps its rotation; it imports into a cache with the same rotation and is refused, with the
// flag to fix it named, by one without.
TEST(KvRotate, StateCarriesRotation) {
    KvCache a(rot_params(GgmlType::Q4_0, 3, 64, true));
    const std::vector<float> x = outlier_rows(2, 3 * 64, 9);
    const int32_t pos[2] = {0, 1}, seq[2] = {0, 0};
    int32_t cells[2];
    ASSERT_TRUE(a.alloc(2, pos, seq, cells));
    for (int il = 0; il < 2; il++)
        for (int i = 0; i < 2; i++)
            a.write_k(il, cells[i], x.data() + i * 192), a.write_v(il, cells[i], x.data() + i * 192);
    const SeqState st = seq_state_export(a, 0);
    EXPECT_EQ(st.rot_k, 64);
    EXPECT_EQ(st.rot_v, 64);
    KvCache same(rot_params(GgmlType::Q4_0, 3, 64, true)), plain(rot_params(GgmlType::Q4_0, 3, 64, false));
    ASSERT_TRUE(seq_state_import(same, 0, st));
    std::vector<float> y(192), z(192);
    a.read_v(1, cells[1], y.data());
    same.read_v(1, 1, z.data());
    EXPECT_EQ(y, z);
    try {
        seq_state_import(plain, 0, st);
        ADD_FAILURE() << "rotated state imported into an unrotated cache";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--kv-rotate"), std::string::npos) << e.what();
    }
    EXPECT_EQ(plain.n_used(), 0);
}

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The file keeps the rotation groups; a file in the pre-rotation format (BEESEQ01, no rotation fields)
// reads as unrotated, so it restores into a --kv-rotate off cache and is refused by a rotated one.
TEST(KvRotate, SlotFileCarriesRotation) {
    KvCache rotated(rot_params(GgmlType::Q8_0, 1, 128, true)), plain(rot_params(GgmlType::Q8_0, 1, 128, false));
    const std::vector<float> x = outlier_rows(1, 128, 11);
    const int32_t pos = 0, seq = 0;
    int32_t cell;
    for (KvCache* kv : {&rotated, &plain}) {
        ASSERT_TRUE(kv->alloc(1, &pos, &seq, &cell));
        kv->write_k(0, cell, x.data()), kv->write_v(0, cell, x.data());
    }
    const std::string path = ::testing::TempDir() + "kv_rotate_slot.bin";
    SeqFile f{"model tag", {42}, seq_state_export(rotated, 0)};
    seq_file_write(path, f);
    size_t n_read = 0;
    SeqFile back = seq_file_read(path, &n_read);
    EXPECT_EQ(back.state.rot_k, 128);
    EXPECT_EQ(back.state.rot_v, 128);
    EXPECT_EQ(back.state.k, f.state.k);
    EXPECT_THROW(seq_state_check(plain, back.state, "slot file"), Error);
    seq_state_check(rotated, back.state, "slot file");

    // The same unrotated state written as a BEESEQ01 file: magic "01", no rotation fields (and no
    // per-layer V count or LoRA scale count, which BEESEQ04 writes after them).
    f.state = seq_state_export(plain, 0);
    seq_file_write(path, f);
    std::string v4 = slurp(path);
    const size_t rot_at = 8 + 4 + f.model.size() + 4 + 4 + 4 + 8 + 8;  // magic, model, layers, types, row bytes
    std::string v1 = v4.substr(0, rot_at) + v4.substr(rot_at + 16, v4.size() - 16 - rot_at - 8);
    v1[7] = '1';
    const uint64_t sum = XXH3_64bits(v1.data(), v1.size());
    v1.append(reinterpret_cast<const char*>(&sum), 8);
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(v1.data(), (std::streamsize)v1.size());
    back = seq_file_read(path, &n_read);
    EXPECT_EQ(n_read, v1.size());
    EXPECT_EQ(back.state.rot_k, 0);
    EXPECT_EQ(back.state.k, f.state.k);
    EXPECT_EQ(back.tokens, f.tokens);
    seq_state_check(plain, back.state, "slot file");
    try {
        seq_state_check(rotated, back.state, "slot file");
        ADD_FAILURE() << "an unrotated BEESEQ01 file passed the check of a rotated cache";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("Hadamard-rotated"), std::string::npos) << e.what();
    }
    std::remove(path.c_str());
}

}  // namespace
}  // namespace bee
