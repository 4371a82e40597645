// model/offload_place: -ot parsing and the placement of layers and the output head (OffloadPlan) from -ngl
// and -ot; the same in every build (without Vulkan the plan is simply not used).
#include <regex>

#include "base/error.h"
#include "model/model.h"
#include "model/offload.h"

namespace bee {

namespace {

constexpr const char* kOtHelp =
    "-ot takes PATTERN=BUFTYPE[,PATTERN=BUFTYPE...], e.g. -ot 'blk\\.(1[0-9])\\.ffn_.*=CPU'";

std::regex compile(const TensorOverride& o) {
    try {
        return std::regex(o.pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
        fail("-ot '%s=%s': the pattern is not a valid regular expression (%s); %s", o.pattern.c_str(), o.buffer.c_str(),
             e.what(), kOtHelp);
    }
}

// "blk.12.attn_q.weight" -> 12; -1 for a tensor outside the decoder layers.
int tensor_layer(const std::string& name, int n_layer) {
    if (name.compare(0, 4, "blk.") != 0) return -1;
    size_t i = 4;
    int il = 0;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9' && il < 1000000) il = il * 10 + (name[i++] - '0');
    if (i == 4 || i >= name.size() || name[i] != '.' || il >= n_layer) return -1;
    return il;
}

}  // namespace

void parse_tensor_overrides(const std::string& value, std::vector<TensorOverride>* out) {
    std::vector<TensorOverride> got;  // appended only when the whole value is good
    size_t start = 0;
    while (start <= value.size()) {
        size_t end = value.find(',', start);
        if (end == std::string::npos) end = value.size();
        const std::string item = value.substr(start, end - start);
        const size_t eq = item.rfind('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
            fail("-ot '%s': '%s' is not PATTERN=BUFTYPE; %s", value.c_str(), item.c_str(), kOtHelp);
        TensorOverride o;
        o.pattern = item.substr(0, eq);
        o.buffer = item.substr(eq + 1);
        const std::string& b = o.buffer;
        if (b == "CPU" || b == "cpu") {
            o.device = -1;
        } else if (b.size() > 6 && (b.compare(0, 6, "Vulkan") == 0 || b.compare(0, 6, "vulkan") == 0) &&
                   b.find_first_not_of("0123456789", 6) == std::string::npos && b.size() < 12) {
            o.device = std::stoi(b.substr(6));
        } else {
            fail(
                "-ot '%s': unknown buffer type '%s': Bee's are CPU and the Vulkan devices `bee --list-devices` "
                "prints (Vulkan0, Vulkan1, ...)",
                value.c_str(), b.c_str());
        }
        compile(o);  // a bad regex is refused at the command line already
        got.push_back(std::move(o));
        start = end + 1;
    }
    out->insert(out->end(), got.begin(), got.end());
}

int OffloadPlan::n_device_layers() const {
    int n = 0;
    for (bool d : layers) n += d;
    return n;
}

std::string OffloadPlan::describe() const {
    std::string s;
    const int n = (int)layers.size();
    for (int il = 0; il < n;) {
        if (!layers[(size_t)il]) {
            il++;
            continue;
        }
        int e = il;
        while (e + 1 < n && layers[(size_t)e + 1]) e++;
        s += strfmt("%s%d", s.empty() ? "layers " : ", ", il);
        if (e > il) s += strfmt("..%d", e);
        il = e + 1;
    }
    if (head) s += s.empty() ? "the output head" : " and the output head";
    return s.empty() ? "nothing" : s;
}

OffloadPlan plan_offload(const Model& model, const OffloadParams& p) {
    const HParams& hp = model.hparams();
    const int n_layer = hp.n_layer;
    const int ngl = std::max(0, p.n_gpu_layers);
    OffloadPlan plan;
    plan.layers.assign((size_t)n_layer, false);
    for (int il = std::max(0, n_layer - ngl); il < n_layer; il++) plan.layers[(size_t)il] = true;
    plan.head = ngl >= n_layer;
    if (p.overrides.empty()) return plan;

    std::vector<std::regex> res;
    for (const TensorOverride& o : p.overrides) {
        res.push_back(compile(o));
        if (o.device < 0) continue;
        if (plan.device >= 0 && plan.device != o.device)
            fail("-ot: Vulkan%d and Vulkan%d named: Bee runs the offloaded layers on one device; name one", plan.device,
                 o.device);
        plan.device = o.device;
    }
    const bool tied = model.gguf().find_tensor("output.weight") == nullptr;
    // Per layer (and, at n_layer, the head): whether a tensor was sent to the CPU, or to the device.
    std::vector<char> to_cpu((size_t)n_layer + 1, 0), to_dev((size_t)n_layer + 1, 0);
    std::vector<int> hits(p.overrides.size(), 0);
    for (const GgufTensor& t : model.gguf().tensors()) {
        size_t k = 0;
        while (k < res.size() && !std::regex_search(t.name, res[k])) k++;
        if (k == res.size()) continue;
        hits[k]++;
        const bool dev = p.overrides[k].device >= 0;
        int slot = tensor_layer(t.name, n_layer);
        if (slot < 0 &&
            (t.name == "output.weight" || t.name == "output_norm.weight" || (tied && t.name == "token_embd.weight")))
            slot = n_layer;
        if (slot >= 0) {
            (dev ? to_dev : to_cpu)[(size_t)slot] = 1;
        } else if (dev) {
            plan.notes.push_back(t.name +
                                 " stays in host memory (token embeddings and other tensors outside the "
                                 "layers and the head always run on the CPU)");
        }
    }
    for (size_t k = 0; k < hits.size(); k++)
        if (!hits[k])
            fail(
                "-ot '%s=%s': the pattern finds no tensor of this model (names look like blk.0.attn_q.weight, "
                "blk.0.ffn_up.weight, output.weight; `bee gguf info MODEL` lists them): fix the pattern or drop it",
                p.overrides[k].pattern.c_str(), p.overrides[k].buffer.c_str());
    for (int il = 0; il <= n_layer; il++) {
        const bool on = to_cpu[(size_t)il]   ? false
                        : to_dev[(size_t)il] ? true
                                             : (il < n_layer ? (bool)plan.layers[(size_t)il] : plan.head);
        if (il < n_layer) plan.layers[(size_t)il] = on;
        else plan.head = on;
    }
    return plan;
}

}  // namespace bee
