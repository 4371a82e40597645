// tests/unit/kv/test_kv_partitions: with KvCacheParams::n_partitions, each sequence's cells come from its own
// contiguous range (lowest free first), a batch that does not fit its ranges falls back to the lowest free
// cells as a whole, and a tree commit still finds a batch's rows in index order.
#include <gtest/gtest.h>

#include <vector>

#include "base/error.h"
#include "kv/kv_cache.h"
#include "kv/kv_tree.h"

namespace bee {
namespace {

KvCacheParams params(int n_cells, int parts) {
    KvCacheParams p;
    p.n_layer = 1;
    p.n_cells = n_cells;
    p.n_embd_k = p.n_embd_v = 32;
    p.n_partitions = parts;
    return p;
}

std::vector<int32_t> alloc(KvCache& kv, const std::vector<int32_t>& seq, const std::vector<int32_t>& pos) {
    std::vector<int32_t> cells(seq.size(), -1);
    EXPECT_TRUE(kv.alloc((int)seq.size(), pos.data(), seq.data(), cells.data()));
    return cells;
}

TEST(KvPartitions, EachSequenceFillsItsOwnRange) {
    KvCache kv(params(16, 4));  // ranges [0,4) [4,8) [8,12) [12,16)
    EXPECT_EQ(alloc(kv, {0, 1, 2, 3}, {0, 0, 0, 0}), (std::vector<int32_t>{0, 4, 8, 12}));  // a server step
    EXPECT_EQ(alloc(kv, {2, 2, 0}, {1, 2, 1}), (std::vector<int32_t>{9, 10, 1}));
    EXPECT_EQ(alloc(kv, {3, 1}, {1, 1}), (std::vector<int32_t>{13, 5}));
    EXPECT_EQ(kv.n_used(), 9);
    EXPECT_EQ(kv.cell_end(), 14);
    // sequence 2 has one cell left in its range: two more do not fit, so the batch takes the lowest free cells
    EXPECT_EQ(alloc(kv, {2, 2}, {3, 4}), (std::vector<int32_t>{2, 3}));
    EXPECT_EQ(kv.cell(2).pos, 3);
    EXPECT_TRUE(kv.cell(2).has_seq(2));
    const int32_t freed[] = {9, 10};
    kv.free_cells(freed, 2);
    EXPECT_EQ(alloc(kv, {2}, {5}), (std::vector<int32_t>{9}));  // back in its range
}

TEST(KvPartitions, TreeCommitKeepsRowOrder) {
    KvCache kv(params(16, 2));
    alloc(kv, {1, 1}, {0, 1});
    const std::vector<int32_t> cells = alloc(kv, {1, 1, 1, 1}, {2, 3, 3, 4});  // a verify tree of 4 rows
    EXPECT_EQ(cells, (std::vector<int32_t>{10, 11, 12, 13}));
    kv_tree_commit(kv, 1, 2, {1, 0, 1, 1});  // keep rows 0, 2, 3
    EXPECT_FALSE(kv.cell(11).used());
    EXPECT_TRUE(kv.cell(12).used() && kv.cell(13).used());
}

TEST(KvPartitions, BadCountsAreRefused) {
    EXPECT_THROW(KvCache{params(4, 5)}, Error);  // more ranges than cells
    EXPECT_THROW(KvCache{params(128, 0)}, Error);
    EXPECT_THROW(KvCache{params(128, kMaxSequences + 1)}, Error);
}

}  // namespace
}  // namespace bee
