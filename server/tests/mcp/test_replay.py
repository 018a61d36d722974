"""Replay over recorded traffic (issue #35), black box: a known mix of calls over /v1 and over
MCP (allowed charges, a park, a deny, a brain write), then a draft with a lower cap and a
merchant rule replayed over it, each changed call and the money checked exactly; and an
agent's replay reaches its own calls only."""

import pytest

from conftest import unique

pytestmark = pytest.mark.anyio

LIVE = {"budget": {"hard_cap": "1000"}, "approve": {"above": "200"}}


def charge(server, profile, key, amount, merchant):
    status, body = server.api("POST", f"/v1/users/{profile}/cards/charge",
                              {"amount": amount, "merchant": merchant}, key=key)
    return status, body


def changed(report):
    return [(c["action"], c["amount"], c["was"]["verdict"], c["was"]["detail"],
             c["would_be"]["verdict"], c["would_be"]["detail"]) for c in report["changes"]]


async def test_a_draft_replayed_over_http_and_mcp_traffic(server, mode):
    kit = server.kit(["cards", "brain"], LIVE)
    profile, key, _ = server.agent(kit)
    assert charge(server, profile, key, "100.00", "acme")[0] == 200
    async with server.mcp(key, mode) as c:
        r = await c.call_tool("naive_cards_charge", {"amount": "150.00", "merchant": "globex"})
        assert r.structured_content["ok"] is True, r.structured_content
        r = await c.call_tool("naive_cards_charge", {"amount": "300.00", "merchant": "acme"})
        assert r.structured_content["verdict"] == "park", r.structured_content
        claims = [{"object_type": "fact", "content": {"text": f"{unique('office')} opens at nine."}}]
        r = await c.call_tool("naive_brain_submit_writeback", {"run_id": "run-1", "source": "handbook", "claims": claims})
        assert r.is_error is False, r.structured_content
    status, body = charge(server, profile, key, "2000.00", "acme")
    assert (status, body["reason"]) == (403, "budget_exceeded"), body
    assert charge(server, profile, key, "100.00", "globex")[0] == 200

    draft = {"name": kit, "primitives": ["cards", "brain"],
             "can": [{"action": "cards.charge", "effect": "allow", "merchants": ["acme"]}],
             "limits": {"budget": {"hard_cap": "300"}, "approve": {"above": "200"}}}
    status, report = server.api("POST", f"/v1/kits/{kit}/replay", {"draft": draft})
    assert status == 200, report
    # Six calls: the writeback is decided again too (unchanged: the draft keeps brain).
    assert (report["summary"]["calls"], report["summary"]["changed"]) == (6, 3), report["summary"]
    assert changed(report) == [
        ("cards.charge", "150.00", "allow", None, "deny", "merchant_not_allowed"),
        # With the $150 refused, $100 posted and $300 asked for pass the $300 cap.
        ("cards.charge", "300.00", "park", "above_approval_threshold", "deny", "hard_cap_exceeded"),
        ("cards.charge", "100.00", "allow", None, "deny", "merchant_not_allowed"),
    ]
    money = report["summary"]["money"]
    assert (money["refused"], money["parked"], money["ran"]) == ("250.00", "0.00", "0.00"), money
    transitions = {(t["from"], t["to"]): (t["calls"], t["amount"]) for t in report["summary"]["transitions"]}
    assert transitions == {("allow", "deny"): (2, "250.00"), ("park", "deny"): (1, "300.00")}

    # The agent's own replay, over MCP and /v1, is the same: all these calls are its own.
    async with server.mcp(key, mode) as c:
        r = await c.call_tool("naive_kit_replay", {"draft": draft, "days": 1})
    assert r.is_error is False, r.structured_content
    assert changed(r.structured_content) == changed(report)
    status, own = server.api("POST", f"/v1/kits/{kit}/replay", {"draft": draft}, key=key)
    assert (status, changed(own)) == (200, changed(report)), own

    # Nothing was reserved or written: the budget is as the calls left it.
    status, budget = server.api("GET", f"/v1/users/{profile}/budget", key=key)
    assert (budget["totals"]["posted"], budget["totals"]["pending"]) == ("350.00", "300.00"), budget


