// spec/depth_prior: what the depth policy learnt in earlier requests, for the next one. A fresh request
// used to start knowing nothing about its drafters' acceptance: the profit controller spent warm-up
// cycles at the full depth and a losing streak (off_dwell) before it stopped drafting, about 0.3 extra
// verify rows per decode on a 64-token open-ended answer — the difference between 0.92x and 1.0x on
// SmolLM2. The prior keeps, per process and per set of drafter types (SpecShared), the survival and
// reach per draft position and the tree width; each request's policy starts from it (Speculator::begin)
// and folds its own estimates back when it ends (Speculator::end).
//
// Decay: a request moves the prior only a fraction `weight` of the way towards its own estimates (and
// its estimates themselves started from the prior, so a request with few cycles moves it little), so
// one unusual request cannot poison it; a run of requests of a new kind takes over in a few requests.
// Used from the one inference thread (run loop / server scheduler), so it has no lock.
#pragma once
#include <vector>

namespace bee {

class DepthPrior {
public:
    struct Stat {
        double v = 0;
        bool known = false;
    };
    // weight <= 0: the prior never learns (each request starts from nothing, as before the prior).
    explicit DepthPrior(double weight = 0.3) : weight_(weight) {}

    // Folds one finished request's estimates: survival[pos] = P(accepted > pos), reach[pos] =
    // P(drafted > pos), own[pos] = whether the request measured position pos itself (positions it never
    // drafted keep the prior's value), width = draft rows per drafted position (< 0: none measured).
    // draft_ms: the drafting time of a cycle that called the drafters (< 0: none measured).
    void fold(const std::vector<double>& survival, const std::vector<double>& reach, const std::vector<bool>& own,
              double width, double draft_ms = -1);

    int n_requests() const { return n_requests_; }
    bool known() const { return n_requests_ > 0; }
    const std::vector<Stat>& survival() const { return survival_; }
    const std::vector<Stat>& reach() const { return reach_; }
    const Stat& width() const { return width_; }
    const Stat& draft_ms() const { return draft_ms_; }
    double weight() const { return weight_; }

private:
    void blend(Stat& s, double x) const;

    double weight_;
    int n_requests_ = 0;
    std::vector<Stat> survival_, reach_;  // [pos]
    Stat width_, draft_ms_;
};

}  // namespace bee
