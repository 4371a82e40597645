# tests/server/test_tools_builtin: the built-in agent tools (--tools) through GET/POST /tools — each tool's
# answer, limits and errors as llama-server gives them, streaming, the x-tool-cwd header, x-tool-runtime
# refusals, a container runtime driven through a stand-in `docker` script, and 403 without --tools.
# Router mode (no model is loaded): the server starts in well under a second.
import json
import os
import pathlib
import stat
import subprocess
import urllib.request

import pytest

from conftest import BEE, SMOLLM, Server

FAKE_DOCKER = """#!/bin/sh
# stand-in for docker: `exec [-i] ID argv...` runs argv here, `run ... --cidfile F IMAGE sh` writes an id
# to F and waits on stdin; each call is logged
echo "$*" >> "$FAKE_DOCKER_LOG"
case "$1" in
exec) shift; [ "$1" = -i ] && shift; shift; exec "$@" ;;
run) while [ "$1" != --cidfile ]; do shift; done; echo fakecid42 > "$2"; cat > /dev/null; echo stopped >> "$FAKE_DOCKER_LOG" ;;
esac
"""


def start(tmp_path_factory, *args, env=None):
    models = tmp_path_factory.mktemp("models")
    (models / SMOLLM.name).symlink_to(SMOLLM)
    old = dict(os.environ)
    os.environ.update(env or {})
    try:
        return Server("--models-dir", models, *args, model=None)
    finally:
        os.environ.clear()
        os.environ.update(old)


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = start(tmp_path_factory, "--tools", "all")
    yield s
    s.stop()


def call(server, tool, params, headers=None, status=200):
    code, _, body = server.post("/tools", {"tool": tool, "params": params}, headers=headers or {})
    assert code == status, body
    return body


def ok(server, tool, params, headers=None):
    body = call(server, tool, params, headers)
    assert "error" not in body, body
    return body


def err(server, tool, params, headers=None):
    body = call(server, tool, params, headers)
    assert "error" in body, body
    return body["error"]


def stream(server, tool, params):
    req = urllib.request.Request(server.url("/tools"), method="POST", headers={"Content-Type": "application/json"},
                                 data=json.dumps({"tool": tool, "params": params, "stream": True}).encode())
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.headers["Content-Type"].startswith("text/event-stream")
        return [json.loads(line[6:]) for line in r.read().decode().splitlines() if line.startswith("data: ")]


def test_off_without_tools_flag(tmp_path_factory):
    s = start(tmp_path_factory)
    try:
        assert s.get("/tools")[0] == 403
        assert call(s, "read_file", {"path": "/etc/hostname"}, status=403)["error"]["type"] == "permission_error"
    finally:
        s.stop()


def test_list_shapes(srv):
    code, _, tools = srv.get("/tools")
    assert code == 200
    names = [t["tool"] for t in tools]
    assert names == ["read_file", "file_glob_search", "grep_search", "exec_shell_command", "write_file",
                     "edit_file", "get_info"]
    by = {t["tool"]: t for t in tools}
    assert by["exec_shell_command"]["permissions"]["write"] is True
    assert by["read_file"]["permissions"]["write"] is False
    for t in tools:
        assert t["type"] == "server" and t["display_name"]
        fn = t["definition"]["function"]
        assert t["definition"]["type"] == "function" and fn["name"] == t["tool"] and fn["description"]
        assert fn["parameters"]["type"] == "object"
    assert by["grep_search"]["definition"]["function"]["parameters"]["required"] == ["path", "pattern"]


