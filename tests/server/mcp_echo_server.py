#!/usr/bin/env python3
"""A small MCP server over stdio (one JSON-RPC message per line) for tests/server/test_mcp.py.

Tools: echo, add, env (a variable of its environment), pid, sleep, fail (isError), crash (answers, then exits).
Before every tools/call reply it writes a progress notification and a line that is not JSON, both of which
the client must skip. With --grandchild it leaves a child process holding its stdio pipes open.
"""
import json
import os
import subprocess
import sys
import time


def schema(props=None, required=()):
    return {"type": "object", "properties": props or {}, "required": list(required)}


TOOLS = [
    {"name": "echo", "description": "Echo a message", "inputSchema": schema({"message": {"type": "string"}}, ["message"])},
    {"name": "add", "description": "Add two numbers", "inputSchema": schema({"a": {"type": "number"}, "b": {"type": "number"}})},
    {"name": "env", "description": "A variable of the environment", "inputSchema": schema({"name": {"type": "string"}})},
    {"name": "pid", "description": "The process id", "inputSchema": schema()},
    {"name": "sleep", "description": "Sleep, then answer", "inputSchema": schema({"seconds": {"type": "number"}})},
    {"name": "fail", "description": "Always reports an error", "inputSchema": schema()},
    {"name": "crash", "description": "Answers, then exits", "inputSchema": schema()},
]


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def text(s, error=False):
    r = {"content": [{"type": "text", "text": str(s)}]}
    if error:
        r["isError"] = True
    return r


def call(name, args):
    if name == "echo":
        return text("echo: " + args.get("message", ""))
    if name == "add":
        return text(args.get("a", 0) + args.get("b", 0))
    if name == "env":
        return text(os.environ.get(args.get("name", ""), "<unset>"))
    if name == "pid":
        return text(os.getpid())
    if name == "sleep":
        time.sleep(float(args.get("seconds", 1)))
        return text("slept")
    if name == "fail":
        return text("it failed on purpose", error=True)
    return None


def main():
    if "--grandchild" in sys.argv:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    print("mcp_echo_server: started", file=sys.stderr, flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        method, rid, params = req.get("method"), req.get("id"), req.get("params") or {}
        if rid is None:
            continue  # a notification
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                "serverInfo": {"name": "bee-test-echo", "version": "1"}}})
        elif method == "tools/list":
            # two pages: the client must follow nextCursor
            if params.get("cursor") == "page2":
                send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS[4:]}})
            else:
                send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS[:4], "nextCursor": "page2"}})
        elif method == "tools/call":
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 0}})
            sys.stdout.write("this line is not JSON\n")
            name = params.get("name")
            if name == "crash":
                send({"jsonrpc": "2.0", "id": rid, "result": text("crashing")})
                os._exit(3)
            result = call(name, params.get("arguments") or {})
            if result is None:
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "unknown tool " + str(name)}})
            else:
                send({"jsonrpc": "2.0", "id": rid, "result": result})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no method " + str(method)}})


if __name__ == "__main__":
    main()
