"""Slack's request signing, checked against Slack's own Python SDK (PyPI `slack_sdk`), so the
gateway's verifier and the reference Slack's driver are not written from one misunderstanding:

- a request signed by `slack_sdk`'s `SignatureVerifier` is accepted by the gateway's
  interactivity endpoint, and one signed with another secret is refused;
- a request the reference Slack's driver (`server slack`, `POST /interact`) signed is valid
  to `slack_sdk`'s verifier.

The real server binary and the reference Slack run as their own processes.
"""

import json
import time
import urllib.parse
import urllib.request

from slack_sdk.signature import SignatureVerifier

from conftest import COMPANY, reference_program, running_server

SECRET = "python-suite-signing-secret-0123456789"


def reference_slack():
    return reference_program("slack", "--signing-secret", SECRET)


def post(url, body, headers):
    req = urllib.request.Request(url, data=body.encode(), method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def form(payload):
    return urllib.parse.urlencode({"payload": json.dumps(payload)})


PAYLOAD = {
    "type": "block_actions",
    "team": {"id": "T0REFERENCE"},
    "user": {"id": "U0PYTHON", "username": "python"},
    "actions": [{"action_id": "naive_open", "type": "button"}],
}


def test_slack_sdk_signatures_and_the_reference_driver_agree_with_the_gateway():
    with reference_slack() as slack, running_server(NAIVE_SLACK_API_URL=slack + "/api") as server:
        app = {"bot_token": "xoxb-python", "signing_secret": SECRET, "channels": ["C0PYTHON"]}
        status, shown = server.api("PUT", "/v1/slack", app, key=COMPANY)
        assert status == 200, shown
        url = shown["interactions_url"]

        # Signed by Slack's SDK: accepted.
        body, ts = form(PAYLOAD), str(int(time.time()))
        signature = SignatureVerifier(SECRET).generate_signature(timestamp=ts, body=body)
        headers = {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature,
                   "Content-Type": "application/x-www-form-urlencoded"}
        assert post(url, body, headers) == (200, "")

        # Signed by the SDK with another secret: refused, with its code.
        other = SignatureVerifier("another-secret-0123456789").generate_signature(timestamp=ts, body=body + " ")
        status, answer = post(url, body + " ", {**headers, "X-Slack-Signature": other})
        assert (status, json.loads(answer)["code"]) == (403, "slack_signature_invalid")

        # Signed by the reference Slack's driver: valid to the SDK, and accepted.
        status, driven = post(slack + "/interact", json.dumps({"url": url, "payload": PAYLOAD}),
                              {"Content-Type": "application/json"})
        assert status == 200, driven
        driven = json.loads(driven)
        sent = driven["sent"]
        assert SignatureVerifier(SECRET).is_valid(
            body=sent["body"], timestamp=sent["timestamp"], signature=sent["signature"]
        )
        assert not SignatureVerifier("another-secret-0123456789").is_valid(
            body=sent["body"], timestamp=sent["timestamp"], signature=sent["signature"]
        )
        assert driven["status"] == 200, driven
