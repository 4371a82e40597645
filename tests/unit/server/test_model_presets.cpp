// tests/unit/server/test_model_presets: router mode's model sources — llama-server's preset INI grammar,
// preset keys as `bee serve` flags (long, short and LLAMA_ARG_ names, booleans, preset-only keys), the
// --models-dir scan, and the errors that name the file, line or key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "../common/error_of.h"
#include "base/error.h"
#include "server/model_presets.h"

using namespace bee::server;
namespace fs = std::filesystem;

namespace {

using bee::test::error_of;

// A few of bee serve's flags: name -> takes a value.
bool fake_flags(const std::string& flag, bool* takes_value) {
    static const std::map<std::string, bool> kFlags = {
        {"-m", true},          {"--model", true},     {"-c", true},          {"--ctx-size", true}, {"-np", true},
        {"--parallel", true},  {"--n-predict", true}, {"-a", true},          {"--alias", true},    {"--jinja", false},
        {"--no-jinja", false}, {"--no-mmap", false},  {"--metrics", false},  {"--host", true},     {"--port", true},
        {"-md", true},         {"--slots", false},    {"--no-slots", false},
    };
    auto it = kFlags.find(flag);
    if (it == kFlags.end()) return false;
    *takes_value = it->second;
    return true;
}

struct TempDir {
    fs::path path;
    TempDir() {
        path = fs::temp_directory_path() /
               ("bee_presets_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() { fs::remove_all(path); }
    std::string write(const std::string& name, const std::string& text = "") const {
        fs::create_directories((path / name).parent_path());
        std::ofstream(path / name) << text;
        return (path / name).string();
    }
};

const ModelSpec& by_name(const std::vector<ModelSpec>& v, const std::string& name) {
    for (const ModelSpec& m : v)
        if (m.name == name) return m;
    throw std::runtime_error("no model " + name);
}

}  // namespace

TEST(PresetIni, SectionsKeysAndComments) {
    const std::string text =
        "version = 1\r\n"
        "top = 1\n"
        "  ; a comment\n"
        "# another\n"
        "\n"
        "[*]\n"
        "c = 8192 ; trailing comment\n"
        "[ repo/model:q4_k_m ]\n"
        "chat-template = chatml#cut\n"
        "x.y_z-w=  spaced value  \n"
        "x.y_z-w = last wins\n"
        "[repo/other:Model-q8_0]\r"
        "LLAMA_ARG_N_GPU_LAYERS = 99";
    std::vector<IniSection> s = parse_preset_ini(text, "p.ini");
    ASSERT_EQ(s.size(), 4u);
    EXPECT_EQ(s[0].name, "default");  // keys before a header; `version` is no option
    ASSERT_EQ(s[0].keys.size(), 1u);
    EXPECT_EQ(s[0].keys[0], (std::pair<std::string, std::string>{"top", "1"}));
    EXPECT_EQ(s[1].name, "*");
    EXPECT_EQ(s[1].keys[0].second, "8192");
    EXPECT_EQ(s[2].name, "repo/model:Q4_K_M");  // the quantization tag canonicalized
    ASSERT_EQ(s[2].keys.size(), 2u);
    EXPECT_EQ(s[2].keys[0].second, "chatml");
    EXPECT_EQ(s[2].keys[1], (std::pair<std::string, std::string>{"x.y_z-w", "last wins"}));
    EXPECT_EQ(s[3].name, "repo/other:Q8_0");
    EXPECT_EQ(s[3].keys[0].second, "99");
}

TEST(PresetIni, ErrorsNameTheLine) {
    EXPECT_NE(error_of([] { parse_preset_ini("[a]\nkey value\n", "p.ini"); }).find("p.ini:2:"), std::string::npos);
    EXPECT_NE(error_of([] { parse_preset_ini("[a\n", "p.ini"); }).find("p.ini:1:"), std::string::npos);
    EXPECT_NE(error_of([] { parse_preset_ini("ok = 1\n9bad = 2\n", "p.ini"); }).find("p.ini:2:"), std::string::npos);
    EXPECT_NE(error_of([] { parse_preset_ini("[]\n", "p.ini"); }).find("p.ini:1:"), std::string::npos);
}

TEST(PresetIni, RepeatedSectionStartsOver) {
    std::vector<IniSection> s = parse_preset_ini("[a]\nx = 1\n[b]\n[a]\ny = 2\n", "p.ini");
    ASSERT_EQ(s.size(), 2u);
    ASSERT_EQ(s[0].keys.size(), 1u);
    EXPECT_EQ(s[0].keys[0].first, "y");
}

TEST(ModelSpecs, FolderScan) {
    TempDir d;
    d.write("alpha.gguf");
    d.write("mmproj-alpha.gguf");  // a projector, never a model
    d.write("dflash-alpha.gguf");  // a drafter
    d.write("readme.txt");
    d.write("beta/beta-00001-of-00002.gguf");
    d.write("beta/beta-00002-of-00002.gguf");
    d.write("beta/mtp-beta.gguf");
    d.write("empty/readme.txt");
    std::vector<ModelSpec> v = collect_model_specs(d.path.string(), "", fake_flags);
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].name, "alpha");
    EXPECT_EQ(v[0].source, "models_dir");
    EXPECT_EQ(v[0].args, (std::vector<std::string>{"-m", (d.path / "alpha.gguf").string()}));
    EXPECT_EQ(v[1].name, "beta");
    EXPECT_EQ(v[1].args, (std::vector<std::string>{"-m", (d.path / "beta/beta-00001-of-00002.gguf").string(), "-md",
                                                   (d.path / "beta/mtp-beta.gguf").string()}));
    EXPECT_NE(error_of([&] { collect_model_specs((d.path / "nope").string(), "", fake_flags); }).find("--models-dir"),
              std::string::npos);
}

