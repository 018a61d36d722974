"""A log stream's OCSF events, checked against the OCSF 1.5.0 schema by ocsf-emitter (PyPI:
pydantic models generated from the schema, plus its invariant checks: class and category
identity, type_uid = class_uid * 100 + activity_id, the sibling names, the schema version),
as they arrive at the reference Splunk HTTP Event Collector (`server hec-receiver`, its own
process) from the real server binary.

The tenant's log holds a kit edit, a key issued, an allowed, a parked and a refused call, a
console sign-in, an app token, an approval and a revoke: every event must validate, in the
log's order, each carrying its entry (with its hash) in `unmapped`.
"""

import json
import time
import urllib.request

from ocsf_emitter import _models
from ocsf_emitter.validate import validate

from conftest import reference_program, running_server

TOKEN = "python-suite-hec-token-0123456789"
MODELS = {
    3001: _models.AccountChange,
    3002: _models.Authentication,
    3004: _models.EntityManagement,
    3005: _models.UserAccess,
    6003: _models.ApiActivity,
}


def reference_hec():
    return reference_program("hec-receiver", "--token", TOKEN)


def received(hec):
    with urllib.request.urlopen(hec + "/received", timeout=10) as r:
        return json.loads(r.read())


def some_activity(server):
    """A log of many kinds: each call's status as a client sees it."""
    kit = server.kit(["cards"], {"budget": {"hard_cap": "100"}, "approve": {"above": "25"}})
    profile, key, _ = server.agent(kit)
    charge = f"/v1/users/{profile}/cards/charge"
    status, _ = server.api("POST", charge, {"amount": "10.00", "merchant": "acme"}, key=key)
    assert status == 200
    status, parked = server.api("POST", charge, {"amount": "30.00", "merchant": "acme"}, key=key)
    assert status == 202, parked
    status, refused = server.api("POST", f"/v1/users/{profile}/email/send", {"to": "a@example.test", "body": "x"}, key=key)
    assert status == 403, refused
    approval = parked["recovery"][0]["approval_id"]
    status, body = server.api("POST", f"/v1/approvals/{approval}/approve", {}, key=server.human())
    assert status == 200, body
    status, body = server.api("POST", f"/v1/agent-profiles/{profile}/revoke")
    assert status == 200, body


def test_every_ocsf_event_a_stream_sends_validates_against_the_schema():
    with running_server() as server, reference_hec() as hec:
        url = hec + "/services/collector/event"
        spec = {"url": url, "kind": "splunk_hec", "format": "ocsf", "token": TOKEN, "start": "beginning"}
        status, created = server.api("POST", "/v1/streams", spec)
        assert status == 201, created
        assert created["secret"] is None and created["stream"]["auth"] == "token", created
        some_activity(server)
        stream = created["stream"]["id"]
        for _ in range(300):
            _, s = server.api("GET", f"/v1/streams/{stream}")
            if s["health"]["state"] == "caught_up":
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"the stream never caught up: {s}")
        got = received(hec)
        assert got["refused"] == 0, got
        events = got["events"]
        seqs = [e["event"]["metadata"]["sequence"] for e in events]
        assert seqs == sorted(set(seqs)), seqs
        for e in events:
            assert e["sourcetype"] == "naive:ocsf" and isinstance(e["time"], float), e
            ev = e["event"]
            validate(MODELS[ev["class_uid"]].model_validate(ev))
            assert ev["unmapped"]["seq"] == ev["metadata"]["sequence"] and len(ev["unmapped"]["hash"]) == 64
        classes = {e["event"]["class_uid"] for e in events}
        assert {6003, 3001, 3002, 3004} <= classes, classes
        dispositions = {e["event"].get("disposition") for e in events if e["event"]["class_uid"] == 6003}
        assert {"Allowed", "Delayed", "Blocked", "Approved"} <= dispositions, dispositions
