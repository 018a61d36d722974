"""The runtime tools over /mcp through the official Python SDK: the reference team runtime
(its own process) registered for the tenant, read with naive_teams_status/board/run and
commanded with naive_teams_comment/unblock, whose commands the outbox delivers; an
`idempotency_key` argument makes a resend the same command. Both protocol modes."""

import json
import os
import subprocess
import tempfile
import time
import urllib.request

import anyio
import pytest

from conftest import ROOT, unique

pytestmark = pytest.mark.anyio

SECRET = "rt_mcp_suite_shared_secret_0123"


def signed_get(base, path):
    """A GET of the control wire, signed as the wire documents (HMAC-SHA256 over method,
    path, timestamp and body)."""
    import hashlib
    import hmac

    t = str(int(time.time()))
    mac = hmac.new(SECRET.encode(), f"GET\n{path}\n{t}\n".encode(), hashlib.sha256).hexdigest()
    req = urllib.request.Request(base + path)
    req.add_header("Naive-Timestamp", t)
    req.add_header("Naive-Signature", "v1=" + mac)
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def runtime(server):
    """The reference team runtime on a free port, registered as the tenant's runtime."""
    binary = os.environ.get("NAIVE_SERVER_BIN", str(ROOT / "target/debug/server"))
    with tempfile.TemporaryDirectory() as dir:
        env = dict(os.environ, NAIVE_RUNTIME_SECRET=SECRET, RUST_LOG="warn")
        proc = subprocess.Popen(
            [binary, "team-runtime", "--listen", "127.0.0.1:0", "--board", f"{dir}/board.db",
             "--seed-tasks", "6", "--exit-with-stdin"],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = proc.stdout.readline()
        base = line[line.index("http://"):].split()[0]
        status, body = server.api("PUT", "/v1/runtime", {"url": base, "secret": SECRET})
        assert status == 200, body
        assert body["claimed"] is True, body
        yield base
        proc.stdin.close()
        proc.wait(timeout=10)


async def test_runtime_tools_read_the_board_and_queue_commands(server, runtime, mode):
    _, key, _ = server.agent(server.kit(["tasks"]))
    async with server.mcp(key, mode) as c:
        r = await c.call_tool("naive_teams_status", {})
        assert r.is_error is False, r.structured_content
        assert r.structured_content["result"]["reachable"] is True
        r = await c.call_tool("naive_teams_board", {"role": "designer"})
        assert [t["task_id"] for t in r.structured_content["result"]["tasks"]] == ["T-2", "T-5"]
        r = await c.call_tool("naive_teams_run", {"run_id": "run-1"})
        assert r.structured_content["result"]["task_id"] == "T-1"
        body = unique("from MCP")
        args = {"task_id": "T-4", "body": body, "idempotency_key": unique("key")}
        first = await c.call_tool("naive_teams_comment", args)
        assert first.is_error is False, first.structured_content
        again = await c.call_tool("naive_teams_comment", args)
        command_id = first.structured_content["result"]["command_id"]
        assert again.structured_content["result"]["command_id"] == command_id
        missing = await c.call_tool("naive_teams_unblock", {"task_id": "T-3"})
        assert missing.is_error is True
        for _ in range(100):
            state = await c.call_tool("naive_teams_command", {"command_id": command_id})
            if state.structured_content["result"]["status"] == "delivered":
                break
            await anyio.sleep(0.1)
        assert state.structured_content["result"]["status"] == "delivered"
    comments = [x["body"] for x in signed_get(runtime, "/control/tasks/T-4")["comments"]]
    assert comments.count(body) == 1


async def test_a_kit_without_tasks_lists_no_runtime_tool(server, runtime, mode):
    _, key, _ = server.agent(server.kit(["web"]))
    async with server.mcp(key, mode) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert not {n for n in names if n.startswith("naive_teams_")}
        r = await c.call_tool("naive_teams_status", {})
        assert r.is_error is True
        assert r.structured_content["verdict"] == "deny"
