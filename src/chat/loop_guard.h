// chat/loop_guard: the reasoning-loop guard (spec modelfree-and-server.md A.4). Watches generated token
// ids and says when a thinking model is stuck repeating itself, inside <think> or in visible text.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bee::chat {

enum class LoopGuardMode { Off, ForceClose, Stop };

// Parses "off" | "force-close" | "stop"; throws bee::Error naming `where` (a flag or JSON field) otherwise.
LoopGuardMode parse_loop_guard_mode(std::string_view text, std::string_view where);
const char* loop_guard_mode_name(LoopGuardMode mode);

// Defaults are the spec's (A.4). CLI: --reasoning-loop-<name with dashes>; JSON: reasoning_loop_<name>.
struct LoopGuardParams {
    LoopGuardMode mode = LoopGuardMode::ForceClose;
    int32_t min_tokens = 1024;    // reasoning tokens seen before the reasoning region is checked
    int32_t window = 2048;        // tokens kept per region (ring tail)
    int32_t max_period = 512;     // longest period detector 1 looks for
    int32_t min_coverage = 768;   // tokens a repetition must cover to count
    int32_t check_interval = 32;  // check every this many tokens of a region
    int32_t interventions = 1;    // force-closes allowed before the guard stops instead

    // Throws bee::Error if a value is out of range: all positive, window >= min_coverage,
    // max_period <= window / 3, min_tokens >= min_coverage. `where` prefixes the message.
    void validate(std::string_view where) const;
};

enum class LoopAction { None, ForceClose, Stop };

struct LoopVerdict {
    LoopAction action = LoopAction::None;
    const char* reason = "";  // "periodic_tail" | "ngram_dominance" | "low_entropy" when triggered
    int32_t period = 0;       // the period found by "periodic_tail"
    bool triggered() const { return action != LoopAction::None; }
};

const char* loop_action_name(LoopAction action);  // "none" | "force-close" | "stop"

// One guard per generation. Call observe() for every sampled token except end-of-generation tokens and
// tokens the server injects itself (the forced end-of-thinking sequence). On ForceClose the caller
// injects the end-of-thinking sequence (or stops, if it cannot); on Stop it finishes the request with
// stop_type "limit" and stop_detail "loop_guard".
class LoopGuard {
public:
    explicit LoopGuard(const LoopGuardParams& params);

    LoopVerdict observe(int32_t token, bool in_reasoning);

    int32_t interventions_used() const { return interventions_used_; }
    int64_t reasoning_tokens() const { return reasoning_.seen; }
    int64_t visible_tokens() const { return visible_.seen; }

private:
    // The last `window` token ids of one region, oldest first when read with tail().
    struct Region {
        std::vector<int32_t> ring;
        size_t next = 0;  // slot the next token goes to
        int64_t seen = 0;
        std::vector<int32_t> tail() const;
    };
    LoopVerdict check(const Region& region, bool reasoning) const;

    LoopGuardParams params_;
    Region reasoning_, visible_;
    int32_t interventions_used_ = 0;
};

// The three detectors on a tail (oldest first), exposed for tests. Each returns true when it triggers.
bool loop_periodic_tail(const std::vector<int32_t>& tail, const LoopGuardParams& params, int32_t* period);
bool loop_ngram_dominance(const std::vector<int32_t>& tail, const LoopGuardParams& params);
bool loop_low_entropy(const std::vector<int32_t>& tail, const LoopGuardParams& params);

}  // namespace bee::chat
