"""Prometheus metrics (issue #36), black box: the real server binary scraped over HTTP before
and after a known mix of governed calls over /v1 and MCP (allowed, parked then approved,
parked then denied, refused by the cap, a connector failure, a refused sign-in): every
counter and histogram count moved by exactly that mix, the gauges say what is waiting while
it waits, and no label value is an id, a name or a secret. /metrics is closed without the
operator key, and served without one on a separate address when asked."""

import re
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import ADMIN_PASSWORD, COMPANY, free_port, running_server, unique

pytestmark = pytest.mark.anyio

OPERATOR = "operator-key-for-the-metrics-suite-0123"
LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


@pytest.fixture(scope="module")
def metered():
    with running_server(NAIVE_OPERATOR_KEY=OPERATOR) as s:
        yield s


def get(url, key=None):
    req = urllib.request.Request(url)
    if key:
        req.add_header("Authorization", "Bearer " + key)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def parse(text):
    """{(name, ((label, value), ...)): value} of every sample."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        assert m, f"not a sample line: {line!r}"
        labels = tuple(sorted(LABEL.findall(m.group(2) or "")))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def scrape(server):
    status, ctype, text = get(server.base + "/metrics", OPERATOR)
    assert status == 200, text
    assert ctype.startswith("text/plain; version=0.0.4"), ctype
    return parse(text)


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def moved(before, after, name, **labels):
    return value(after, name, **labels) - value(before, name, **labels)


def charge(server, profile, key, amount):
    return server.api("POST", f"/v1/users/{profile}/cards/charge", {"amount": amount, "merchant": "acme"}, key=key)


def failed_sign_in(server):
    data = urllib.parse.urlencode({"username": "admin", "password": "not-" + ADMIN_PASSWORD, "next": "/"}).encode()
    req = urllib.request.Request(server.base + "/login", data=data, method="POST")
    req.add_header("Referer", server.base + "/")

    class Stay(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None

    try:
        urllib.request.build_opener(Stay).open(req, timeout=10)
    except urllib.error.HTTPError as e:
        assert e.code == 303 and "invalid" in e.headers["Location"], e.headers


async def the_mix(server, mode):
    """The known mix; answers what the test needs to look for in labels."""
    kit = server.kit(["cards", "email"], {"budget": {"hard_cap": "1000"}, "approve": {"above": "200"}})
    profile, key, key_id = server.agent(kit)
    status, body = server.api("PUT", "/v1/connectors/email", {"kind": "http", "url": "http://127.0.0.1:9/mail"})
    assert status == 200, body
    assert charge(server, profile, key, "50.00")[0] == 200
    status, first = charge(server, profile, key, "300.00")
    assert (status, first["verdict"]) == (202, "park"), first
    async with server.mcp(key, mode) as c:
        r = await c.call_tool("naive_cards_charge", {"amount": "60.00", "merchant": "acme"})
        assert r.structured_content["ok"] is True, r.structured_content
        r = await c.call_tool("naive_cards_charge", {"amount": "400.00", "merchant": "acme"})
        second = r.structured_content
        assert second["verdict"] == "park", second
        waiting = scrape(server)
        sessions = value(waiting, "naive_mcp_sessions")
    status, refused = charge(server, profile, key, "5000.00")
    assert status == 403, refused
    status, failed = server.api("POST", f"/v1/users/{profile}/email/send",
                                {"to": "someone@example.test", "body": "hi"}, key=key)
    assert status == 503, failed
    ids = [a["recovery"][0]["approval_id"] for a in (first, second)]
    status, body = server.api("POST", f"/v1/approvals/{ids[0]}/approve", {"note": "ok"}, key=server.human())
    assert status == 200, body
    status, body = server.api("POST", f"/v1/approvals/{ids[1]}/deny", {"reason": "no"}, key=server.human())
    assert status == 200, body
    failed_sign_in(server)
    reasons = {"parked": first["reason"], "refused": refused["reason"], "unavailable": failed["reason"]}
    secrets = [kit, profile, key, key_id, COMPANY, OPERATOR, ids[0], ids[1], "someone@example.test", "127.0.0.1:9"]
    return waiting, sessions, reasons, secrets


async def test_a_known_mix_moves_every_counter_by_exactly_that_mix(metered, mode):
    server = metered
    server.human()  # its sign-in is not part of the mix
    before = scrape(server)
    waiting, sessions, reasons, _ = await the_mix(server, mode)
    after = scrape(server)

    calls = "naive_governed_calls_total"
    expected = {
        ("http", "cards.charge", "executed", "none"): 1,
        ("mcp", "cards.charge", "executed", "none"): 1,
        ("http", "cards.charge", "parked", reasons["parked"]): 1,
        ("mcp", "cards.charge", "parked", reasons["parked"]): 1,
        ("http", "cards.charge", "refused", reasons["refused"]): 1,
        ("http", "email.send", "unavailable", reasons["unavailable"]): 1,
    }
    for (transport, action, verdict, reason), n in expected.items():
        got = moved(before, after, calls, transport=transport, action=action, verdict=verdict, reason=reason)
        assert got == n, (transport, action, verdict, reason, got)
    total = sum(v for (name, _), v in after.items() if name == calls) - \
        sum(v for (name, _), v in before.items() if name == calls)
    assert total == 6, "nothing else was counted"

    assert moved(before, after, "naive_call_seconds_count", transport="http") == 4
    assert moved(before, after, "naive_call_seconds_count", transport="mcp") == 2
    assert moved(before, after, "naive_decision_seconds_count") == 6
    assert moved(before, after, "naive_approvals_decided_total", kind="approved") == 1
    assert moved(before, after, "naive_approvals_decided_total", kind="denied") == 1
    assert moved(before, after, "naive_connector_seconds_count", kind="http") == 1
    assert moved(before, after, "naive_connector_errors_total", kind="http") == 1
    assert moved(before, after, "naive_sign_in_failures_total", kind="password") == 1
    assert moved(before, after, "naive_writer_batch_jobs_count") > 0
    assert moved(before, after, "naive_writer_commit_seconds_count") > 0

    # While both parks waited: two more holds, $700 more held, two more approvals under five
    # minutes old (the demo tenant has its own waiting).
    assert moved(before, waiting, "naive_holds_pending") == 2
    assert moved(before, waiting, "naive_holds_pending_cents") == 70000
    assert moved(before, waiting, "naive_approvals_waiting", age="under_5m") == 2
    assert value(waiting, "naive_approvals_waiting", age="over_1d") == 0
    assert 0 <= value(waiting, "naive_approval_oldest_wait_seconds") < 300
    assert sessions == (1 if mode == "legacy" else 0), "a legacy client holds one session; 2026-07-28 is stateless"
    # Decided: they wait no more.
    assert moved(before, after, "naive_holds_pending") == 0
    assert moved(before, after, "naive_approvals_waiting", age="under_5m") == 0


async def test_no_label_is_an_id_a_name_or_a_secret(metered, mode):
    server = metered
    _, _, _, secrets = await the_mix(server, mode)
    allowed_keys = {"transport", "action", "verdict", "reason", "kind", "channel", "age", "state", "le"}
    samples = scrape(server)
    assert samples, "the scrape is not empty"
    for (name, labels) in samples:
        assert name.startswith("naive_"), name
        for k, v in labels:
            assert k in allowed_keys, (name, k)
            assert re.fullmatch(r"[a-z0-9_.+]*|\+Inf|[0-9.e+-]+", v), (name, k, v)
            for s in secrets:
                assert s not in v, (name, k, v)
            assert not v.startswith(("prf_", "key_", "apr_", "ten_")), (name, k, v)


def test_metrics_are_closed_without_the_operator_key(metered):
    status, _, body = get(metered.base + "/metrics")
    assert status == 401, body
    status, _, body = get(metered.base + "/metrics", COMPANY)
    assert (status, "operator_key_required" in body) == (403, True), body


def test_a_separate_metrics_address_serves_them_without_a_key_and_the_main_one_does_not():
    port = free_port()
    with running_server(NAIVE_METRICS_ADDR=f"127.0.0.1:{port}") as server:
        status, ctype, body = get(f"http://127.0.0.1:{port}/metrics")
        assert status == 200 and "naive_governed_calls" in body, body
        assert get(server.base + "/metrics", COMPANY)[0] == 404


def test_metrics_off_counts_nothing():
    with running_server(NAIVE_METRICS="off", NAIVE_OPERATOR_KEY=OPERATOR) as server:
        status, _, body = get(server.base + "/metrics", OPERATOR)
        assert (status, body) == (200, ""), body
