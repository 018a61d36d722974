"""Connected apps over /mcp through the official Python SDK: the reference upstream's tracker
(its own process, an MCP server itself) registered as a toolkit, reached only through
naive_connections_tools and naive_connections_execute, in both protocol modes."""

import os
import subprocess
import tempfile

import pytest

from conftest import ROOT, unique

pytestmark = pytest.mark.anyio

SECRET = "sk_test_tracker_credential_0123456789"


@pytest.fixture(scope="module")
def tracker(server):
    """The reference upstream on a free port, registered as the `tracker` toolkit."""
    binary = os.environ.get("NAIVE_SERVER_BIN", str(ROOT / "target/debug/server"))
    with tempfile.TemporaryDirectory() as dir:
        env = dict(os.environ, NAIVE_UPSTREAM_SECRET=SECRET, RUST_LOG="warn")
        proc = subprocess.Popen(
            [binary, "upstream", "--listen", "127.0.0.1:0", "--records", f"{dir}/up.db", "--exit-with-stdin"],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = proc.stdout.readline()
        base = line[line.index("http://"):].split()[0]
        status, body = server.api("PUT", "/v1/vault/secrets/tracker-token", {"value": SECRET})
        assert status in (200, 201), body
        for toolkit in ("tracker", "wiki"):
            spec = {"url": base + "/mcp", "auth": {"kind": "bearer", "secret": "tracker-token"}}
            status, body = server.api("PUT", f"/v1/connected-apps/{toolkit}", spec)
            assert status == 200, body
        yield base
        proc.stdin.close()
        proc.wait(timeout=10)


def apps_kit(server):
    name = unique("Apps")
    body = {"name": name, "primitives": ["connections"],
            "toolkits": {"filters": {"tracker": {"disable": ["issues.list"],
                                                 "effects": {"issues.create": "write"}}}}}
    status, saved = server.put_kit(name, body, None)
    assert status == 201, saved
    return name


async def test_connected_tools_are_listed_by_the_kit_and_gated_by_their_annotations(server, tracker, mode):
    _, key, _ = server.agent(apps_kit(server))
    async with server.mcp(key, mode) as c:
        listed = {t.name for t in (await c.list_tools()).tools}
        assert {"naive_connections_tools", "naive_connections_execute"} <= listed
        r = await c.call_tool("naive_connections_tools", {})
        assert r.is_error is False, r.structured_content
        result = r.structured_content["result"]
        # issues.create declares no effect: the kit pins it as a write.
        assert [(t["name"], t["effect"]) for t in result["tools"]] == [
            ("issues.create", "write"), ("issues.delete", "destructive"), ("issues.export", "read")]
        # issues.list is disabled in tracker, and wiki's four tools are not permitted.
        assert result["withheld_by_policy"] == 5

        made = await c.call_tool("naive_connections_execute", {
            "toolkit": "tracker", "tool": "issues.create", "arguments": {"title": unique("jam")}})
        assert made.is_error is False, made.structured_content
        assert made.structured_content["result"]["content"]["id"] >= 1

        parked = await c.call_tool("naive_connections_execute", {
            "toolkit": "tracker", "tool": "issues.delete", "arguments": {"id": 1}})
        assert parked.is_error is False
        assert parked.structured_content["verdict"] == "park"

        refused = await c.call_tool("naive_connections_execute", {"toolkit": "wiki", "tool": "issues.list"})
        assert refused.is_error is True
        step = refused.structured_content["recovery"][0]
        assert (step["kind"], step["toolkit"]) == ("request_toolkit", "wiki")
        disabled = await c.call_tool("naive_connections_execute", {"toolkit": "tracker", "tool": "issues.list"})
        assert disabled.is_error is True
        assert disabled.structured_content["recovery"][0]["kind"] == "request_toolkit"
    for answer in (r, made, parked, refused):
        assert SECRET not in str(answer.structured_content)