def test_subset_and_unknown_names(tmp_path_factory):
    s = start(tmp_path_factory, "--tools", "read_file,get_info")
    try:
        assert [t["tool"] for t in s.get("/tools")[2]] == ["read_file", "get_info"]
        assert call(s, "write_file", {"path": "x", "content": ""}, status=404)["error"]["type"] == "invalid_request_error"
    finally:
        s.stop()
    r = subprocess.run([str(BEE), "serve", "--models-dir", "/tmp", "--tools", "read_file,rm_rf"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "unknown tool \"rm_rf\"" in r.stderr and "exec_shell_command" in r.stderr


def test_read_file(srv, tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("one\ntwo\nthree\n")
    assert ok(srv, "read_file", {"path": str(f)})["plain_text_response"] == "one\ntwo\nthree\n"
    assert ok(srv, "read_file", {"path": str(f), "start_line": 2, "end_line": 2})["plain_text_response"] == "two\n"
    assert ok(srv, "read_file", {"path": str(f), "start_line": 2, "append_loc": True})["plain_text_response"] == \
        "2\u2192two\n3\u2192three\n"
    assert err(srv, "read_file", {"path": str(tmp_path / "none")}) == f"cannot stat file: {tmp_path / 'none'}"
    big = tmp_path / "big.txt"
    big.write_text("x" * 100 + "\n" + "y" * 20000 + "\n")
    assert "file too large (20102 bytes, max 16384)" in err(srv, "read_file", {"path": str(big)})
    assert ok(srv, "read_file", {"path": str(big), "end_line": 1})["plain_text_response"] == "x" * 100 + "\n"
    assert ok(srv, "read_file", {"path": str(big), "end_line": 2})["plain_text_response"].endswith("[output truncated]")
    b64 = ok(srv, "read_file", {"path": str(f)}, headers={"x-resp-type": "base64"})
    assert b64 == {"base64": "b25lCnR3bwp0aHJlZQo=", "size_bytes": 14}
    assert "path" in call(srv, "read_file", {}, status=400)["error"]["message"]


def test_write_and_edit_file(srv, tmp_path):
    f = tmp_path / "sub" / "dir" / "f.txt"
    r = ok(srv, "write_file", {"path": str(f), "content": "alpha\nbeta\ngamma\n"})
    assert r == {"result": "file written successfully", "path": str(f), "bytes": 17}
    r = ok(srv, "edit_file", {"path": str(f), "edits": [{"old_text": "gamma\n", "new_text": "gamma\ndelta\n"},
                                                       {"old_text": "alpha", "new_text": "ALPHA"}]})
    assert r == {"result": "file edited successfully", "path": str(f), "edits_applied": 2}
    assert f.read_text() == "ALPHA\nbeta\ngamma\ndelta\n"
    assert "could not find edits[0].old_text" in err(srv, "edit_file", {"path": str(f), "edits": [
        {"old_text": "omega", "new_text": "x"}]})
    assert "overlap" in err(srv, "edit_file", {"path": str(f), "edits": [
        {"old_text": "ALPHA\nbeta", "new_text": "x"}, {"old_text": "beta\ngamma", "new_text": "y"}]})
    assert "no changes made" in err(srv, "edit_file", {"path": str(f), "edits": [{"old_text": "beta", "new_text": "beta"}]})
    assert err(srv, "edit_file", {"path": str(f), "edits": []}) == "\"edits\" must be a non-empty array"
    f.write_text("same\nsame\n")
    assert "found 2 occurrences of edits[0].old_text" in err(srv, "edit_file", {"path": str(f), "edits": [
        {"old_text": "same", "new_text": "x"}]})
    assert f.read_text() == "same\nsame\n"


def test_edit_file_fuzzy_match_keeps_other_lines(srv, tmp_path):
    f = tmp_path / "q.py"
    f.write_text("keep = 1   \nsay(\u201chello\u201d)  \nlast\u00a0line\n")
    r = ok(srv, "edit_file", {"path": str(f), "edits": [{"old_text": 'say("hello")', "new_text": 'say("bye")'}]})
    assert r["edits_applied"] == 1
    assert f.read_text() == "keep = 1   \nsay(\"bye\")\nlast\u00a0line\n"


def test_file_glob_search(srv, tmp_path):
    for p in ["top.py", "a/mid.py", "a/b/deep.py", "a/notes.md", "node_modules/x/y.py", "build/out.py"]:
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / p).write_text("x")
    r = ok(srv, "file_glob_search", {"path": str(tmp_path), "include": "*.py"})
    assert sorted(e["path"] for e in r["entries"]) == ["a/b/deep.py", "a/mid.py", "top.py"]
    assert r["base"] == str(tmp_path) and "Total matches: 3" in r["plain_text_response"]
    r = ok(srv, "file_glob_search", {"path": str(tmp_path), "include": "a/*.py"})
    assert [e["path"] for e in r["entries"]] == ["a/mid.py"]
    r = ok(srv, "file_glob_search", {"path": str(tmp_path), "include": "**/*.py", "exclude": "deep*"})
    assert sorted(e["path"] for e in r["entries"]) == ["a/mid.py", "top.py"]
    r = ok(srv, "file_glob_search", {"path": str(tmp_path), "max_depth": 1})
    assert [e["path"] for e in r["entries"]] == ["top.py"]
    r = ok(srv, "file_glob_search", {"path": str(tmp_path), "type": "dir"})
    dirs = sorted(e["path"] for e in r["entries"])
    assert dirs == ["a", "a/b", "build", "node_modules"] and "a/b/\n" in r["plain_text_response"]
    r = ok(srv, "file_glob_search", {"path": str(tmp_path), "limit": 2})
    assert len(r["entries"]) == 2 and "[2 results limit reached (4 total matches)" in r["plain_text_response"]
    assert "invalid type: bogus" in err(srv, "file_glob_search", {"path": str(tmp_path), "type": "bogus"})
    assert "invalid limit: 0" in err(srv, "file_glob_search", {"path": str(tmp_path), "limit": 0})
    assert err(srv, "file_glob_search", {"path": str(tmp_path), "include": "*" * 5000}) == \
        "include is too long (5000 bytes, max 4096)"
    assert err(srv, "file_glob_search", {"path": str(tmp_path / "nope")}) == \
        f"path does not exist or is not a directory: {tmp_path / 'nope'}"


def test_file_glob_search_honours_gitignore(srv, tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("*.log\n")
    (tmp_path / "kept.txt").write_text("x")
    (tmp_path / "dropped.log").write_text("x")
    r = ok(srv, "file_glob_search", {"path": str(tmp_path)})
    assert sorted(e["path"] for e in r["entries"]) == [".gitignore", "kept.txt"]


def test_grep_search(srv, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.c").write_text("int main() {\n  return 0;\n}\n")
    (tmp_path / "notes.txt").write_text("Return here\nreturn (x)\n")
    r = ok(srv, "grep_search", {"path": str(tmp_path), "pattern": "return", "return_line_numbers": True})
    lines = r["plain_text_response"].splitlines()
    assert sorted(lines[:2]) == ["notes.txt:2:return (x)", "src/m.c:2:  return 0;"]
    assert "Total matches: 2" in r["plain_text_response"]
    r = ok(srv, "grep_search", {"path": str(tmp_path), "pattern": "return", "ignore_case": True, "include": "*.txt"})
    assert "Total matches: 2" in r["plain_text_response"]
    r = ok(srv, "grep_search", {"path": str(tmp_path), "pattern": "(x)", "literal": True})
    assert "Total matches: 1" in r["plain_text_response"]
    r = ok(srv, "grep_search", {"path": str(tmp_path / "src" / "m.c"), "pattern": "return", "context_lines": 1})
    assert r["plain_text_response"].startswith(f"{tmp_path / 'src' / 'm.c'}-1-int main() {{\n"
                                               f"{tmp_path / 'src' / 'm.c'}:2:  return 0;\n")
    with open(tmp_path / "huge.bin", "wb") as f:  # sparse: 40 MiB without writing them
        f.truncate(40 << 20)
    r = ok(srv, "grep_search", {"path": str(tmp_path), "pattern": "return"})
    assert "Total matches: 2" in r["plain_text_response"]
    assert "[1 files over 32 MiB not searched]" in r["plain_text_response"]
    # std::regex recurses per character: a long line must not overflow the stack (only its first 4 KiB count)
    (tmp_path / "min.js").write_text("b" + "a" * 300000 + "c\n")
    r = ok(srv, "grep_search", {"path": str(tmp_path / "min.js"), "pattern": "(a|b)*c"})
    assert "Total matches: 0" in r["plain_text_response"]
    r = ok(srv, "grep_search", {"path": str(tmp_path / "min.js"), "pattern": "^b(a|b)*"})
    assert "Total matches: 1" in r["plain_text_response"] and len(r["plain_text_response"]) < 4200
    assert err(srv, "grep_search", {"path": str(tmp_path), "pattern": "("}).startswith("invalid regex: ")
    assert err(srv, "grep_search", {"path": "/no/such/dir", "pattern": "x"}) == "path does not exist: /no/such/dir"
    assert err(srv, "grep_search", {"path": ".", "pattern": "(" * 9000}) == "pattern is too long (9000 bytes, max 4096)"


def test_exec_shell_command(srv, tmp_path):
    r = ok(srv, "exec_shell_command", {"command": "echo out; echo err >&2; exit 3"})
    assert r["plain_text_response"] == "out\nerr\n\n[exit code: 3]"
    r = ok(srv, "exec_shell_command", {"command": "sleep 5; echo late", "timeout": 1})
    assert r["plain_text_response"].endswith("[exit code: 137] [exit due to timed out]")
    r = ok(srv, "exec_shell_command", {"command": "head -c 5000 /dev/zero | tr '\\0' a", "max_output_size": 100})
    assert r["plain_text_response"] == "a" * 100 + "\n[output truncated]\n[exit code: 0]"
    r = ok(srv, "exec_shell_command", {"command": "pwd; touch made-here"}, headers={"x-tool-cwd": str(tmp_path)})
    assert r["plain_text_response"].startswith(str(tmp_path)) and (tmp_path / "made-here").exists()


def test_exec_stream(srv):
    events = stream(srv, "exec_shell_command", {"command": "echo one; sleep 0.2; echo two"})
    assert events[-1] == {"done": True}
    text = "".join(e["chunk"] for e in events[:-1])
    assert text == "one\ntwo\n\n[exit code: 0]"
    # a character split across two writes (and so two pipe reads) arrives whole
    events = stream(srv, "exec_shell_command", {"command": "printf '\\303'; sleep 0.2; printf '\\251\\n'"})
    assert "".join(e["chunk"] for e in events[:-1]) == "\u00e9\n\n[exit code: 0]"
    assert stream(srv, "exec_shell_command", {})[-1]["done"] is True  # a bad call ends the stream with "error"
    assert "error" in stream(srv, "exec_shell_command", {})[-1]
    code, _, body = srv.post("/tools", {"tool": "read_file", "params": {"path": "x"}, "stream": True})
    assert code == 404 and "does not support stream = true" in body["error"]["message"]


def test_cwd_header_and_get_info(srv, tmp_path):
    (tmp_path / "rel.txt").write_text("relative\n")
    h = {"x-tool-cwd": str(tmp_path)}
    # the header wins over a "cwd" the model put in the params
    assert ok(srv, "read_file", {"path": "rel.txt", "cwd": "/nowhere"}, headers=h)["plain_text_response"] == "relative\n"
    ok(srv, "write_file", {"path": "d/new.txt", "content": "n"}, headers=h)
    assert (tmp_path / "d" / "new.txt").read_text() == "n"
    assert ok(srv, "file_glob_search", {"path": "."}, headers=h)["base"] == str(tmp_path)
    info = ok(srv, "get_info", {}, headers=h)
    assert info["cwd"] == str(tmp_path) and info["os"].startswith(os.uname().sysname)
    assert ok(srv, "get_info", {})["cwd"] == os.getcwd()


@pytest.mark.parametrize("runtime,message", [
    ("fake:does-not-exist", "unknown tool runtime: fake:does-not-exist"),
    ("ssh:-oProxyCommand=touch /tmp/pwned", "invalid ssh target: -oProxyCommand=touch /tmp/pwned"),
    ("docker-container:--privileged", "invalid container id: --privileged"),
    ("podman-container:", "invalid container id: "),
    ("docker:busybox", "tool runtime must name a running container: docker:busybox"),
])
def test_runtime_header_refusals(srv, runtime, message):
    body = call(srv, "exec_shell_command", {"command": "echo hi"}, headers={"x-tool-runtime": runtime}, status=500)
    assert body["error"]["message"].startswith(message)


FAKE_SSH = """#!/bin/sh
# stand-in for ssh: the last argument is the command line the remote shell would parse
echo "$*" >> "$FAKE_DOCKER_LOG"
while [ $# -gt 1 ]; do shift; done
exec sh -c "$1"
"""


def fake_docker(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("docker", FAKE_DOCKER), ("ssh", FAKE_SSH)):
        exe = bin_dir / name
        exe.write_text(text)
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "docker.log"
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_DOCKER_LOG": str(log)}, log


def test_container_runtime_header(srv, tmp_path_factory, tmp_path):
    env, log = fake_docker(tmp_path)
    s = start(tmp_path_factory, "--tools", "all", env=env)
    try:
        h = {"x-tool-runtime": "docker-container:abc123", "x-tool-cwd": str(tmp_path)}
        assert ok(s, "write_file", {"path": "in/c.txt", "content": "hello container\n"}, headers=h)["bytes"] == 16
        assert ok(s, "read_file", {"path": "in/c.txt"}, headers=h)["plain_text_response"] == "hello container\n"
        assert "hello container" in ok(s, "exec_shell_command", {"command": "cat in/c.txt"}, headers=h)["plain_text_response"]
        r = ok(s, "file_glob_search", {"path": ".", "include": "*.txt"}, headers=h)
        assert [e["path"] for e in r["entries"]] == ["in/c.txt"]
        calls = log.read_text().splitlines()
        assert all(c.startswith("exec") and "abc123" in c for c in calls)
        assert any(c.startswith("exec -i abc123 sh -c") for c in calls)  # write_file sends the content on stdin
    finally:
        s.stop()


def test_ssh_runtime_quotes_the_command(tmp_path_factory, tmp_path):
    env, log = fake_docker(tmp_path)
    s = start(tmp_path_factory, "--tools", "all", env=env)
    try:
        h = {"x-tool-runtime": "ssh:me@box.example", "x-tool-cwd": str(tmp_path / "it's here")}
        r = ok(s, "write_file", {"path": "f.txt", "content": "a 'quoted' $HOME\n"}, headers=h)
        assert (tmp_path / "it's here" / "f.txt").read_text() == "a 'quoted' $HOME\n"
        r = ok(s, "exec_shell_command", {"command": "cat f.txt; echo \"$0\""}, headers=h)
        assert r["plain_text_response"].startswith("a 'quoted' $HOME\nsh\n")
        calls = log.read_text().splitlines()
        assert all(c.startswith("-o BatchMode=yes") and " me@box.example " in c for c in calls)
        assert not any(" -n " in c for c in calls if "cat >" in c)  # write_file keeps stdin for the content
    finally:
        s.stop()


def test_tools_runtime_starts_and_removes_container(tmp_path_factory, tmp_path):
    env, log = fake_docker(tmp_path)
    s = start(tmp_path_factory, "--tools", "exec_shell_command", "--tools-runtime", "docker:busybox", env=env)
    try:
        assert ok(s, "exec_shell_command", {"command": "echo inside"})["plain_text_response"] == "inside\n\n[exit code: 0]"
    finally:
        s.stop()
    calls = log.read_text().splitlines()
    assert calls[0].startswith("run --rm -i --cidfile ") and calls[0].endswith(" busybox sh")
    assert any(c.startswith("exec -i fakecid42 timeout 10s sh -c echo inside") for c in calls)
    assert calls[-1] == "stopped"  # stdin closed at exit: the container's shell ends


def test_cors_localhost_by_default_with_tools(srv, tmp_path_factory):
    pre = {"Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST"}
    assert srv.get("/tools", headers=pre)[1].get("Access-Control-Allow-Origin") == "http://localhost:5173"
    assert "Access-Control-Allow-Origin" not in srv.get("/tools", headers={"Origin": "http://evil.example"})[1]
    s = start(tmp_path_factory, "--tools", "get_info", "--cors-origins", "*")
    try:
        assert s.get("/tools", headers={"Origin": "http://evil.example"})[1]["Access-Control-Allow-Origin"] == \
            "http://evil.example"
    finally:
        s.stop()
