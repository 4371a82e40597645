// server/tools_builtin: llama-server's built-in agent tools (--tools): read_file, file_glob_search,
// grep_search, exec_shell_command, write_file, edit_file, get_info — a ToolProvider for the server's
// ToolRegistry. They read, write and run anything the server's account can: off unless --tools names them.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "server/tools.h"
#include "server/tools_io.h"

namespace bee::server {

// The tool names, in llama-server's order.
const std::vector<std::string>& builtin_tool_names();

// Checks a --tools list ("all" or tool names); throws bee::Error naming an unknown one and the known ones.
void check_builtin_tool_names(const std::vector<std::string>& names);

// A provider of the tools in `names` ("all": every one). `runtime` is --tools-runtime: empty (this
// machine), "docker:<image>" / "podman:<image>" (a container started now, kept for every call, restarted
// if it dies and removed at exit), or a spec make_tool_io takes; a call's x-tool-runtime wins over it.
// Throws bee::Error when the runtime is invalid or its container cannot be started.
std::unique_ptr<ToolProvider> make_builtin_tools(const std::vector<std::string>& names, const std::string& runtime);

// edit_file (server/tools_edit): the edits of params["edits"] applied to params["path"] through `io`.
Json edit_file(const Json& params, ToolIo& io);

}  // namespace bee::server
