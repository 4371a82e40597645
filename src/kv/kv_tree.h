// kv/kv_tree: committing a verified draft tree — keep the accepted path's cells, free the rest.
#pragma once
#include <cstdint>
#include <vector>

#include "kv/kv_cache.h"

namespace bee {

// The last batch of `seq` was a tree of rows.size() == keep.size() rows placed at positions >= pos0
// (every cell of seq at pos0 or later belongs to that batch). Frees the cells of rows whose keep[i] is 0.
// Rows map to cells by allocation order: KvCache::alloc hands out the lowest free cells in row order.
// The kept rows must form one root-to-node path, so each kept position has exactly one cell and the
// sequence reads as if the path had been decoded linearly. Throws Error if the cell count does not
// match (the cache changed since that batch).
void kv_tree_commit(KvCache& kv, int seq, int32_t pos0, const std::vector<uint8_t>& keep);

}  // namespace bee
