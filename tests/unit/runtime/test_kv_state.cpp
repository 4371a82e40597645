// tests/unit/server/test_kv_state: a sequence's KV exported to host memory and imported into another
// sequence comes back byte for byte with the same positions (the server's --cache-ram relies on it).
#include <gtest/gtest.h>

#include <cstring>

#include "base/error.h"
#include "kv/kv_state.h"

namespace {

bee::KvCacheParams small_params(bee::GgmlType t) {
    bee::KvCacheParams p;
    p.n_layer = 2;
    p.n_cells = 16;
    p.n_embd_k = p.n_embd_v = 32;
    p.type_k = p.type_v = t;
    return p;
}

// Fills seq with cells at positions [0, n), each row a distinct pattern.
void fill(bee::KvCache& kv, int seq, int n) {
    std::vector<int32_t> pos(n), seqs(n, seq), cells(n);
    for (int i = 0; i < n; i++) pos[i] = i;
    ASSERT_TRUE(kv.alloc(n, pos.data(), seqs.data(), cells.data()));
    std::vector<float> row(32);
    for (int il = 0; il < 2; il++)
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < 32; j++) row[j] = 0.25f * (float)(il * 1000 + i * 37 + j) - 3.0f;
            kv.write_k(il, cells[i], row.data());
            for (float& x : row) x = -x;
            kv.write_v(il, cells[i], row.data());
        }
}

std::vector<std::vector<uint8_t>> rows_of(bee::KvCache& kv, int seq) {
    std::vector<std::pair<int32_t, int32_t>> cells;
    kv.seq_cells_sorted(seq, cells);
    std::vector<std::vector<uint8_t>> out;
    for (int il = 0; il < 2; il++)
        for (const auto& [pos, c] : cells) {
            out.emplace_back(kv.k_row(il, c), kv.k_row(il, c) + kv.k_row_bytes());
            out.emplace_back(kv.v_row(il, c), kv.v_row(il, c) + kv.v_row_bytes());
        }
    return out;
}

}  // namespace

TEST(KvState, RoundTripIntoAnotherSequence) {
    for (bee::GgmlType t : {bee::GgmlType::F16, bee::GgmlType::F32}) {
        bee::KvCache kv(small_params(t));
        fill(kv, 0, 5);
        const auto before = rows_of(kv, 0);
        bee::SeqState st = bee::seq_state_export(kv, 0);
        EXPECT_EQ(st.n_cells(), 5);
        EXPECT_EQ(st.bytes(), 2 * 5 * (kv.k_row_bytes() + kv.v_row_bytes()) + 5 * sizeof(int32_t));
        kv.seq_rm(0, 0, -1);
        ASSERT_TRUE(bee::seq_state_import(kv, 3, st));
        EXPECT_EQ(kv.seq_pos_min(3), 0);
        EXPECT_EQ(kv.seq_pos_max(3), 4);
        EXPECT_EQ(rows_of(kv, 3), before);
    }
}

TEST(KvState, ExportPrefixOnly) {
    bee::KvCache kv(small_params(bee::GgmlType::F16));
    fill(kv, 1, 8);
    bee::SeqState st = bee::seq_state_export(kv, 1, 3);
    EXPECT_EQ(st.pos, (std::vector<int32_t>{0, 1, 2}));
}

TEST(KvState, RefusesFullCacheAndOtherLayouts) {
    bee::KvCache kv(small_params(bee::GgmlType::F16));
    fill(kv, 0, 10);
    bee::SeqState st = bee::seq_state_export(kv, 0);
    EXPECT_FALSE(bee::seq_state_import(kv, 1, st));  // 6 free cells, 10 needed
    EXPECT_EQ(kv.seq_n_cells(1), 0);
    EXPECT_THROW(bee::seq_state_import(kv, 0, st), bee::Error);  // not empty
    bee::KvCache other(small_params(bee::GgmlType::F32));
    EXPECT_THROW(bee::seq_state_import(other, 0, st), bee::Error);
}
