// spec/depth_cost: the verify cost curve the profit controller weighs depths against (depth_policy.h).
#include <algorithm>

#include "spec/depth_policy.h"

namespace bee {

int VerifyCostModel::bucket(int32_t n_past) {
    constexpr int32_t kEdges[] = {8192, 16384, 32768, 65536, 98304};
    int b = 0;
    while (b < (int)std::size(kEdges) && n_past >= kEdges[b]) b++;
    return b;
}

void VerifyCostModel::add(int32_t n_past, double rows, double cycle_ms) {
    Line& l = lines_[bucket(n_past)];
    const auto ewma = [this](double& v, int n, double x) { v = n == 0 ? x : v + alpha_ * (x - v); };
    const double x = std::max(rows, 0.0);
    ewma(l.mx, l.n_fit, x);
    ewma(l.my, l.n_fit, cycle_ms);
    ewma(l.mxx, l.n_fit, x * x);
    ewma(l.mxy, l.n_fit, x * cycle_ms);
    l.n_fit++;
    if (rows <= 0) {
        ewma(l.base, l.n_base, cycle_ms);
        l.n_base++;
        return;
    }
    if (l.n_base == 0) return;  // the extra cost is measured against the plain cycle
    ewma(l.dy, l.n_drafted, cycle_ms - l.base);
    ewma(l.rows, l.n_drafted, rows);
    l.n_drafted++;
}

bool VerifyCostModel::Line::fit(double& a, double& b) const {
    constexpr int kMinSamples = 4;
    const double var = mxx - mx * mx;
    if (n_fit < kMinSamples || var < 0.25) return false;  // rows must vary by about a row or more
    b = std::max(0.0, (mxy - mx * my) / var);
    a = my - b * mx;
    return a > 0;
}

double VerifyCostModel::predict(int32_t n_past, double rows) const {
    const Line& l = lines_[bucket(n_past)];
    if (l.n_base == 0) {  // no plain cycle timed alone: the fit over shared steps, if it has one
        double a = 0, b = 0;
        return l.fit(a, b) ? a + std::max(rows, 0.0) * b : -1.0;
    }
    if (rows <= 0) return l.base;
    if (l.n_drafted == 0 || l.rows <= 0) return -1.0;
    return l.base + rows * std::max(0.0, l.dy / l.rows);
}

}  // namespace bee
