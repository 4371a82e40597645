// server/model_presets: the folder scan, the preset INI parser and the key -> flag translation.
#include "server/model_presets.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"

namespace bee::server {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Files a folder model may hold beside its weights, which are never models of their own: llama-server's
// projector (`mmproj` in the name) and drafter prefixes.
bool is_mmproj_file(const std::string& name) { return name.find("mmproj") != std::string::npos; }
bool is_draft_file(const std::string& name) {
    for (const char* p : {"mtp-", "dspark-", "dflash-"})
        if (name.rfind(p, 0) == 0) return true;
    return false;
}

std::vector<fs::directory_entry> sorted_entries(const std::string& dir) {
    std::vector<fs::directory_entry> out;
    for (const fs::directory_entry& e : fs::directory_iterator(dir)) out.push_back(e);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path() < b.path(); });
    return out;
}

// A sub-folder model: its weights (the first shard of a split file), and a drafter beside them.
void scan_subdir(const fs::directory_entry& dir, std::map<std::string, ModelSpec>& out) {
    std::string model, shard, draft;
    for (const fs::directory_entry& f : sorted_entries(dir.path().string())) {
        const std::string fname = f.path().filename().string();
        if (!f.is_regular_file() || !ends_with(fname, ".gguf")) continue;
        if (is_mmproj_file(fname)) {
            BEE_LOG_INFO("%s: ignored (Bee has no image projector)", f.path().c_str());
        } else if (is_draft_file(fname)) {
            if (draft.empty()) draft = f.path().string();
        } else if (fname.find("-00001-of-") != std::string::npos) {
            shard = f.path().string();
        } else {
            model = f.path().string();
        }
    }
    if (!shard.empty()) model = shard;
    if (model.empty()) return;
    ModelSpec& m = out[dir.path().filename().string()];
    m.args = {"-m", model};
    if (!draft.empty()) m.args.insert(m.args.end(), {"-md", draft});
}

std::map<std::string, ModelSpec> scan_models_dir(const std::string& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        fail("--models-dir %s: not a directory (give the folder that holds the .gguf files)", dir.c_str());
    std::map<std::string, ModelSpec> out;
    for (const fs::directory_entry& e : sorted_entries(dir)) {
        const std::string fname = e.path().filename().string();
        if (e.is_directory()) {
            scan_subdir(e, out);
        } else if (e.is_regular_file() && ends_with(fname, ".gguf") && !is_mmproj_file(fname) &&
                   !is_draft_file(fname)) {
            out[fname.substr(0, fname.size() - 5)].args = {"-m", e.path().string()};
        }
    }
    for (auto& [name, m] : out) {
        m.name = name;
        m.source = "models_dir";
    }
    return out;
}

// "repo:q4_k_m" -> "repo:Q4_K_M", "repo:model-q8_0" -> "repo:Q8_0": the tag after the last ':' as
// llama-server canonicalizes a quantization tag (the part after its last '-' or '.', upper-cased).
std::string canonical_section_name(const std::string& name) {
    const size_t colon = name.rfind(':');
    if (colon == std::string::npos || name == "*") return name;
    std::string tag = name.substr(colon + 1);
    const size_t sep = tag.find_last_of("-.");
    if (sep != std::string::npos && sep + 1 < tag.size()) {
        const std::string tail = tag.substr(sep + 1);
        if (std::all_of(tail.begin(), tail.end(), [](char c) { return isalnum((unsigned char)c) || c == '_'; }))
            tag = tail;
    }
    for (char& c : tag) c = (char)toupper((unsigned char)c);
    return name.substr(0, colon + 1) + tag;
}

