// model/arch/registry: the one table of supported architectures. Add a row to add an architecture.
#include "model/arch/arch.h"

namespace bee {

extern const ArchDef kArchLlama;
extern const ArchDef kArchQwen2;
extern const ArchDef kArchQwen3;
extern const ArchDef kArchGemma3;
extern const ArchDef kArchQwen35;

static const ArchDef* const kArchs[] = {&kArchLlama, &kArchQwen2, &kArchQwen3, &kArchGemma3, &kArchQwen35};

const ArchDef* find_arch(const std::string& name) {
    for (const ArchDef* a : kArchs)
        if (name == a->name) return a;
    return nullptr;
}

std::string supported_archs() {
    std::string s;
    for (const ArchDef* a : kArchs) {
        if (!s.empty()) s += ", ";
        s += a->name;
    }
    return s;
}

}  // namespace bee
