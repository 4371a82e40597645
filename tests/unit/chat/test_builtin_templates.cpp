// tests/unit/chat/test_builtin_templates: every built-in chat format (`--chat-template NAME`) renders the
// conversations of tests/data/chat_templates/builtin_formats.json byte for byte as llama.cpp's
// llama_chat_apply_template did (the file records llama.cpp's own output and its list of names), plus the
// message handling around the formatters and the choice of template from the flags.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "chat/builtin_templates.h"
#include "chat/template.h"

namespace {

namespace fs = std::filesystem;
using bee::chat::Json;
using bee::chat::Template;

Json load_reference() {
    const fs::path p = fs::path(BEE_SOURCE_DIR) / "tests" / "data" / "chat_templates" / "builtin_formats.json";
    std::ifstream f(p, std::ios::binary);
    EXPECT_TRUE(f.good()) << p;
    std::stringstream ss;
    ss << f.rdbuf();
    return Json::parse(ss.str());
}

std::string render(const std::string& name, const Json& messages, bool add_generation_prompt) {
    bee::chat::ChatInput in;
    in.messages = messages;
    in.add_generation_prompt = add_generation_prompt;
    in.bos_token = "<BOS>";  // built-in formats never print it: the tokenizer adds BOS
    return bee::chat::apply(Template::load(name), in);
}

TEST(BuiltinTemplates, NamesAreLlamaCppsNames) {
    const Json ref = load_reference();
    std::vector<std::string> want = ref.at("names").get<std::vector<std::string>>();
    std::sort(want.begin(), want.end());
    EXPECT_EQ(bee::chat::builtin_template_names(), want);
}

TEST(BuiltinTemplates, RenderAsLlamaCpp) {
    const Json ref = load_reference();
    const Json& convs = ref.at("conversations");
    int checked = 0;
    for (const auto& [name, outputs] : ref.at("expected").items()) {
        ASSERT_NE(bee::chat::find_builtin(name), nullptr) << name;
        ASSERT_EQ(outputs.size(), convs.size()) << name;
        for (size_t i = 0; i < convs.size(); i++) {
            const std::string got =
                render(name, convs[i].at("messages"), convs[i].at("add_generation_prompt").get<bool>());
            EXPECT_EQ(got, outputs[i].get<std::string>()) << name << ", conversation " << i;
            ++checked;
        }
    }
    EXPECT_GE(checked, 54 * 10);
}

TEST(BuiltinTemplates, MessageContentAsLlamaCppFlattensIt) {
    // Text parts joined with "\n" (other parts skipped), null content as "", extra fields ignored.
    const Json parts = Json::array({{{"role", "user"},
                                     {"content", Json::array({{{"type", "text"}, {"text", "a"}},
                                                              {{"type", "image_url"}, {"image_url", "x"}},
                                                              {{"type", "text"}, {"text", "b"}}})}},
                                    {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", Json::array()}}});
    EXPECT_EQ(render("chatml", parts, true),
              "<|im_start|>user\na\nb<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_THROW(render("llama3", Json::array({{{"content", "no role"}}}), true), bee::Error);
    EXPECT_THROW(render("llama3", Json::array({{{"role", "user"}, {"content", 5}}}), true), bee::Error);
}

TEST(BuiltinTemplates, SelectTemplateFromTheFlags) {
    using bee::chat::select_template;
    EXPECT_EQ(select_template("", "", "{{ model }}"), "{{ model }}");
    EXPECT_EQ(select_template("", "mistral-v7-tekken", "{{ model }}"), "mistral-v7-tekken");
    EXPECT_EQ(select_template("", "{{ 'x' }}", ""), "{{ 'x' }}");
    try {
        select_template("", "llama-3", "");
        ADD_FAILURE() << "an unknown name was accepted";
    } catch (const bee::Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("'llama-3'"), std::string::npos) << msg;
        EXPECT_NE(msg.find("llama3, llama4"), std::string::npos) << msg;  // the valid names, sorted
        EXPECT_NE(msg.find("--chat-template-file"), std::string::npos) << msg;
    }
    // A name given as Jinja text is rendered as Jinja, not as the built-in.
    EXPECT_EQ(Template::load("{{ 'llama3' }}").render(Json::object(), 0), "llama3");
}

}  // namespace
