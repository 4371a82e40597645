// tests/unit/server/test_tools_io: the pieces under the built-in agent tools — glob matching (and
// llama-server's include/exclude rule), run_process (output cap, time limit killing the process group,
// stdin, stderr, a chunk callback that stops the child) and edit_file's exact and normalized matching.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "server/subprocess.h"
#include "server/tools_builtin.h"
#include "server/tools_io.h"

using namespace bee::server;

TEST(ToolsGlob, SegmentsAndDoubleStar) {
    EXPECT_TRUE(glob_match("*.cpp", "a.cpp"));
    EXPECT_FALSE(glob_match("*.cpp", "src/a.cpp"));  // '*' stays within a segment
    EXPECT_TRUE(glob_match("**/*.cpp", "a.cpp"));    // "**/" may match no directory
    EXPECT_TRUE(glob_match("**/*.cpp", "src/x/a.cpp"));
    EXPECT_TRUE(glob_match("src/**", "src/x/a.cpp"));
    EXPECT_FALSE(glob_match("src/**", "lib/a.cpp"));
    EXPECT_TRUE(glob_match("a?c", "abc"));
    EXPECT_FALSE(glob_match("a?c", "a/c"));
    EXPECT_TRUE(glob_match("[a-c]x", "bx"));
    EXPECT_FALSE(glob_match("[!a-c]x", "bx"));
    EXPECT_TRUE(glob_match("[^a-c]x", "dx"));
    EXPECT_TRUE(glob_match("[x", "[x"));                                                    // no ']': a literal '['
    EXPECT_FALSE(glob_match("**********************************b", std::string(40, 'a')));  // bounded, no hang
}

TEST(ToolsGlob, IncludeRule) {
    EXPECT_TRUE(path_glob_match("*.h", "deep/in/tree.h"));       // no '/': the basename
    EXPECT_TRUE(path_glob_match("in/*.h", "deep/in/tree.h"));    // '/': anchored at any depth
    EXPECT_FALSE(path_glob_match("/in/*.h", "deep/in/tree.h"));  // leading '/': at the searched directory
    EXPECT_TRUE(path_glob_match("/deep/in/*.h", "deep/in/tree.h"));
    EXPECT_TRUE(path_glob_match("**", "any/thing"));
}

TEST(ToolsSubprocess, OutputExitCodeAndCap) {
    RunOptions o;
    RunResult r = run_process({"sh", "-c", "echo out; echo err >&2; exit 4"}, o);
    EXPECT_EQ(r.output, "out\nerr\n");
    EXPECT_EQ(r.exit_code, 4);
    o.max_output = 10;
    r = run_process({"sh", "-c", "head -c 100000 /dev/zero"}, o);
    EXPECT_EQ(r.output, std::string(10, '\0') + "\n[output truncated]");
    EXPECT_EQ(r.exit_code, 0);  // drained, so the child was not blocked on a full pipe
    o.merge_stderr = false;
    r = run_process({"sh", "-c", "echo hidden >&2; echo shown"}, o);
    EXPECT_EQ(r.output, "shown\n");
    r = run_process({"no-such-program-bee-test"}, RunOptions{});
    EXPECT_EQ(r.exit_code, 127);
}

TEST(ToolsSubprocess, StdinAndCwd) {
    RunOptions o;
    const std::string input = "line one\nline two\n";
    o.input = &input;
    o.cwd = "/";
    RunResult r = run_process({"sh", "-c", "pwd; wc -l"}, o);
    EXPECT_EQ(r.output, "/\n2\n");
    o.cwd = "/no/such/dir";
    r = run_process({"true"}, o);
    EXPECT_EQ(r.exit_code, 127);
    EXPECT_NE(r.output.find("/no/such/dir"), std::string::npos);
}

TEST(ToolsSubprocess, TimeLimitKillsTheGroup) {
    RunOptions o;
    o.timeout_s = 1;
    const auto t0 = std::chrono::steady_clock::now();
    // the grandchild holds the pipe open: only killing the whole group ends the read
    const RunResult r = run_process({"sh", "-c", "sleep 30 & sleep 30"}, o);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(r.timed_out);
    EXPECT_EQ(r.exit_code, 128 + 9);
    EXPECT_LT(s, 5.0);
}

TEST(ToolsSubprocess, TimeLimitHoldsAfterStdoutCloses) {
    RunOptions o;
    o.timeout_s = 1;
    const auto t0 = std::chrono::steady_clock::now();
    const RunResult r = run_process({"sh", "-c", "echo bye; exec >/dev/null 2>&1; sleep 30"}, o);
    EXPECT_TRUE(r.timed_out);
    EXPECT_EQ(r.output, "bye\n");
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

TEST(ToolsSubprocess, ChunkCallbackCanStop) {
    RunOptions o;
    std::string seen;
    o.on_chunk = [&](const std::string& c) {
        seen += c;
        return false;
    };
    const auto t0 = std::chrono::steady_clock::now();
    const RunResult r = run_process({"sh", "-c", "echo first; sleep 30; echo never"}, o);
    EXPECT_EQ(seen, "first\n");
    EXPECT_FALSE(r.timed_out);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

namespace {

int g_files = 0;

struct TempFile {
    std::string path = std::filesystem::temp_directory_path().string() + "/bee-test-edit-" + std::to_string(getpid()) +
                       "-" + std::to_string(g_files++) + ".txt";
    explicit TempFile(const std::string& text) { std::ofstream(path, std::ios::binary) << text; }
    ~TempFile() { std::filesystem::remove(path); }
    std::string read() const {
        std::ifstream f(path, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(f), {});
    }
};

Json edits(std::initializer_list<std::pair<const char*, const char*>> e) {
    Json a = Json::array();
    for (auto& [o, n] : e) a.push_back({{"old_text", o}, {"new_text", n}});
    return a;
}

}  // namespace

TEST(ToolsEdit, ExactEditsAgainstTheOriginal) {
    TempFile f("a b\nc d\n");
    auto io = make_tool_io("", "");
    // the second edit matches the original text, not the first edit's result
    const Json r = edit_file({{"path", f.path}, {"edits", edits({{"a", "c d"}, {"c d", "e"}})}}, *io);
    EXPECT_EQ(r.value("edits_applied", 0), 2) << r.dump();
    EXPECT_EQ(f.read(), "c d b\ne\n");
}

TEST(ToolsEdit, NormalizedMatchKeepsUntouchedLines) {
    TempFile f("x = \u2018a\u2019   \ny = \u201cb\u201d\t\nz\u2014end  \n");
    auto io = make_tool_io("", "");
    const Json r = edit_file({{"path", f.path}, {"edits", edits({{"y = \"b\"", "y = \"B\""}})}}, *io);
    EXPECT_EQ(r.value("result", ""), "file edited successfully") << r.dump();
    EXPECT_EQ(f.read(), "x = \u2018a\u2019   \ny = \"B\"\nz\u2014end  \n");
    // a copy that differs only in blanks still counts as a second occurrence
    TempFile g("k = 1\nk = 1   \n");
    const Json dup = edit_file({{"path", g.path}, {"edits", edits({{"k = 1", "k = 2"}})}}, *io);
    EXPECT_NE(dup.value("error", "").find("found 2 occurrences"), std::string::npos) << dup.dump();
}
