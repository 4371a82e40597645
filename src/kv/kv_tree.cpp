// kv/kv_tree: tree commit on top of the public KvCache API (cells of a sequence, free_cells).
#include "kv/kv_tree.h"

#include <algorithm>

#include "base/error.h"

namespace bee {

void kv_tree_commit(KvCache& kv, int seq, int32_t pos0, const std::vector<uint8_t>& keep) {
    std::vector<int32_t> cells;
    for (int c = 0; c < kv.cell_end(); c++) {
        const KvCell& cell = kv.cell(c);
        if (cell.has_seq(seq) && cell.pos >= pos0) cells.push_back(c);
    }
    if (cells.size() != keep.size())
        fail(
            "KV tree commit: sequence %d has %zu cells from position %d but the tree had %zu rows "
            "(commit right after the verify decode)",
            seq, cells.size(), pos0, keep.size());
    std::sort(cells.begin(), cells.end());  // cell index order == batch row order (alloc is lowest-first)
    std::vector<int32_t> drop;
    for (size_t i = 0; i < cells.size(); i++)
        if (!keep[i]) drop.push_back(cells[i]);
    kv.free_cells(drop.data(), (int)drop.size());
}

}  // namespace bee
