// tests/unit/spec/spec_test_util: building one drafter by name over a tiny model, and drafting a chain.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "../model/tiny_model.h"
#include "spec/registry.h"

namespace bee::test {

// One drafter of kind `name` with its own shared state (kept alive by the returned holder).
struct DrafterHolder {
    std::unique_ptr<SpecShared> shared;
    std::unique_ptr<Drafter> drafter;
    Drafter* operator->() { return drafter.get(); }
    Drafter& operator*() { return *drafter; }
};

inline DrafterHolder make_drafter(const std::string& name, SpecParams p, const Model& target) {
    p.types = {name};
    DrafterHolder h;
    h.shared = std::make_unique<SpecShared>(p, target);
    DrafterEnv env{h.shared->params(), target, h.shared->get(name)};
    h.drafter = find_drafter_kind(name)->make(env);
    return h;
}

// The draft for (history, id_last) as a token list (chains only).
inline std::vector<int32_t> draft_chain(Drafter& d, const std::vector<int32_t>& history, int32_t id_last,
                                        int n_max = 64) {
    DraftTree t;
    DraftRequest req{history, id_last, n_max, 0.0f};
    d.draft(req, t);
    std::vector<int32_t> out;
    for (const DraftNode& n : t.nodes) out.push_back(n.token);
    EXPECT_TRUE(t.is_chain());
    return out;
}

// tokens 100..100+n-1
inline std::vector<int32_t> run_of(int n, int first = 100) {
    std::vector<int32_t> v;
    for (int i = 0; i < n; i++) v.push_back(first + i);
    return v;
}

inline std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace bee::test
