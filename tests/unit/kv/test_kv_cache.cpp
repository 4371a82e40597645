// tests/unit/kv/test_kv_cache: KvCache cell bookkeeping and sequence ops (alloc, rm, cp, keep, shift, queries).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "kv/kv_cache.h"

namespace bee {
namespace {

KvCacheParams small_params(int n_cells, GgmlType t = GgmlType::F16) {
    KvCacheParams p;
    p.n_layer = 2;
    p.n_cells = n_cells;
    p.n_embd_k = 32;
    p.n_embd_v = 32;
    p.type_k = t;
    p.type_v = t;
    return p;
}

// Allocates positions [p0, p0 + n) of sequence seq; returns the cells.
std::vector<int32_t> alloc_seq(KvCache& kv, int seq, int32_t p0, int n) {
    std::vector<int32_t> pos(n), sq(n, seq), cells(n);
    for (int i = 0; i < n; i++) pos[i] = p0 + i;
    EXPECT_TRUE(kv.alloc(n, pos.data(), sq.data(), cells.data()));
    return cells;
}

// Positions of seq in ascending order (via seq_cells_sorted).
std::vector<int32_t> positions(const KvCache& kv, int seq) {
    std::vector<std::pair<int32_t, int32_t>> pc;
    kv.seq_cells_sorted(seq, pc);
    std::vector<int32_t> p;
    for (auto& [pos, c] : pc) p.push_back(pos);
    return p;
}

std::vector<int32_t> range(int32_t a, int32_t b) {
    std::vector<int32_t> v;
    for (int32_t i = a; i < b; i++) v.push_back(i);
    return v;
}

TEST(KvCache, StorageSizes) {
    KvCache f16(small_params(8));
    EXPECT_EQ(f16.k_row_bytes(), 64u);
    EXPECT_EQ(f16.v_row_bytes(), 64u);
    EXPECT_EQ(f16.total_bytes(), 2u * 64 * 8 * 2);
    KvCache f32(small_params(8, GgmlType::F32));
    EXPECT_EQ(f32.k_row_bytes(), 128u);
    EXPECT_EQ(f32.k_row(1, 3) - f32.k_row(1, 0), 3 * 128);
    EXPECT_EQ(f32.v_row(1, 0), f32.v_data(1));
}

TEST(KvCache, RejectsUnsupportedTypesAndEmptyCache) {
    KvCacheParams p = small_params(8);
    p.type_k = GgmlType::Q4_K;
    EXPECT_THROW(KvCache{p}, Error);
    p = small_params(0);
    EXPECT_THROW(KvCache{p}, Error);
}

TEST(KvCache, AllocTakesLowestFreeCellsAndFreeReleasesThem) {
    KvCache kv(small_params(8));
    EXPECT_EQ(kv.n_used(), 0);
    std::vector<int32_t> a = alloc_seq(kv, 0, 0, 3);
    EXPECT_EQ(a, range(0, 3));
    EXPECT_EQ(kv.n_used(), 3);
    EXPECT_EQ(kv.cell(1).pos, 1);
    EXPECT_TRUE(kv.cell(1).has_seq(0));
    EXPECT_FALSE(kv.cell(1).has_seq(1));
    const int32_t freed = 1;
    kv.free_cells(&freed, 1);
    EXPECT_EQ(kv.n_used(), 2);
    EXPECT_FALSE(kv.cell(1).used());
    std::vector<int32_t> b = alloc_seq(kv, 1, 0, 2);  // fills the hole first
    EXPECT_EQ(b, (std::vector<int32_t>{1, 3}));
    EXPECT_EQ(kv.n_used(), 4);
}

// cell_end() bounds the used cells from above and every scan stops there: it grows with alloc, shrinks
// only when the top cells are freed, and the queries see the same cells either way.
TEST(KvCache, CellEndTracksTheHighestUsedCell) {
    KvCache kv(small_params(64));
    EXPECT_EQ(kv.cell_end(), 0);
    alloc_seq(kv, 0, 0, 5);  // cells 0-4
    alloc_seq(kv, 1, 0, 3);  // cells 5-7
    EXPECT_EQ(kv.cell_end(), 8);
    kv.seq_rm(0, 2, 4);  // a hole in the middle: the bound stays
    EXPECT_EQ(kv.cell_end(), 8);
    EXPECT_EQ(positions(kv, 0), (std::vector<int32_t>{0, 1, 4}));
    kv.seq_rm(1, 1, -1);  // cells 6-7 go: the bound falls to the highest used cell
    EXPECT_EQ(kv.cell_end(), 6);
    EXPECT_EQ(kv.seq_pos_max(1), 0);
    alloc_seq(kv, 1, 1, 3);  // refills 2, 3, then 6
    EXPECT_EQ(kv.cell_end(), 7);
    EXPECT_EQ(positions(kv, 1), (std::vector<int32_t>{0, 1, 2, 3}));
    EXPECT_EQ(kv.seq_n_cells(1), 4);
    const int32_t top = 6;
    kv.free_cells(&top, 1);
    EXPECT_EQ(kv.cell_end(), 6);
    kv.seq_keep(0);  // cells 0, 1, 4 of sequence 0 remain
    EXPECT_EQ(kv.cell_end(), 5);
    EXPECT_EQ(kv.seq_pos_min(0), 0);
    EXPECT_EQ(kv.seq_pos_max(0), 4);
    kv.seq_shift(0, 0, -1, -10);  // shifted below zero: all dropped
    EXPECT_EQ(kv.cell_end(), 0);
    EXPECT_EQ(kv.n_used(), 0);
    alloc_seq(kv, 2, 0, 2);
    kv.clear();
    EXPECT_EQ(kv.cell_end(), 0);
}

TEST(KvCache, FullCacheAllocReturnsFalseAndChangesNothing) {
    KvCache kv(small_params(4));
    alloc_seq(kv, 0, 0, 3);
    std::vector<int32_t> pos = {3, 4}, seq = {0, 0}, cells = {-7, -7};
    EXPECT_FALSE(kv.alloc(2, pos.data(), seq.data(), cells.data()));
    EXPECT_EQ(kv.n_used(), 3);
    EXPECT_FALSE(kv.cell(3).used());
    EXPECT_EQ(cells[0], -7);
    EXPECT_TRUE(kv.alloc(1, pos.data(), seq.data(), cells.data()));
    EXPECT_EQ(kv.n_used(), 4);
}

TEST(KvCache, SeqRmRanges) {
    KvCache kv(small_params(32));
    alloc_seq(kv, 0, 0, 10);
    alloc_seq(kv, 1, 0, 4);
    kv.seq_rm(0, 3, 6);  // [3, 6)
    EXPECT_EQ(positions(kv, 0), (std::vector<int32_t>{0, 1, 2, 6, 7, 8, 9}));
    EXPECT_EQ(kv.n_used(), 11);
    kv.seq_rm(0, 8, -1);  // [8, inf)
    EXPECT_EQ(positions(kv, 0), (std::vector<int32_t>{0, 1, 2, 6, 7}));
    kv.seq_rm(0, -1, 2);  // [0, 2)
    EXPECT_EQ(positions(kv, 0), (std::vector<int32_t>{2, 6, 7}));
    EXPECT_EQ(positions(kv, 1), range(0, 4));  // other sequences untouched
    kv.seq_rm(-1, 3, -1);                      // every sequence, [3, inf)
    EXPECT_EQ(positions(kv, 0), (std::vector<int32_t>{2}));
    EXPECT_EQ(positions(kv, 1), range(0, 3));
    EXPECT_EQ(kv.n_used(), 4);
    kv.seq_rm(1, -1, -1);
    EXPECT_EQ(kv.seq_n_cells(1), 0);
    EXPECT_EQ(kv.n_used(), 1);
}

TEST(KvCache, SeqCpSharesCellsUntilBothRemoveThem) {
    KvCache kv(small_params(16));
    alloc_seq(kv, 0, 0, 6);
    kv.seq_cp(0, 1, 2, 5);  // positions 2, 3, 4
    EXPECT_EQ(positions(kv, 1), (std::vector<int32_t>{2, 3, 4}));
    EXPECT_EQ(kv.n_used(), 6);  // shared, no new cells
    EXPECT_EQ(kv.cell(3).seq_mask, 0b11u);
    kv.seq_rm(0, -1, -1);  // seq 0 drops everything: shared cells live on for seq 1
    EXPECT_EQ(kv.n_used(), 3);
    EXPECT_EQ(positions(kv, 1), (std::vector<int32_t>{2, 3, 4}));
    kv.seq_cp(1, 1, -1, -1);  // self copy is a no-op
    EXPECT_EQ(kv.cell(2).seq_mask, 0b10u);
    kv.seq_rm(1, 3, 4);
    EXPECT_EQ(kv.n_used(), 2);
}

TEST(KvCache, SeqKeepDropsOtherSequences) {
    KvCache kv(small_params(16));
    alloc_seq(kv, 0, 0, 4);
    alloc_seq(kv, 1, 0, 3);
    alloc_seq(kv, 2, 0, 2);
    kv.seq_cp(0, 2, 0, 2);  // cells 0, 1 shared by 0 and 2
    kv.seq_keep(2);
    EXPECT_EQ(kv.seq_n_cells(0), 0);
    EXPECT_EQ(kv.seq_n_cells(1), 0);
    EXPECT_EQ(kv.seq_n_cells(2), 4);  // two of its own, two that were shared
    EXPECT_EQ(kv.n_used(), 4);
    EXPECT_EQ(kv.cell(0).seq_mask, 0b100u);
}

TEST(KvCache, SeqShiftMovesPositionsAndRecordsRotation) {
    KvCache kv(small_params(16));
    std::vector<int32_t> c = alloc_seq(kv, 0, 0, 6);
    std::vector<int32_t> delta;
    EXPECT_FALSE(kv.take_shifts(delta));
    kv.seq_shift(0, 2, 4, 10);  // positions 2, 3 -> 12, 13
    EXPECT_EQ(positions(kv, 0), (std::vector<int32_t>{0, 1, 4, 5, 12, 13}));
    ASSERT_TRUE(kv.take_shifts(delta));
    ASSERT_EQ((int)delta.size(), kv.n_cells());
    EXPECT_EQ(delta[c[2]], 10);
    EXPECT_EQ(delta[c[3]], 10);
    EXPECT_EQ(delta[c[0]], 0);
    EXPECT_FALSE(kv.take_shifts(delta));  // consumed
    kv.seq_shift(0, 4, -1, -3);           // 4, 5, 12, 13 -> 1, 2, 9, 10
    kv.seq_shift(0, 9, 11, 1);            // 9, 10 -> 10, 11: deltas of one cell add up
    ASSERT_TRUE(kv.take_shifts(delta));
    EXPECT_EQ(delta[c[2]], -2);
    EXPECT_EQ(delta[c[4]], -3);
    EXPECT_EQ(kv.seq_pos_min(0), 0);
    EXPECT_EQ(kv.seq_pos_max(0), 11);
    kv.seq_shift(0, 0, 0, 5);  // empty range: nothing pending
    EXPECT_FALSE(kv.take_shifts(delta));
}

TEST(KvCache, SeqShiftBelowZeroDropsCells) {
    KvCache kv(small_params(16));
    alloc_seq(kv, 0, 0, 6);
    kv.seq_shift(0, -1, -1, -2);  // 0, 1 fall out
    EXPECT_EQ(positions(kv, 0), range(0, 4));
    EXPECT_EQ(kv.n_used(), 4);
}

TEST(KvCache, SeqShiftOfSharedCellIsRefused) {
    KvCache kv(small_params(16));
    alloc_seq(kv, 0, 0, 6);
    kv.seq_cp(0, 1, 3, 5);  // cells of positions 3, 4 shared; cells before them are not
    try {
        kv.seq_shift(0, -1, -1, 3);
        FAIL() << "expected Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("shared"), std::string::npos) << e.what();
    }
    // Refused as a whole: no cell moved, no rotation pending.
    EXPECT_EQ(positions(kv, 0), range(0, 6));
    std::vector<int32_t> delta;
    EXPECT_FALSE(kv.take_shifts(delta));
    kv.seq_shift(0, 5, -1, 3);  // only an unshared cell: allowed
    EXPECT_EQ(positions(kv, 0), (std::vector<int32_t>{0, 1, 2, 3, 4, 8}));
    EXPECT_EQ(positions(kv, 1), (std::vector<int32_t>{3, 4}));
}

TEST(KvCache, PosMinMaxAndSortedCells) {
    KvCache kv(small_params(16));
    EXPECT_EQ(kv.seq_pos_max(0), -1);
    EXPECT_EQ(kv.seq_pos_min(0), -1);
    // Positions land in cells out of order: 7 in cell 0, 3 in cell 1, 5 in cell 2, 4 in cell 3.
    std::vector<int32_t> pos = {7, 3, 5, 4}, seq = {0, 0, 0, 0}, cells(4);
    ASSERT_TRUE(kv.alloc(4, pos.data(), seq.data(), cells.data()));
    EXPECT_EQ(kv.seq_pos_min(0), 3);
    EXPECT_EQ(kv.seq_pos_max(0), 7);
    std::vector<std::pair<int32_t, int32_t>> pc;
    kv.seq_cells_sorted(0, pc);
    const std::vector<std::pair<int32_t, int32_t>> want = {{3, 1}, {4, 3}, {5, 2}, {7, 0}};
    EXPECT_EQ(pc, want);
    kv.seq_cells_sorted(5, pc);
    EXPECT_TRUE(pc.empty());
}

TEST(KvCache, ClearFreesEverything) {
    KvCache kv(small_params(8));
    alloc_seq(kv, 0, 0, 5);
    kv.seq_shift(0, -1, -1, 2);
    kv.clear();
    EXPECT_EQ(kv.n_used(), 0);
    EXPECT_EQ(kv.seq_pos_max(0), -1);
    std::vector<int32_t> delta;
    EXPECT_FALSE(kv.take_shifts(delta));
    EXPECT_EQ(alloc_seq(kv, 3, 0, 8), range(0, 8));
}

TEST(KvCache, HighSequenceIds) {
    KvCache kv(small_params(8));
    alloc_seq(kv, kMaxSequences - 1, 0, 2);
    kv.seq_cp(kMaxSequences - 1, 0, -1, -1);
    EXPECT_EQ(kv.seq_n_cells(0), 2);
    EXPECT_EQ(kv.seq_n_cells(kMaxSequences - 1), 2);
    kv.seq_keep(0);
    EXPECT_EQ(kv.seq_n_cells(kMaxSequences - 1), 0);
    EXPECT_EQ(kv.n_used(), 2);
}

}  // namespace
}  // namespace bee