// llama.cpp environment names whose flag is not the name itself (LLAMA_ARG_CTX_SIZE -> --ctx-size is).
const std::pair<const char*, const char*> kEnvFlags[] = {
    {"LLAMA_ARG_BATCH", "--batch-size"},
    {"LLAMA_ARG_UBATCH", "--ubatch-size"},
    {"LLAMA_ARG_N_PARALLEL", "--parallel"},
    {"LLAMA_ARG_ROPE_SCALING_TYPE", "--rope-scaling"},
    {"LLAMA_ARG_CHECKPOINT_MIN_SPACING_NT", "--checkpoint-min-step"},
    {"LLAMA_ARG_DIO", "--direct-io"},
    {"LLAMA_ARG_FIT_ESTIMATE", "--fit-print"},
    {"LLAMA_ARG_STATIC_PATH", "--path"},
    {"LLAMA_ARG_ENDPOINT_METRICS", "--metrics"},
    {"LLAMA_ARG_ENDPOINT_PROPS", "--props"},
    {"LLAMA_ARG_ENDPOINT_SLOTS", "--slots"},
    {"LLAMA_ARG_THINK", "--reasoning-format"},
    {"LLAMA_ARG_THINK_BUDGET", "--reasoning-budget"},
    {"LLAMA_ARG_THINK_BUDGET_MESSAGE", "--reasoning-budget-message"},
    {"LLAMA_ARG_SPEC_DRAFT_HF_REPO", "--hf-repo-draft"},
    {"LLAMA_ARG_SPEC_DRAFT_CACHE_TYPE_K", "--cache-type-k-draft"},
    {"LLAMA_ARG_SPEC_DRAFT_CACHE_TYPE_V", "--cache-type-v-draft"},
    {"LLAMA_API_KEY", "--api-key"},
    {"HF_TOKEN", "--hf-token"},
    {"MTMD_BACKEND_DEVICE", "--mmproj-device"},
};

// The flag name a key stands for, without dashes: "ctx-size" for ctx-size and LLAMA_ARG_CTX_SIZE.
std::string key_base(const std::string& key) {
    if (key.rfind("LLAMA_ARG_", 0) != 0) return key;
    std::string f = key.substr(10);
    for (char& c : f) c = c == '_' ? '-' : (char)tolower((unsigned char)c);
    return f;
}

// A preset key as a flag: a long or short name without dashes ("ctx-size", "c") or an environment name
// ("LLAMA_ARG_CTX_SIZE"). Empty when `bee serve` has no such flag.
std::string key_flag(const std::string& key, const FlagLookup& has_flag, bool* takes_value) {
    std::vector<std::string> tries;
    for (const auto& [env, flag] : kEnvFlags)
        if (key == env) tries.push_back(flag);
    if (key.rfind("LLAMA_ARG_", 0) == 0) {
        tries.push_back("--" + key_base(key));
    } else {
        tries.push_back("--" + key);
        tries.push_back("-" + key);
    }
    for (const std::string& f : tries)
        if (has_flag(f, takes_value)) return f;
    return "";
}

// Flags that belong to the router (its address, keys and model list), dropped from a model's flags.
bool is_router_flag(const std::string& f) {
    static const char* kRouter[] =
        {"--host",          "--port",       "--api-key",         "--api-key-file",       "--models-dir",
         "--models-preset", "--models-max", "--models-autoload", "--no-models-autoload", "--ssl-key-file",
         "--ssl-cert-file"};
    return std::any_of(std::begin(kRouter), std::end(kRouter), [&](const char* r) { return f == r; });
}

