// tests/unit/chat/test_tool_call_syntax: the shape a forced tool call takes per template (the two
// Mistral forms told apart by the template), and that text written in that shape parses back.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/tool_calls.h"

namespace bee::chat {
namespace {

std::string template_text(const char* name) {
    std::ifstream f(std::filesystem::path(BEE_SOURCE_DIR) / "tests" / "data" / "chat_templates" / name);
    EXPECT_TRUE(f.good()) << name;
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

TEST(ToolCallSyntax, MistralArgsFormFromTheTemplate) {
    for (const char* file :
         {"Mistral-Small-3.2-24B-Instruct-2506.jinja", "unsloth-mistral-Devstral-Small-2507.jinja"}) {
        const std::string src = template_text(file);
        ASSERT_EQ(detect_tool_call_format(src), ToolCallFormat::mistral) << file;
        const ToolCallSyntax sx = tool_call_syntax(ToolCallFormat::mistral, src);
        EXPECT_EQ(sx.call_open, "[TOOL_CALLS]") << file;
        EXPECT_EQ(sx.args_open, "[ARGS]") << file;
        // Two calls written the way the forcing grammar writes them parse back as two calls.
        const std::string text = sx.call_open + "get_weather" + sx.args_open + "{\"city\": \"Paris\"}" + sx.call_open +
                                 "get_time" + sx.args_open + "{}";
        const ToolCallDelta d = parse_tool_calls(ToolCallFormat::mistral, text);
        ASSERT_EQ(d.calls.size(), 2u) << text;
        EXPECT_EQ(d.calls[0].name, "get_weather");
        EXPECT_EQ(d.calls[0].arguments, "{\"city\":\"Paris\"}");
        EXPECT_EQ(d.calls[1].name, "get_time");
        EXPECT_EQ(d.content, "");
    }
    // The older Mistral template teaches the JSON list: no [ARGS].
    const ToolCallSyntax nemo =
        tool_call_syntax(ToolCallFormat::mistral, template_text("mistralai-Mistral-Nemo-Instruct-2407.jinja"));
    EXPECT_EQ(nemo.args_open, "");
    EXPECT_EQ(nemo.list_open, "[");
    EXPECT_EQ(tool_call_syntax(ToolCallFormat::mistral).args_open, "");  // no template: the JSON form
}

}  // namespace
}  // namespace bee::chat
