// server/mcp_tools: the tools of MCP servers (--mcp-servers-config, --mcp-servers-json) as a ToolProvider:
// each server's tools are listed by GET /tools as SERVER_TOOL and run by POST /tools.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/mcp_client.h"
#include "server/tools.h"

namespace bee::server {

// The servers of --mcp-servers-config FILE and --mcp-servers-json TEXT (either may be empty), a name given
// twice kept once (the first, with a warning). Throws bee::Error for a file that cannot be read or a bad
// configuration: these are start-up errors.
std::vector<McpServerConfig> load_mcp_servers(const std::string& config_path, const std::string& json_text);

// Starts every server at once and lists its tools (10 s at most each). A server that fails is logged and
// left out; the others keep running for calls. A server that dies is started again on its next call.
// A tool whose SERVER_TOOL name is `taken` (by the built-in tools) or given twice is left out with a warning.
std::unique_ptr<ToolProvider> start_mcp_tools(std::vector<McpServerConfig> servers,
                                              const std::function<bool(const std::string&)>& taken = nullptr);

}  // namespace bee::server