// Adds one preset key to `m`: preset-only keys, alias/tags, or `bee serve` flags (a boolean flag set
// false becomes its --no- form, or nothing when there is none).
void apply_key(ModelSpec& m, const std::string& key, const std::string& value, const FlagLookup& has_flag,
               const std::string& path) {
    if (key == "stop-timeout" || key == "dedup-cache-models") return;  // nothing to do in-process (see README)
    if (key == "load-on-startup") {
        m.load_on_startup = is_truthy(value);
        return;
    }
    if (key == "tags" || key == "LLAMA_ARG_TAGS") {
        for (const std::string& t : split_list(value)) m.tags.push_back(t);
        return;
    }
    bool takes_value = false;
    const std::string flag = key_flag(key, has_flag, &takes_value);
    if (flag == "--alias" || flag == "-a") {
        for (const std::string& a : split_list(value)) m.aliases.push_back(a);
        return;
    }
    if (is_router_flag(flag)) return;
    if (flag.empty()) {
        // A boolean that `bee serve` has only in its --no- form: true is the default, false is that flag.
        bool neg_value = true;
        const std::string neg = "--no-" + key_base(key);
        if (has_flag(neg, &neg_value) && !neg_value && (is_truthy(value) || is_falsey(value))) {
            if (is_falsey(value)) m.args.push_back(neg);
            return;
        }
        fail(
            "%s: option '%s' not recognized in preset '%s' (keys are bee serve flags without their dashes, "
            "e.g. ctx-size = 4096, or LLAMA_ARG_ names)",
            path.c_str(), key.c_str(), m.name.c_str());
    }
    if (takes_value) {
        m.args.insert(m.args.end(), {flag, value});
    } else if (!is_falsey(value)) {
        m.args.push_back(flag);
    } else if (flag.rfind("--", 0) == 0) {  // false: the opposite flag, if there is one
        const std::string other = flag.rfind("--no-", 0) == 0 ? "--" + flag.substr(5) : "--no-" + flag.substr(2);
        bool other_value = true;
        if (has_flag(other, &other_value) && !other_value) m.args.push_back(other);
    }
}

std::string ini_text(const std::string& name, const std::vector<std::pair<std::string, std::string>>& keys) {
    std::string s = "[" + name + "]\n";
    for (const auto& [k, v] : keys) s += k + " = " + v + "\n";
    return s + "\n";
}

}  // namespace

std::vector<std::string> split_list(const std::string& s, bool trim) {
    std::vector<std::string> out;
    size_t at = 0;
    while (at <= s.size()) {
        size_t end = s.find(',', at);
        if (end == std::string::npos) end = s.size();
        std::string item = s.substr(at, end - at);
        if (trim) {
            item.erase(0, item.find_first_not_of(" \t"));
            item.erase(item.find_last_not_of(" \t") + 1);
        }
        if (!item.empty()) out.push_back(item);
        at = end + 1;
    }
    return out;
}

bool is_truthy(const std::string& v) { return v == "on" || v == "enabled" || v == "true" || v == "1"; }
bool is_falsey(const std::string& v) { return v == "off" || v == "disabled" || v == "false" || v == "0"; }

std::vector<IniSection> parse_preset_ini(const std::string& text, const std::string& path) {
    std::vector<IniSection> out;
    std::map<std::string, size_t> index;
    auto section = [&](const std::string& name) -> IniSection& {
        auto it = index.find(name);
        if (it == index.end()) {
            it = index.emplace(name, out.size()).first;
            out.push_back({name, {}});
        }
        return out[it->second];
    };
    IniSection* cur = nullptr;
    size_t at = 0;
    for (int line_no = 1; at < text.size(); line_no++) {
        size_t end = text.find_first_of("\r\n", at);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(at, end - at);
        at = end + (text.compare(end, 2, "\r\n") == 0 ? 2 : 1);
        // A comment runs from ';' or '#' to the end of the line; blanks around what is left do not count.
        const size_t hash = line.find_first_of(";#");
        if (hash != std::string::npos) line.resize(hash);
        line.erase(0, line.find_first_not_of(" \t"));
        line.erase(line.find_last_not_of(" \t") + 1);
        if (line.empty()) continue;
        auto bad = [&](const char* why) {
            fail("%s:%d: %s (expected [section], key = value, or a ; comment)", path.c_str(), line_no, why);
        };
        if (line[0] == '[') {
            if (line.back() != ']') bad("a section header must end with ]");
            std::string name = line.substr(1, line.size() - 2);
            name.erase(0, name.find_first_not_of(" \t"));
            name.erase(name.find_last_not_of(" \t") + 1);
            if (name.empty() || name.find(']') != std::string::npos) bad("bad section name");
            name = canonical_section_name(name);
            if (index.count(name)) {  // as llama-server: a repeated header starts the section over
                BEE_LOG_WARN("%s:%d: section [%s] given again: its earlier keys are dropped", path.c_str(), line_no,
                             name.c_str());
                section(name).keys.clear();
            }
            cur = &section(name);
            continue;
        }
        const size_t eq = line.find('=');
        if (eq == std::string::npos) bad("no '=' in this line");
        std::string key = line.substr(0, eq);
        key.erase(key.find_last_not_of(" \t") + 1);
        const bool ident = !key.empty() && (isalpha((unsigned char)key[0]) || key[0] == '_') &&
                           std::all_of(key.begin(), key.end(), [](char c) {
                               return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-';
                           });
        if (!ident) bad("a key is letters, digits, '_', '.' and '-', starting with a letter or '_'");
        std::string value = line.substr(eq + 1);
        value.erase(0, value.find_first_not_of(" \t"));
        if (key == "version") continue;  // the format's version: reserved, no option
        if (!cur) cur = &section("default");
        auto& keys = cur->keys;
        auto same = std::find_if(keys.begin(), keys.end(), [&](const auto& kv) { return kv.first == key; });
        if (same != keys.end()) same->second = value;  // the last value of a key wins
        else keys.emplace_back(key, value);
    }
    return out;
}

