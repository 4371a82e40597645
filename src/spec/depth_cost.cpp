// spec/depth_cost: the verify cost curve the profit controller weighs depths against (depth_policy.h).
#include <algorithm>
#include <cmath>
#include <iterator>

#include "spec/depth_policy.h"

namespace bee {

int VerifyCostModel::bucket(int32_t n_past) {
    constexpr int32_t kEdges[] = {8192, 16384, 32768, 65536, 98304};
    int b = 0;
    while (b < (int)std::size(kEdges) && n_past >= kEdges[b]) b++;
    return b;
}

// Row counts 0..16 each have a bin; above, ranges that widen with the count (bin edges below).
int VerifyCostModel::bin(double rows) {
    constexpr int kEdges[] = {17,  20,  24,  28,  32,  40,  48,  56,  64,  80,  96,
                              112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640};
    static_assert(17 + std::size(kEdges) <= kBins);
    const int r = std::max(0, (int)std::lround(rows));
    if (r < 17) return r;
    int b = 0;
    while (b + 1 < (int)std::size(kEdges) && r >= kEdges[b + 1]) b++;
    return 17 + b;
}

void VerifyCostModel::add(int32_t n_past, double rows, double cycle_ms) {
    if (!(cycle_ms > 0)) return;
    Bin& b = lines_[bucket(n_past)][bin(rows)];
    const double w = std::max(alpha_, 1.0 / (b.n + 1));  // a running mean first, then the EWMA
    b.x += w * (std::max(rows, 0.0) - b.x);
    b.ms += w * (cycle_ms - b.ms);
    b.n++;
}

double VerifyCostModel::predict(int32_t n_past, double rows) const {
    const auto& line = lines_[bucket(n_past)];
    rows = std::max(rows, 0.0);
    const Bin* first = nullptr;
    const Bin* last = nullptr;
    const Bin* below = nullptr;  // the last measured bin at or below `rows`, and the first above it
    const Bin* above = nullptr;
    for (const Bin& b : line) {
        if (b.n == 0) continue;
        if (!first) first = &b;
        last = &b;
        if (b.x <= rows) below = &b;
        else if (!above) above = &b;
    }
    if (!first) return -1.0;
    if (first == last) return std::abs(first->x - rows) < 0.5 ? first->ms : -1.0;  // no line through one count
    if (below && above) return below->ms + (above->ms - below->ms) * (rows - below->x) / (above->x - below->x);
    const double slope = std::max(0.0, (last->ms - first->ms) / (last->x - first->x));
    const double ms = below ? last->ms + slope * (rows - last->x) : first->ms - slope * (first->x - rows);
    return std::max(ms, 0.25 * first->ms);
}

}  // namespace bee
