// tests/unit/common/isa: helpers to run a test on every ISA path this CPU supports.
#pragma once
#include <vector>

#include "base/cpu.h"

namespace bee::test {

// Every ISA this machine runs, scalar first.
inline std::vector<Isa> all_isas() {
    std::vector<Isa> v;
    for (int i = 0; i <= (int)cpu_isa_max(); i++) v.push_back((Isa)i);
    return v;
}

// Sets the ISA for a scope and restores the previous one.
struct IsaScope {
    Isa saved;
    explicit IsaScope(Isa isa) : saved(cpu_isa()) { cpu_set_isa(isa); }
    ~IsaScope() { cpu_set_isa(saved); }
};

}  // namespace bee::test
