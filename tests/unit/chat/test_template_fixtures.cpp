// tests/unit/chat/test_template_fixtures: renders the real chat templates and the feature snippets with
// the contexts in tests/data/chat_templates/expected/*.json and compares byte for byte with what Python's
// jinja2 produced (tests/reference/make_chat_fixtures.py). Where jinja2 raised, Bee must throw bee::Error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "chat/template.h"

namespace {

namespace fs = std::filesystem;
using bee::chat::Json;
using bee::chat::Template;

const fs::path kDir = fs::path(BEE_SOURCE_DIR) / "tests" / "data" / "chat_templates";

std::string read_text(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// Checks every case of one fixture document; `source_of` gives the template text of a case.
template <typename SourceOf>
void check_cases(const Json& doc, SourceOf source_of, const std::string& label) {
    const int64_t now = doc.at("now").get<int64_t>();
    int checked = 0;
    for (const Json& c : doc.at("cases")) {
        const std::string name = label + "/" + c.at("name").get<std::string>();
        SCOPED_TRACE(name);
        std::string got, error;
        try {
            got = Template::parse(source_of(c)).render(c.at("context"), now);
        } catch (const bee::Error& e) {
            error = e.what();
        }
        if (c.contains("error")) {
            EXPECT_FALSE(error.empty()) << name << ": jinja2 raised (" << c["error"] << ") but Bee rendered:\n" << got;
        } else {
            EXPECT_EQ(error, "") << name;
            EXPECT_EQ(got, c.at("expected").get<std::string>()) << name;
        }
        ++checked;
    }
    EXPECT_GT(checked, 0) << label;
}

TEST(ChatTemplateFixtures, RealTemplatesMatchJinja2) {
    int files = 0;
    for (const auto& entry : fs::directory_iterator(kDir)) {
        if (entry.path().extension() != ".jinja") continue;
        const fs::path fixture = kDir / "expected" / (entry.path().stem().string() + ".json");
        ASSERT_TRUE(fs::exists(fixture)) << "no fixture for " << entry.path()
                                         << ": run tests/reference/make_chat_fixtures.py";
        const std::string source = read_text(entry.path());
        Json doc = Json::parse(read_text(fixture));
        ASSERT_EQ(doc.at("template").get<std::string>(), entry.path().filename().string());
        check_cases(
            doc, [&](const Json&) { return source; }, entry.path().stem().string());
        ++files;
    }
    EXPECT_GE(files, 9);
}

TEST(ChatTemplateFixtures, FeatureSnippetsMatchJinja2) {
    Json doc = Json::parse(read_text(kDir / "expected" / "features.json"));
    check_cases(
        doc, [](const Json& c) { return c.at("source").get<std::string>(); }, "features");
}

}  // namespace
