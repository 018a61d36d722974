"""Approvals for teams over MCP (issue #34): an agent says why it asks, and
`naive_approvals_get` shows the quorum's progress while two people, one from finance, decide
over /v1 with their own tokens."""

import pytest

from conftest import ADMIN_PASSWORD, personal_token

pytestmark = pytest.mark.anyio


async def test_approvals_get_shows_the_quorums_progress_and_the_agents_reason(server, mode):
    rules = [{"above": "100", "approvers": 2, "role": "finance", "window": "2h"}]
    kit = server.kit(["cards"], {"budget": {"hard_cap": "1000"}, "approve": {"rules": rules}})
    _, key, _ = server.agent(kit)
    finance = personal_token(server.base, "finance", ADMIN_PASSWORD, roles=("finance",))
    async with server.mcp(key, mode) as c:
        listed = {t.name: t for t in (await c.list_tools()).tools}
        assert "justification" in listed["naive_cards_charge"].input_schema["properties"]
        r = await c.call_tool("naive_cards_charge", {"amount": "150.00", "merchant": "acme", "justification": "restock <b>bolts</b>"})
        env = r.structured_content
        assert (r.is_error, env["verdict"]) == (False, "park"), env
        assert "2 approvers, one of them with role finance" in env["message"], env["message"]
        approval_id = env["recovery"][0]["approval_id"]

        polled = (await c.call_tool("naive_approvals_get", {"approval_id": approval_id})).structured_content
        assert polled["justification"] == "restock <b>bolts</b>", "kept as plain text, not markup"
        assert (polled["quorum"]["required"], polled["quorum"]["role"], polled["quorum"]["votes"]) == (2, "finance", [])

        status, body = server.api("POST", f"/v1/approvals/{approval_id}/approve", {"note": "ok"}, key=server.human())
        assert status == 202, body
        polled = (await c.call_tool("naive_approvals_get", {"approval_id": approval_id})).structured_content
        assert polled["status"] == "pending"
        assert [v["username"] for v in polled["quorum"]["votes"]] == ["admin"], polled["quorum"]

        status, body = server.api("POST", f"/v1/approvals/{approval_id}/approve", {}, key=finance)
        assert status == 200, body
        polled = (await c.call_tool("naive_approvals_get", {"approval_id": approval_id})).structured_content
    assert polled["status"] == "approved", polled
    assert [(v["username"], v["named"]) for v in polled["quorum"]["votes"]] == [("admin", False), ("finance", True)], "the admin's token carries no finance role"


async def test_a_justification_over_its_bound_is_refused_and_nothing_parks(server, mode):
    kit = server.kit(["cards"], {"approve": {"above": "1"}})
    _, key, _ = server.agent(kit)
    async with server.mcp(key, mode) as c:
        r = await c.call_tool("naive_cards_charge", {"amount": "5.00", "merchant": "acme", "justification": "x" * 501})
    assert r.is_error is True
    assert "justification" in (r.content[0].text if r.content else str(r.structured_content))
