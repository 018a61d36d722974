"""/mcp through the official Python SDK, as an agent would use it, in both protocol modes.

Each test makes its own kit and agent over /v1 with the company key, then talks MCP with the
agent's scoped key to the real server binary (see conftest.py).
"""

import asyncio
import json
import os
import subprocess
import time
import urllib.error
import urllib.request

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from conftest import COMPANY, ROOT, unique

pytestmark = pytest.mark.anyio

EVERYTHING = ["cards", "email", "web", "search", "brain", "tasks", "llm", "images", "compute"]


def names(listed):
    return {t.name for t in listed.tools}


async def until(predicate, seconds=10.0):
    """Waits for `predicate()` to hold, polling; fails the test if it never does."""
    for _ in range(int(seconds / 0.05)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the condition did not hold in time")


def raw(server, body, key=None, headers=None):
    """One POST to /mcp outside any SDK: (status, headers, text)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(server.url, method="POST", data=data)
    req.add_header("Content-Type", "application/json")
    req.add_header("Accept", "application/json, text/event-stream")
    req.add_header("MCP-Protocol-Version", "2026-07-28")
    if key:
        req.add_header("Authorization", "Bearer " + key)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def log_count(server, profile):
    status, page = server.api("GET", f"/v1/users/{profile}/logs?limit=500")
    assert status == 200, page
    return len(page["items"])


async def test_the_list_comes_from_the_kit(server, mode):
    no_tasks = server.kit(["cards", "web", "brain"])
    no_brain = server.kit(["cards", "web", "tasks"])
    _, key_a, _ = server.agent(no_tasks)
    _, key_b, _ = server.agent(no_brain)
    async with server.mcp(key_a, mode) as a, server.mcp(key_b, mode) as b:
        listed_a, listed_b = await a.list_tools(), await b.list_tools()
    seen_a, seen_b = names(listed_a), names(listed_b)
    governance = {"naive_brain_proposals", "naive_brain_proposal", "naive_brain_decide_proposal",
                  "naive_brain_writebacks", "naive_brain_writeback", "naive_brain_beliefs"}
    assert {"naive_cards_charge", "naive_web_read", "naive_brain_query", "naive_approvals_get",
            "naive_policy_explain"} | governance <= seen_a
    assert not {n for n in seen_a if n.startswith(("naive_tasks_", "naive_teams_"))}
    teams = {"naive_teams_status", "naive_teams_board", "naive_teams_run", "naive_teams_comment",
             "naive_teams_unblock", "naive_teams_command"}
    assert teams | {"naive_tasks_delete", "naive_cards_charge"} <= seen_b
    assert not {n for n in seen_b if n.startswith("naive_brain_")}
    assert "naive_email_send" not in seen_a | seen_b

    tools = {t.name: t for t in listed_b.tools}
    charge = tools["naive_cards_charge"].input_schema
    assert charge["additionalProperties"] is False
    assert set(charge["required"]) == {"amount", "merchant"}
    assert charge["properties"]["amount"]["type"] == "string"
    assert tools["naive_web_read"].annotations.read_only_hint is True
    assert tools["naive_tasks_delete"].annotations.destructive_hint is True
    assert tools["naive_cards_charge"].annotations.read_only_hint is False
    assert all(t.output_schema is None for t in listed_b.tools)


async def test_an_allowed_call_returns_its_result(server, mode):
    profile, key, _ = server.agent(server.kit(["web"]))
    async with server.mcp(key, mode) as c:
        r = await c.call_tool("naive_web_read", {"url": "https://example.test/a"})
    assert r.is_error is False
    assert r.structured_content["ok"] is True
    assert r.structured_content["cost"] == "0.0025"
    assert json.loads(r.content[0].text) == r.structured_content
    status, budget = server.api("GET", f"/v1/users/{profile}/budget")
    assert status == 200, budget


async def test_a_park_is_polled_until_a_human_decides_over_v1(server, mode):
    kit = server.kit(["cards"], {"budget": {"hard_cap": "100"}, "approve": {"above": "25"}})
    _, key, _ = server.agent(kit)
    async with server.mcp(key, mode) as c:
        r = await c.call_tool("naive_cards_charge", {"amount": "30.00", "merchant": "acme-supplies"})
        assert r.is_error is False, r.structured_content
        env = r.structured_content
        assert (env["verdict"], env["ok"]) == ("park", False)
        step = env["recovery"][0]
        assert (step["kind"], step["on_expiry"]) == ("wait_for_approval", "deny")
        polled = await c.call_tool("naive_approvals_get", {"approval_id": step["approval_id"]})
        assert (polled.is_error, polled.structured_content["status"]) == (False, "pending")

        status, body = server.api("POST", f"/v1/approvals/{step['approval_id']}/approve",
                                  {"note": "expected supplier"}, key=server.human())
        assert status == 200, body
        polled = await c.call_tool("naive_approvals_get", {"approval_id": step["approval_id"]})
    approval = polled.structured_content
    assert approval["status"] == "approved", approval
    assert approval["result"]["ok"] is True
    assert approval["decided_by"] == "admin"


async def test_a_deny_is_the_envelope_with_is_error(server, mode):
    _, key, _ = server.agent(server.kit(["web"]))
    async with server.mcp(key, mode) as c:
        r = await c.call_tool("naive_email_send", {"to": "someone@example.test", "body": "hi"})
    assert r.is_error is True
    env = r.structured_content
    assert set(env) == {"ok", "verdict", "reason", "action", "layer", "retryable", "repeat", "message",
                        "error", "recovery", "alternatives"}
    assert (env["ok"], env["verdict"], env["reason"], env["retryable"]) == (False, "deny", "capability_denied", False)
    assert env["error"]["details"]["reason"] == "primitive_disabled_by_kit"
    assert env["recovery"][0]["kind"] == "request_capability"
    assert json.loads(r.content[0].text) == env


async def test_three_identical_refusals_over_either_transport_escalate_once(server, mode):
    profile, key, _ = server.agent(server.kit(["web"]))
    args = {"to": "someone@example.test", "body": "the same call"}
    status, first = server.api("POST", f"/v1/users/{profile}/email/send", args, key=key)
    assert (status, first["repeat"]) == (403, 1), first
    async with server.mcp(key, mode) as c:
        second = (await c.call_tool("naive_email_send", args)).structured_content
        third = (await c.call_tool("naive_email_send", args)).structured_content
    assert second["repeat"] == 2
    assert third["repeat"] == 3
    assert [s["kind"] for s in third["recovery"]] == ["escalate_to_human"]
    assert third["alternatives"] == []


async def test_a_profile_revoked_mid_session_is_refused_and_lists_nothing(server, mode):
    profile, key, _ = server.agent(server.kit(["web"]))
    async with server.mcp(key, mode) as c:
        assert (await c.call_tool("naive_web_read", {"url": "https://example.test"})).is_error is False
        status, body = server.api("POST", f"/v1/agent-profiles/{profile}/revoke")
        assert status == 200, body
        r = await c.call_tool("naive_web_read", {"url": "https://example.test"})
        assert r.is_error is True
        assert r.structured_content["reason"] == "agent_profile_revoked"
        assert names(await c.list_tools(cache_mode="refresh")) == set()


async def test_a_key_revoked_mid_session_gets_401_on_the_next_message(server, mode):
    profile, key, key_id = server.agent(server.kit(["web"]))
    async with server.mcp(key, mode) as c:
        assert (await c.call_tool("naive_web_read", {"url": "https://example.test"})).is_error is False
        status, body = server.api("DELETE", f"/v1/agent-profiles/{profile}/keys/{key_id}")
        assert status == 200, body
        with pytest.raises(Exception):
            await c.call_tool("naive_web_read", {"url": "https://example.test"})
    status, headers, text = raw(server, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, key=key)
    assert status == 401, text
    assert headers["WWW-Authenticate"].startswith("Bearer")
    assert json.loads(text)["code"] == "invalid_key"


async def test_a_kit_narrowed_mid_session(server, mode):
    kit = server.kit(["cards", "web"])
    _, key, _ = server.agent(kit)
    messages = []
    async with server.mcp(key, mode, messages) as c:
        assert "naive_cards_charge" in names(await c.list_tools())
        server.kit(["web"], name=kit)
        r = await c.call_tool("naive_cards_charge", {"amount": "1.00", "merchant": "acme"})
        assert r.is_error is True
        assert r.structured_content["error"]["details"]["reason"] == "primitive_disabled_by_kit"
        listed = names(await c.list_tools(cache_mode="refresh"))
        if mode == "legacy":
            # The session keeps the list it opened with, and is told it changed.
            assert "naive_cards_charge" in listed
            changed = lambda: any(getattr(m, "method", None) == "notifications/tools/list_changed"
                                  or type(m).__name__ == "ToolListChangedNotification" for m in messages)
            await until(changed)
        else:
            # Stateless: every list is computed for the request's key, now.
            assert "naive_cards_charge" not in listed
            assert "naive_web_read" in listed


async def test_an_agents_brain_accept_parks_and_its_reject_applies(server, mode):
    _, key, _ = server.agent(server.kit(["brain"]))
    office = unique("office")
    claims = [{"object_type": "fact", "content": {"text": f"The {office} opens at nine."}},
              {"object_type": "fact", "content": {"text": "The office closes at five."}}]
    async with server.mcp(key, mode) as c:
        r = await c.call_tool("naive_brain_submit_writeback",
                              {"run_id": "run-1", "source": "handbook", "claims": claims})
        assert r.is_error is False, r.structured_content
        proposals = [p["id"] for p in r.structured_content["writeback"]["proposals"]]
        accept = await c.call_tool("naive_brain_decide_proposal",
                                   {"proposal_id": proposals[0], "decision": "accept", "because": "in the handbook"})
        assert accept.is_error is False
        assert accept.structured_content["verdict"] == "park"
        reject = await c.call_tool("naive_brain_decide_proposal",
                                   {"proposal_id": proposals[1], "decision": "reject", "because": "out of date"})
        assert reject.is_error is False, reject.structured_content
        one = await c.call_tool("naive_brain_proposal", {"proposal_id": proposals[1]})
        assert one.structured_content["status"] == "rejected"
        queue = await c.call_tool("naive_brain_proposals", {"status": "parked"})
        assert proposals[0] in [p["id"] for p in queue.structured_content["items"]]
        none_yet = await c.call_tool("naive_brain_beliefs", {"q": office})
        assert none_yet.structured_content["items"] == []
        # A human reviewer accepts the parked one: it becomes a belief the agent can read.
        server.api("POST", f"/v1/brain/proposals/{proposals[0]}/decision",
                   {"decision": "accept", "because": "checked the handbook"}, key=server.human())
        beliefs = await c.call_tool("naive_brain_beliefs", {"q": office.upper(), "object_type": "fact"})
        [belief] = beliefs.structured_content["items"]
        assert (belief["proposal_id"], belief["run_id"], belief["because"]) == (proposals[0], "run-1", "checked the handbook")
        assert belief["accepted_by"] == "admin"


async def test_explain_is_a_dry_run(server, mode):
    kit = server.kit(["cards"], {"budget": {"hard_cap": "10"}})
    profile, key, _ = server.agent(kit)
    before = log_count(server, profile)
    async with server.mcp(key, mode) as c:
        r = await c.call_tool("naive_policy_explain",
                              {"action": "naive_cards_charge", "args": {"amount": "11.00", "merchant": "acme"}})
    assert r.is_error is False
    assert (r.structured_content["verdict"], r.structured_content["action"]) == ("deny", "cards.charge")
    assert log_count(server, profile) == before


async def test_bad_input_is_refused_and_leaves_nothing_behind(server, mode):
    profile, key, _ = server.agent(server.kit(["cards", "email"], {"budget": {"hard_cap": "10"}}))
    before = log_count(server, profile)
    async with server.mcp(key, mode) as c:
        free = await c.call_tool("naive_cards_charge", {"merchant": "acme"})
        bcc = await c.call_tool("naive_email_send", {"to": "a@example.test", "bcc": "b@example.test"})
        with pytest.raises(MCPError) as unknown:
            await c.call_tool("naive_cards_steal", {})
    assert (free.is_error, free.structured_content["code"]) == (True, "missing_argument")
    assert (bcc.is_error, bcc.structured_content["code"]) == (True, "unknown_argument")
    assert "bcc" in bcc.structured_content["message"]
    assert unknown.value.error.code == -32602
    assert log_count(server, profile) == before
    status, budget = server.api("GET", f"/v1/users/{profile}/budget")
    assert (status, budget["totals"]["posted"], budget["totals"]["pending"]) == (200, "0.00", "0.00"), budget


def test_malformed_oversize_unauthenticated_and_cross_origin_messages(server):
    _, key, _ = server.agent(server.kit(["web"]))
    status, _, text = raw(server, b"{not json", key=key)
    assert status == 400, text
    assert json.loads(text)["error"]["code"] == -32700
    status, _, text = raw(server, {"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                                   "params": {"pad": "x" * (70 * 1024)}}, key=key)
    assert status == 413, text
    status, headers, text = raw(server, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert (status, json.loads(text)["code"]) == (401, "missing_key")
    # The challenge points an OAuth client at /mcp's metadata, at the configured public URL.
    metadata = f'{server.base}/.well-known/oauth-protected-resource/mcp'
    assert headers["WWW-Authenticate"] == f'Bearer resource_metadata="{metadata}", scope="mcp"'
    # ...never at the request's Host (behind a proxy that would name the wrong scheme or host).
    status, headers, _ = raw(server, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                             headers={"Host": "evil.example", "X-Forwarded-Proto": "http"})
    assert status == 401 and "evil.example" not in headers["WWW-Authenticate"]
    assert metadata in headers["WWW-Authenticate"]
    status, _, text = raw(server, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, key=COMPANY)
    assert (status, json.loads(text)["code"]) == (403, "agent_key_required")
    status, _, _ = raw(server, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, key=key,
                       headers={"Origin": "https://evil.example"})
    assert status == 403
    status, _, _ = raw(server, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, key=key,
                       headers={"Host": "evil.example"})
    assert status == 403


def test_a_browser_client_on_this_machine_is_served_and_other_origins_are_not(server):
    # The official inspector runs in a browser on this machine, on a port of its own.
    _, key, _ = server.agent(server.kit(["web"]))
    # A stateless (2026-07-28) request says who it is in its own _meta.
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "inspector", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    port = server.base.rsplit(":", 1)[1]
    for origin in (f"http://127.0.0.1:{port}", "http://localhost:6274", "http://127.0.0.1:5173", "http://[::1]:8080"):
        status, _, text = raw(server, listing, key=key, headers={"Origin": origin, "Mcp-Method": "tools/list"})
        assert status == 200, (origin, text)
        assert "web.read" in text, text
    for origin in ("https://evil.example", "http://localhost.evil.example:6274", "null"):
        status, _, _ = raw(server, listing, key=key, headers={"Origin": origin})
        assert status == 403, origin


def test_a_key_holds_a_bounded_number_of_sessions(server):
    _, key, _ = server.agent(server.kit(["web"]))
    sessions = [_session(server, key, "2025-11-25") for _ in range(32)]
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    _, _, text = raw(server, init, key=key, headers={"MCP-Protocol-Version": "2025-11-25"})
    assert "too_many_sessions" in text, text
    # Another key is not affected, and closing a session makes room.
    _, other, _ = server.agent(server.kit(["web"]))
    _session(server, other, "2025-11-25")
    req = urllib.request.Request(server.url, method="DELETE")
    req.add_header("Authorization", "Bearer " + key)
    for k, v in sessions[0].items():
        req.add_header(k, v)
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status in (200, 202, 204)
    for _ in range(50):
        _, _, text = raw(server, init, key=key, headers={"MCP-Protocol-Version": "2025-11-25"})
        if "too_many_sessions" not in text:
            break
        time.sleep(0.1)
    assert "too_many_sessions" not in text, text


async def test_a_128_way_race_on_one_hard_cap_over_both_transports(server):
    profile, key, _ = server.agent(server.kit(["cards"], {"budget": {"hard_cap": "10"}}))
    args = {"amount": "1.00", "merchant": "acme"}

    async def over_mcp(client, i):
        r = await client.call_tool("naive_cards_charge", dict(args, memo=f"mcp-{i}"))
        return r.structured_content.get("ok") is True

    async def over_v1(http, i):
        res = await http.post(f"{server.base}/v1/users/{profile}/cards/charge", json=dict(args, memo=f"v1-{i}"))
        assert res.status_code in (200, 403), res.text
        return res.status_code == 200

    headers = {"Authorization": "Bearer " + key}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with server.mcp(key, "legacy") as a, server.mcp(key, "auto") as b:
            calls = [over_mcp(a if i % 2 else b, i) for i in range(64)] + [over_v1(http, i) for i in range(64)]
            ran = await asyncio.gather(*calls)
    assert sum(ran) == 10
    status, budget = server.api("GET", f"/v1/users/{profile}/budget")
    assert (budget["totals"]["posted"], budget["totals"]["pending"]) == ("10.00", "0.00"), budget
    binary = os.environ.get("NAIVE_SERVER_BIN", str(ROOT / "target/debug/server"))
    check = subprocess.run([binary, "check"], env=dict(os.environ, DATABASE_URL=server.database_url),
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr


async def test_each_entry_records_its_transport(server, mode):
    profile, key, _ = server.agent(server.kit(["web"]))
    status, _ = server.api("POST", f"/v1/users/{profile}/web/read", {"url": "https://example.test/v1"}, key=key)
    assert status == 200
    async with server.mcp(key, mode) as c:
        assert (await c.call_tool("naive_web_read", {"url": "https://example.test/mcp"})).is_error is False
        await c.call_tool("naive_email_send", {"to": "someone@example.test"})
    status, page = server.api("GET", f"/v1/users/{profile}/logs?limit=500")
    seen = [(e["kind"], e["action"], e["transport"]) for e in reversed(page["items"])
            if e["kind"] in ("action", "refusal")]
    assert seen == [("action", "web.read", "http"), ("action", "web.read", "mcp"), ("refusal", "email.send", "mcp")]


def test_a_session_belongs_to_the_profile_that_opened_it(server):
    _, key_a, _ = server.agent(server.kit(["web"]))
    _, key_b, _ = server.agent(server.kit(["web"]))
    session = _session(server, key_a, "2025-11-25")
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    _, _, text = raw(server, listing, key=key_b, headers=session)
    assert "another agent" in _answer(text)["error"]["message"], text
    _, _, text = raw(server, listing, key=key_a, headers=session)
    assert "naive_web_read" in [t["name"] for t in _answer(text)["result"]["tools"]], text


def test_a_session_answers_a_request_with_one_json_body(server):
    _, key, _ = server.agent(server.kit(["web"]))
    session = _session(server, key, "2025-11-25")
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "naive_web_read", "arguments": {"url": "https://example.test/json"}}}
    status, got, text = raw(server, call, key=key, headers=session)
    assert (status, got["Content-Type"]) == (200, "application/json"), text
    answer = json.loads(text)
    assert (answer["id"], answer["result"]["isError"]) == (7, False), text
    # The session's own stream of server messages is still an event stream.
    req = urllib.request.Request(server.url, method="GET")
    for k, v in {**session, "Accept": "text/event-stream", "Authorization": "Bearer " + key}.items():
        req.add_header(k, v)
    with urllib.request.urlopen(req, timeout=30) as r:
        assert (r.status, r.headers["Content-Type"]) == (200, "text/event-stream"), r.headers


def _session(server, key, version):
    """Opens a session at `version` over raw HTTP: the headers for its later messages."""
    headers = {"MCP-Protocol-Version": version}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    status, got, text = raw(server, init, key=key, headers=headers)
    assert status == 200, text
    headers["Mcp-Session-Id"] = got["Mcp-Session-Id"]
    status, _, _ = raw(server, {"jsonrpc": "2.0", "method": "notifications/initialized"}, key=key, headers=headers)
    assert status == 202
    return headers


def _answer(text):
    lines = [l[5:] for l in text.splitlines() if l.startswith("data:") and l[5:].strip()]
    return json.loads(lines[-1] if lines else text)


def test_invalid_arguments_take_the_form_each_spec_version_prescribes(server):
    profile, key, _ = server.agent(server.kit(["cards"]))
    before = log_count(server, profile)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "naive_cards_charge", "arguments": {"merchant": "acme"}}}
    # 2025-06-18 and older: a JSON-RPC error, with the problem code in its data.
    _, _, text = raw(server, call, key=key, headers=_session(server, key, "2025-06-18"))
    error = _answer(text)["error"]
    assert (error["code"], error["data"]["code"]) == (-32602, "missing_argument"), text
    # 2025-11-25: a tool result with isError, so the model can read what to fix.
    _, _, text = raw(server, call, key=key, headers=_session(server, key, "2025-11-25"))
    result = _answer(text)["result"]
    assert (result["isError"], result["structuredContent"]["code"]) == (True, "missing_argument"), text
    assert log_count(server, profile) == before
