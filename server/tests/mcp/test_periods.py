"""Limits over time over MCP and /v1 (issue #33), on a server whose clock the test drives.

A monthly cap refuses on the tenant's last day of the month and allows again after midnight
in the tenant's zone, not UTC's; a rate limit lets exactly N calls of a concurrent burst
through, over both transports together, and refuses the rest as the one retryable deny.
"""

import asyncio

import httpx2
import pytest

pytestmark = pytest.mark.anyio


def charge(amount):
    return {"amount": amount, "merchant": "acme"}


async def test_a_monthly_cap_resets_at_midnight_in_the_tenants_zone_not_utcs(clocked, mode):
    server, clock = clocked
    clock.set("2026-12-30T12:00:00Z")
    status, settings = server.api("PUT", "/v1/tenant/settings", {"time_zone": "America/New_York"})
    assert status == 200, settings
    # A new zone takes effect at the old one's next midnight.
    assert settings["time_zone"] == "UTC" and settings["next_time_zone"] == "America/New_York", settings
    assert settings["time_zone_changes_at"].startswith("2026-12-31T00:00:00"), settings
    kit = server.kit(["cards"], {"budget": {"periods": [{"every": "month", "hard_cap": "100"}]}})
    profile, key, _ = server.agent(kit)
    clock.set("2026-12-31T20:00:00Z")  # 15:00 on the 31st in New York
    async with server.mcp(key, mode) as c:
        first = await c.call_tool("naive_cards_charge", charge("60.00"))
        assert first.is_error is False, first.structured_content
        second = await c.call_tool("naive_cards_charge", charge("60.00"))
        env = second.structured_content
        assert second.is_error is True
        assert (env["verdict"], env["reason"], env["retryable"]) == ("deny", "budget_exceeded", False), env
        details = env["error"]["details"]
        assert details == {"reason": "period_hard_cap_exceeded",
                           "limit": "limits.budget.periods[0].hard_cap",
                           "resets_at": "2027-01-01T05:00:00Z"}, details
        assert env["recovery"][0]["kind"] == "wait_for_reset", env["recovery"]
        explained = (await c.call_tool("naive_policy_explain",
                                       {"action": "naive_cards_charge", "args": charge("60.00")})).structured_content
        assert explained["verdict"] == "deny"
        assert {"period": "month", "resets_at": "2027-01-01T05:00:00Z"}.items() <= explained["reasons"][0].items()
        # New Year in UTC is still the 31st in New York: the month has not ended there.
        clock.set("2027-01-01T03:00:00Z")
        still = await c.call_tool("naive_cards_charge", charge("60.00"))
        assert still.is_error is True and still.structured_content["reason"] == "budget_exceeded"
        clock.set("2027-01-01T05:00:01Z")
        again = await c.call_tool("naive_cards_charge", charge("60.00"))
        assert again.is_error is False, again.structured_content
    status, budget = server.api("GET", f"/v1/users/{profile}/budget")
    assert status == 200, budget
    month = budget["periods"][0]
    assert (month["every"], month["current"]["first_day"], month["current"]["posted"]) == ("month", "2027-01-01", "60.00")
    assert month["previous"][0]["first_day"] == "2026-12-01" and month["previous"][0]["posted"] == "60.00", month


async def test_a_rate_limit_lets_exactly_n_of_a_concurrent_burst_through_on_both_transports(clocked):
    server, clock = clocked
    clock.set("2027-02-01T10:00:00Z")
    kit = server.kit(["web"], {"rate": [{"action": "web.*", "calls": 7, "per": "hour"}]})
    profile, key, _ = server.agent(kit)
    args = {"url": "https://example.test/"}

    async def over_mcp(client):
        r = await client.call_tool("naive_web_read", args)
        return r.structured_content

    async def over_v1(http):
        res = await http.post(f"{server.base}/v1/users/{profile}/web/read", json=args)
        assert res.status_code in (200, 429), res.text
        if res.status_code == 429:
            assert int(res.headers["retry-after"]) > 0
        return res.json()

    headers = {"Authorization": "Bearer " + key}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with server.mcp(key, "legacy") as a, server.mcp(key, "auto") as b:
            calls = [over_mcp(a if i % 2 else b) for i in range(10)] + [over_v1(http) for _ in range(10)]
            answers = await asyncio.gather(*calls)
    ran = [x for x in answers if x.get("ok") is True]
    limited = [x for x in answers if x.get("reason") == "rate_limited"]
    assert (len(ran), len(limited)) == (7, 13), answers
    for env in limited:
        assert (env["verdict"], env["retryable"], env["repeat"]) == ("deny", True, 1), env
        assert env["recovery"] == [{"kind": "retry_after", "seconds": 3600}], env["recovery"]
        assert env["error"]["details"]["limit"] == "limits.rate[0]"
    # The next window lets calls through again; a refused call counted nothing.
    clock.set("2027-02-01T11:00:00Z")
    async with server.mcp(key, "auto") as c:
        r = await c.call_tool("naive_web_read", args)
    assert r.is_error is False, r.structured_content
