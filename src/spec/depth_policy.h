// spec/depth_policy: picks each sequence's next draft depth (0 = do not draft this cycle) from measured
// acceptance and cycle times — fixed, profit and fringe (drafters.md 2.9, --spec-dm-*).
#pragma once
#include <array>
#include <cstdint>
#include <memory>

#include "spec/depth_prior.h"
#include "spec/spec_params.h"

namespace bee {

// One finished speculative cycle of a sequence.
struct CycleRecord {
    int depth = 0;      // the cap asked of the drafters (0: a plain, non-speculative cycle)
    int n_drafted = 0;  // draft tokens on the longest path actually proposed (<= depth)
    int n_accepted = 0;
    double draft_ms = 0;  // time in the drafters
    double cycle_ms = 0;  // draft + verify decode + verification + commit
    bool timed = true;    // false: the cycle shared its decode with other sequences (timing unusable)
    int n_nodes = -1;     // draft rows in the verify batch (a tree's nodes); -1: n_drafted (a chain)
    int32_t n_past = 0;   // tokens in the sequence's cache before the cycle (picks the context bucket)
};

// The step cost curve of this process (model, machine, threads): the ms of a decode step as a function of
// its rows beyond one (`rows`: a sequence's draft rows when it decodes alone; every row but one in a server
// step several slots share), drafting, verification and commit included. On a small model on a CPU every
// row pays the whole network and the output head, so the curve is steep (SmolLM2 on 2 cores: +22-26% of a
// plain decode per row) and a depth is worth drafting only if its expected accepted tokens beat it; a
// step four slots share pays each extra row at nearly the same price (Gemma 3: the 262k-entry output head)
// while its base is already four rows.
// Learnt online from timed cycles and shared steps: per row count (exact up to 16 rows, then ranges) an
// average of the step ms (a running mean over the first samples, then an EWMA); between measured counts
// the curve is linear, beyond them it goes on with the slope across the whole measured span (never
// negative). It is a property of the process, not of a request, so SpecShared keeps one that every
// sequence's profit controller shares (a new request starts with the curve known); one curve per context
// bucket (<8K, <16K, <32K, <64K, <96K, >=96K tokens: attention grows with the context). Used from the one
// inference thread (run loop / server scheduler), so it has no lock.
class VerifyCostModel {
public:
    explicit VerifyCostModel(double alpha = 0.05) : alpha_(alpha) {}
    void add(int32_t n_past, double rows, double cycle_ms);  // rows 0: a plain (no draft) cycle alone
    // Predicted step ms with `rows` rows beyond one at context n_past; negative: not measured yet (no
    // sample at that row count, and fewer than two counts measured to draw the line through).
    double predict(int32_t n_past, double rows) const;
    bool has_baseline(int32_t n_past, double rows = 0) const { return predict(n_past, rows) > 0; }
    static int bucket(int32_t n_past);

private:
    static constexpr int kBins = 40;
    static int bin(double rows);
    struct Bin {
        double x = 0, ms = 0;  // averages of the samples' rows and ms
        int n = 0;
    };
    double alpha_;
    std::array<std::array<Bin, kBins>, 6> lines_{};
};

class DepthPolicy {
public:
    virtual ~DepthPolicy() = default;
    // The depth cap for the next cycle, in [0, base]; base = the drafters' own longest draft.
    virtual int next(int base) = 0;
    virtual void record(const CycleRecord& c) = 0;
    virtual const char* name() const = 0;
    // The step the next cycle joins (a server's shared batch): rows the other sequences decode in it and
    // tokens they are expected to emit. A draft row then slows every sequence of the step, so the profit
    // controller weighs the step's throughput: (other_tokens + 1 + E(n)) / cost(other_rows + rows(n)).
    // 0, 0 (the default): the cycle decodes this sequence alone.
    virtual void set_batch(int other_rows, int other_tokens) {
        (void)other_rows;
        (void)other_tokens;
    }
    // A request starts: begin from what earlier requests learnt (depth_prior.h). Policies that keep no
    // estimates ignore it.
    virtual void seed(const DepthPrior& prior) { (void)prior; }
    // The request ended: fold this request's estimates into the prior.
    virtual void fold(DepthPrior& prior) const { (void)prior; }
};

// "fixed" when !p.adaptive, else p.controller ("profit" or "fringe"). Throws Error on an unknown name.
// `cost`: the process's verify cost curve (profit only; nullptr: the policy learns its own).
std::unique_ptr<DepthPolicy> make_depth_policy(const DepthParams& p, std::shared_ptr<VerifyCostModel> cost = nullptr);

std::unique_ptr<DepthPolicy> make_profit_policy(const DepthParams& p, std::shared_ptr<VerifyCostModel> cost);
std::unique_ptr<DepthPolicy> make_fringe_policy(const DepthParams& p);

}  // namespace bee