std::vector<ModelSpec> collect_model_specs(const std::string& models_dir, const std::string& preset_file,
                                           const FlagLookup& has_flag) {
    std::map<std::string, ModelSpec> models;
    if (!models_dir.empty()) models = scan_models_dir(models_dir);
    std::vector<IniSection> sections;
    if (!preset_file.empty()) {
        std::error_code ec;
        if (!fs::is_regular_file(preset_file, ec)) fail("--models-preset %s: no such file", preset_file.c_str());
        sections = parse_preset_ini(read_file(preset_file), preset_file);
    }
    const IniSection* global = nullptr;
    for (const IniSection& s : sections)
        if (s.name == "*") global = &s;
    auto apply_section = [&](ModelSpec& m, const IniSection& s) {
        for (const auto& [k, v] : s.keys) apply_key(m, k, v, has_flag, preset_file);
    };
    // Every model gets [*] first; a section adds its keys after (so they win), and makes a model of its own
    // when no file of the folder has its name.
    for (auto& [name, m] : models) {
        m.preset = ini_text(name, {{"model", m.args[1]}});
        if (global) apply_section(m, *global);
    }
    for (const IniSection& s : sections) {
        if (s.name == "*" || (s.name == "default" && s.keys.empty())) continue;
        auto it = models.find(s.name);
        const bool from_dir = it != models.end();
        ModelSpec& m = models[s.name];
        if (!from_dir) {
            m.name = s.name;
            if (global) apply_section(m, *global);
        }
        m.source = "preset";
        apply_section(m, s);
        std::vector<std::pair<std::string, std::string>> keys;
        if (from_dir) keys.emplace_back("model", m.args[1]);
        if (global) keys.insert(keys.end(), global->keys.begin(), global->keys.end());
        keys.insert(keys.end(), s.keys.begin(), s.keys.end());
        m.preset = ini_text(s.name, keys);
        const bool has_model = std::find(m.args.begin(), m.args.end(), "-m") != m.args.end() ||
                               std::find(m.args.begin(), m.args.end(), "--model") != m.args.end();
        if (!has_model && s.name == "default")
            fail(
                "%s: keys before the first [section] make a model named 'default', which has no model file: put "
                "them under [*] to apply them to every model",
                preset_file.c_str());
        if (!has_model)
            fail(
                "%s: preset '%s' has no model file: add model = /path/to/file.gguf (or name the section after a "
                "file of --models-dir)",
                preset_file.c_str(), s.name.c_str());
    }
    // Names and aliases must each lead to one model.
    std::map<std::string, std::string> owner;
    for (const auto& [name, m] : models) owner[name] = name;
    for (const auto& [name, m] : models)
        for (const std::string& a : m.aliases) {
            auto [it, fresh] = owner.emplace(a, name);
            if (!fresh && it->second != name)
                fail("alias '%s' of model '%s' is already the name or an alias of model '%s'", a.c_str(), name.c_str(),
                     it->second.c_str());
        }
    std::vector<ModelSpec> out;
    for (auto& [name, m] : models) out.push_back(std::move(m));
    return out;
}

}  // namespace bee::server