TEST(ModelSpecs, PresetKeysBecomeFlags) {
    TempDir d;
    d.write("alpha.gguf");
    const std::string ini = d.write("p.ini",
                                    "[*]\n"
                                    "c = 4096\n"
                                    "jinja = off\n"
                                    "host = 0.0.0.0\n"  // the router's: dropped
                                    "[alpha]\n"
                                    "ctx-size = 1024\n"
                                    "LLAMA_ARG_N_PARALLEL = 2\n"
                                    "mmap = false\n"  // only --no-mmap exists: false is that flag
                                    "metrics = true\n"
                                    "slots = 0\n"
                                    "load-on-startup = true\n"
                                    "stop-timeout = 5\n"
                                    "[custom]\n"
                                    "model = /m/custom.gguf\n"
                                    "alias = c1, c2\n"
                                    "tags = a,b\n"
                                    "no-jinja = false\n");
    std::vector<ModelSpec> v = collect_model_specs(d.path.string(), ini, fake_flags);
    const ModelSpec& alpha = by_name(v, "alpha");
    EXPECT_EQ(alpha.source, "preset");
    EXPECT_TRUE(alpha.load_on_startup);
    EXPECT_EQ(alpha.args, (std::vector<std::string>{"-m", (d.path / "alpha.gguf").string(), "-c", "4096", "--no-jinja",
                                                    "--ctx-size", "1024", "--parallel", "2", "--no-mmap", "--metrics",
                                                    "--no-slots"}));
    EXPECT_EQ(alpha.preset.rfind("[alpha]\nmodel = ", 0), 0u);
    const ModelSpec& custom = by_name(v, "custom");
    EXPECT_EQ(custom.args,
              (std::vector<std::string>{"-c", "4096", "--no-jinja", "--model", "/m/custom.gguf", "--jinja"}));
    EXPECT_EQ(custom.aliases, (std::vector<std::string>{"c1", "c2"}));
    EXPECT_EQ(custom.tags, (std::vector<std::string>{"a", "b"}));
    EXPECT_FALSE(custom.load_on_startup);
}

TEST(ModelSpecs, PresetErrors) {
    TempDir d;
    auto err = [&](const std::string& text) {
        const std::string ini = d.write("p.ini", text);
        return error_of([&] { collect_model_specs("", ini, fake_flags); });
    };
    EXPECT_NE(err("[a]\nmodel = x.gguf\nbogus = 1\n").find("option 'bogus' not recognized in preset 'a'"),
              std::string::npos);
    EXPECT_NE(err("[a]\nc = 1\n").find("preset 'a' has no model file"), std::string::npos);
    EXPECT_NE(err("c = 1\n[a]\nmodel = x.gguf\n").find("put them under [*]"), std::string::npos);
    EXPECT_NE(err("[a]\nmodel = x.gguf\n[b]\nmodel = y.gguf\nalias = a\n").find("alias 'a' of model 'b'"),
              std::string::npos);
    EXPECT_NE(error_of([&] {
                  collect_model_specs("", (d.path / "missing.ini").string(), fake_flags);
              }).find("--models-preset"),
              std::string::npos);
}