async def test_an_agent_replays_its_own_calls_of_its_own_kit_only(server, mode):
    kit = server.kit(["cards"], LIVE)
    mine, key, _ = server.agent(kit)
    theirs, other_key, _ = server.agent(kit)
    assert charge(server, mine, key, "10.00", "acme")[0] == 200
    assert charge(server, theirs, other_key, "20.00", "acme")[0] == 200
    draft = {"name": kit, "primitives": ["cards"], "limits": {"budget": {"hard_cap": "1"}}}
    status, company = server.api("POST", f"/v1/kits/{kit}/replay", {"draft": draft})
    assert (status, company["summary"]["changed"]) == (200, 2), company
    status, own = server.api("POST", f"/v1/kits/{kit}/replay", {"draft": draft}, key=key)
    assert (status, [c["amount"] for c in own["changes"]]) == (200, ["10.00"]), own
    other_kit = server.kit(["cards"], LIVE)
    status, body = server.api("POST", f"/v1/kits/{other_kit}/replay", {"draft": {**draft, "name": other_kit}}, key=key)
    assert (status, body["code"]) == (404, "not_found"), body
    async with server.mcp(key, mode) as c:
        r = await c.call_tool("naive_kit_replay", {"draft": {**draft, "name": other_kit}})
    assert r.is_error is True


async def test_bad_replays_and_shadows_are_4xx_and_write_nothing(server, mode):
    kit = server.kit(["cards"], LIVE)
    base = {"name": kit, "primitives": ["cards"], "limits": {}}
    cases = [
        ({"from": "2026-01-01T00:00:00Z"}, "range_too_long"),
        ({"to": "2099-01-01T00:00:00Z"}, "range_in_future"),
        ({"draft": {**base, "limits": {"budget": {"hard_cap": "5", "soft_cap": "9"}}}}, "invalid_kit"),
        ({"draft": {**base, "name": "Other"}}, "kit_name_mismatch"),
    ]
    for body, code in cases:
        status, problem = server.api("POST", f"/v1/kits/{kit}/replay", body)
        assert (status, problem["code"]) == (400, code), problem
    status, problem = server.api("POST", f"/v1/kits/{unique('Nope')}/replay", {})
    assert (status, problem["code"]) == (404, "not_found"), problem
    status, problem = server.api("PUT", f"/v1/kits/{kit}/shadow", {**base, "limits": {"budget": {"hard_cap": "5", "soft_cap": "9"}}})
    assert (status, problem["code"]) == (400, "invalid_kit"), problem
    assert "limits.budget.soft_cap" in problem["message"], "the error names its path"
    status, shadow = server.api("PUT", f"/v1/kits/{kit}/shadow", base)
    assert status == 201, shadow
    status, problem = server.api("PUT", f"/v1/kits/{kit}/shadow", base)
    assert (status, problem["code"]) == (409, "shadow_exists"), problem
    status, problem = server.api("POST", f"/v1/kits/{kit}/shadow/promote")
    assert (status, problem["code"]) == (400, "if_match_required"), problem
    status, _ = server.api("DELETE", f"/v1/kits/{kit}/shadow")
    assert status == 204
    status, problem = server.api("GET", f"/v1/kits/{kit}/shadow")
    assert (status, problem["code"]) == (404, "not_found"), problem


async def test_a_shadow_counts_live_calls_and_their_differences_without_refusing_any(server, mode):
    kit = server.kit(["cards"], LIVE)
    profile, key, _ = server.agent(kit)
    draft = {"name": kit, "primitives": ["cards"], "limits": {"budget": {"hard_cap": "50"}}}
    status, shadow = server.api("PUT", f"/v1/kits/{kit}/shadow", draft)
    assert status == 201, shadow
    assert charge(server, profile, key, "30.00", "acme")[0] == 200
    async with server.mcp(key, mode) as c:
        r = await c.call_tool("naive_cards_charge", {"amount": "30.00", "merchant": "acme"})
    assert r.structured_content["ok"] is True, "a shadow deny never refuses a live call"
    status, view = server.api("GET", f"/v1/kits/{kit}/shadow")
    assert status == 200, view
    totals = view["totals"]
    assert (totals["calls"], totals["differed"], totals["money"]["refused"]) == (2, 1, "30.00"), totals
    assert [(c["was"]["verdict"], c["would_be"]["detail"]) for c in totals["recent"]] == [("allow", "hard_cap_exceeded")]
    status, saved = server.api("POST", f"/v1/kits/{kit}/shadow/promote")
    assert status == 400


async def test_a_replay_of_too_many_days_is_refused_not_a_crash(server, mode):
    """#47 finding 9: `days` past what a replay reads, or past what a date can hold, answers
    a refusal that names the argument; the session goes on."""
    kit = server.kit(["cards"], LIVE)
    _, key, _ = server.agent(kit)
    draft = {"name": kit, "primitives": ["cards"], "limits": {}}
    async with server.mcp(key, mode) as c:
        for days in (32, 10**15, 10**20, 0, -5):
            r = await c.call_tool("naive_kit_replay", {"draft": draft, "days": days})
            assert r.is_error is True, (days, r.structured_content)
            assert r.structured_content["code"] in ("invalid_argument", "range_too_long"), r.structured_content
        r = await c.call_tool("naive_kit_replay", {"draft": draft, "days": 3})
        assert r.is_error is False, r.structured_content
