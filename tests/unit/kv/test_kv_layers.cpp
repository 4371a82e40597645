// tests/unit/kv/test_kv_layers: a V type per layer (KvCacheParams::type_v_layer): row sizes, bytes per
// token, write/read per layer's own type, the boundary-V rule (kv_v_layer_types, --kv-boundary-layers)
// and slot states/files that record the per-layer V types and refuse a cache with other ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "../common/error_of.h"
#include "base/error.h"
#include "kv/kv_cache.h"
#include "kv/kv_layers.h"
#include "kv/kv_state.h"
#include "quant/turbo.h"

namespace bee {
namespace {

using test::error_of;

// Gemma 3 270M's shape (1 KV head of 256), 4 layers; V turbo3 except where `v_layer` says.
KvCacheParams layer_params(std::vector<GgmlType> v_layer) {
    KvCacheParams p;
    p.n_layer = 4;
    p.n_cells = 8;
    p.n_head_kv = 1;
    p.head_dim_k = p.head_dim_v = 256;
    p.n_embd_k = p.n_embd_v = 256;
    p.type_k = GgmlType::Q8_0;
    p.type_v = GgmlType::TURBO3;
    p.type_v_layer = std::move(v_layer);
    return p;
}

const std::vector<GgmlType> kBoundary1 = {GgmlType::Q8_0, GgmlType::TURBO3, GgmlType::TURBO3, GgmlType::Q8_0};

TEST(KvLayers, RowBytesAndBytesPerTokenFollowEachLayersType) {
    KvCache kv(layer_params(kBoundary1));
    // q8_0: 8 blocks of 34 bytes; turbo3: 2 groups of 50; K q8_0 on every layer.
    EXPECT_EQ(kv.v_row_bytes(0), 272u);
    EXPECT_EQ(kv.v_row_bytes(1), 100u);
    EXPECT_EQ(kv.v_row_bytes(3), 272u);
    EXPECT_EQ(kv.v_row_bytes(), 100u);  // the base type's row
    EXPECT_EQ(kv.v_type(0), GgmlType::Q8_0);
    EXPECT_EQ(kv.v_type(2), GgmlType::TURBO3);
    EXPECT_EQ(kv.v_rot_group(0), 128);  // rotated q8_0 (kv_rot_group), turbo rotates inside its format
    EXPECT_EQ(kv.v_rot_group(1), 0);
    EXPECT_EQ(kv.v_promoted_layers(), (std::vector<int>{0, 3}));
    EXPECT_EQ(kv.bytes_per_token(), 4 * 272u + 2 * 272u + 2 * 100u);
    EXPECT_EQ(kv.total_bytes(), 8 * kv.bytes_per_token());
    KvCache uniform(layer_params({}));
    EXPECT_EQ(uniform.bytes_per_token(), 4 * 272u + 4 * 100u);
    EXPECT_TRUE(uniform.v_promoted_layers().empty());
}

// Each layer quantizes V with its own type: the q8_0 layers read back far closer than the turbo3 ones,
// and a turbo3 layer reads back exactly as a uniform turbo3 cache does (same bytes, same norm alpha).
TEST(KvLayers, WriteReadUsesTheLayersType) {
    KvCache kv(layer_params(kBoundary1)), uniform(layer_params({}));
    std::mt19937 rng(7);
    std::normal_distribution<float> nd;
    std::vector<float> x(256), y(256), z(256);
    for (float& v : x) v = nd(rng);
    const int32_t pos = 0, seq = 0;
    int32_t c, cu;
    ASSERT_TRUE(kv.alloc(1, &pos, &seq, &c));
    ASSERT_TRUE(uniform.alloc(1, &pos, &seq, &cu));
    double err[4];
    for (int il = 0; il < 4; il++) {
        kv.write_v(il, c, x.data());
        kv.read_v(il, c, y.data());
        err[il] = 0;
        for (int i = 0; i < 256; i++) err[il] += (y[i] - x[i]) * (y[i] - x[i]);
    }
    EXPECT_LT(err[0] * 50, err[1]) << err[0] << " " << err[1];
    EXPECT_LT(err[3] * 50, err[2]) << err[3] << " " << err[2];
    uniform.write_v(1, cu, x.data());
    uniform.read_v(1, cu, z.data());
    kv.read_v(1, c, y.data());
    EXPECT_EQ(y, z);
    EXPECT_EQ(memcmp(kv.v_data(1), uniform.v_data(1), kv.v_row_bytes(1)), 0);
}

TEST(KvLayers, BadPerLayerTypesAreRefused) {
    EXPECT_NE(error_of([] {
                  KvCache kv(layer_params({GgmlType::Q8_0}));
              }).find("1 per-layer V types given for 4 layers"),
              std::string::npos);
    std::vector<GgmlType> bad = kBoundary1;
    bad[2] = GgmlType::Q6_K;
    EXPECT_NE(error_of([&] { KvCache kv(layer_params(bad)); }).find("V type q6_k of layer 2"), std::string::npos);
}

TEST(KvLayers, BoundaryRulePromotesFirstAndLastLayers) {
    std::string why;
    const std::vector<GgmlType> t = kv_v_layer_types(GgmlType::TURBO3, 6, 2, &why);
    ASSERT_EQ(t.size(), 6u);
    for (int il = 0; il < 6; il++) EXPECT_EQ(t[il], il < 2 || il >= 4 ? GgmlType::Q8_0 : GgmlType::TURBO3) << il;
    EXPECT_NE(why.find("first and last 2"), std::string::npos) << why;
    // A count past half the layers promotes every layer; 0 and non-turbo V types promote none.
    for (GgmlType x : kv_v_layer_types(GgmlType::TURBO2_TCQ, 5, 9, &why)) EXPECT_EQ(x, GgmlType::Q8_0);
    EXPECT_TRUE(kv_v_layer_types(GgmlType::TURBO3, 6, 0, &why).empty());
    EXPECT_TRUE(kv_v_layer_types(GgmlType::Q4_0, 6, 2, &why).empty());
    EXPECT_TRUE(kv_v_layer_types(GgmlType::F16, 6, kKvBoundaryAuto, &why).empty());
    // auto: the first and last 2 layers, for every turbo V type.
    for (GgmlType v : {GgmlType::TURBO4, GgmlType::TURBO3, GgmlType::TURBO3_TCQ, GgmlType::TURBO2_TCQ}) {
        const std::vector<GgmlType> a = kv_v_layer_types(v, 18, kKvBoundaryAuto, &why);
        ASSERT_EQ(a.size(), 18u);
        for (int il = 0; il < 18; il++) EXPECT_EQ(a[il], il < 2 || il >= 16 ? GgmlType::Q8_0 : v) << il;
        EXPECT_NE(why.find("auto"), std::string::npos) << why;
    }
    // ... on models of 16 layers or more only (4 of 15 would be over a quarter of the cache).
    EXPECT_TRUE(kv_v_layer_types(GgmlType::TURBO3, 15, kKvBoundaryAuto, &why).empty());
    EXPECT_EQ(kv_v_layer_types(GgmlType::TURBO3, 15, 2, &why)[14], GgmlType::Q8_0);
}

TEST(KvLayers, BoundaryFlagParsing) {
    EXPECT_EQ(kv_boundary_from_name("auto", "--kv-boundary-layers"), kKvBoundaryAuto);
    EXPECT_EQ(kv_boundary_from_name("0", "--kv-boundary-layers"), 0);
    EXPECT_EQ(kv_boundary_from_name("3", "--kv-boundary-layers"), 3);
    for (const char* bad : {"", "-1", "two", "3x", "5000"})
        EXPECT_NE(error_of([&] { kv_boundary_from_name(bad, "--kv-boundary-layers"); }).find("--kv-boundary-layers"),
                  std::string::npos)
            << bad;
}

// A state taken from a cache with promoted layers keeps their types through memory and a slot file,
// imports back byte for byte, and is refused by a cache whose layers have other V types (and the other
// way round), naming the layer.
TEST(KvLayers, SlotStateRecordsPerLayerTypes) {
    KvCache kv(layer_params(kBoundary1)), uniform(layer_params({}));
    std::mt19937 rng(9);
    std::normal_distribution<float> nd;
    std::vector<float> x(256);
    const int32_t pos[3] = {0, 1, 2}, seq[3] = {0, 0, 0};
    int32_t cells[3];
    ASSERT_TRUE(kv.alloc(3, pos, seq, cells));
    ASSERT_TRUE(uniform.alloc(3, pos, seq, cells));
    for (int il = 0; il < 4; il++)
        for (int i = 0; i < 3; i++) {
            for (float& v : x) v = nd(rng);
            kv.write_k(il, cells[i], x.data()), kv.write_v(il, cells[i], x.data());
            uniform.write_k(il, cells[i], x.data()), uniform.write_v(il, cells[i], x.data());
        }
    const SeqState st = seq_state_export(kv, 0);
    ASSERT_EQ(st.v_layers.size(), 4u);
    EXPECT_EQ(st.v_layers[0], (SeqState::VLayer{GgmlType::Q8_0, 272, 128}));
    EXPECT_EQ(st.v_layers[1], (SeqState::VLayer{GgmlType::TURBO3, 100, 0}));
    EXPECT_EQ(st.v.size(), 3u * (272 + 100 + 100 + 272));
    EXPECT_EQ(st.bytes(), 3 * kv.bytes_per_token() + 3 * sizeof(int32_t));

    const std::string path = ::testing::TempDir() + "kv_layers_slot.bin";
    seq_file_write(path, SeqFile{"tag", {1, 2, 3}, st});
    size_t n_read = 0;
    const SeqFile back = seq_file_read(path, &n_read);
    EXPECT_EQ(back.state.v_layers, st.v_layers);
    EXPECT_EQ(back.state.v, st.v);

    KvCache fresh(layer_params(kBoundary1));
    ASSERT_TRUE(seq_state_import(fresh, 0, back.state));
    std::vector<float> a(256), b(256);
    for (int il = 0; il < 4; il++)
        for (int i = 0; i < 3; i++) {
            kv.read_v(il, cells[i], a.data());
            fresh.read_v(il, cells[i], b.data());
            EXPECT_EQ(a, b) << il << " " << i;
        }
    const std::string e = error_of([&] { seq_state_check(uniform, back.state, "slot file"); });
    EXPECT_NE(e.find("layer 0 of the state has V type q8_0"), std::string::npos) << e;
    EXPECT_NE(e.find("--kv-boundary-layers"), std::string::npos) << e;
    const SeqState ust = seq_state_export(uniform, 0);
    EXPECT_TRUE(ust.v_layers.empty());
    EXPECT_NE(error_of([&] {
                  seq_state_check(kv, ust, "KV state import");
              }).find("layer 0 of the state has V type turbo3"),
              std::string::npos);
    // A damaged per-layer count (checksum recomputed, so the header check must catch it) is refused.
    std::string bytes;
    {
        std::ifstream in(path, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    const size_t count_at = 8 + 4 + 3 + 4 + 4 + 4 + 8 + 8 + 4 + 4;  // magic, "tag", layers, types, row bytes, rotation
    ASSERT_EQ(bytes.substr(0, 8), "BEESEQ04");
    const uint32_t five = 5;
    memcpy(bytes.data() + count_at, &five, 4);
    const uint64_t sum = XXH3_64bits(bytes.data(), bytes.size() - 8);
    memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), (std::streamsize)bytes.size());
    EXPECT_NE(error_of([&] { seq_file_read(path, &n_read); }).find("5 per-layer V layouts for 4 layers"),
              std::string::npos);
    // A uniform state round-trips through the file with no per-layer entries.
    seq_file_write(path, SeqFile{"tag", {}, ust});
    EXPECT_TRUE(seq_file_read(path, &n_read).state.v_layers.empty());
    std::remove(path.c_str());
}

}  // namespace
}  // namespace bee
