"""Connecting to /mcp with OAuth 2.1, as a hosted client does (docs/mcp.md#connecting-with-oauth).

The official Python SDK's OAuth client provider runs the whole flow against the real server:
it reads the 401's resource metadata pointer, discovers the authorization server, identifies
itself with a client ID metadata document (served here over HTTPS by a CA the server trusts
with --egress-ca), and sends the person to the consent page, where the demo admin, signed
in, picks the agent profile. Then it lists the tools and makes a governed call as that
profile. The refusals the RFCs require are checked on the token endpoint directly.
"""

import base64
import hashlib
import html
import json
import re
import secrets
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from conftest import ADMIN_PASSWORD, ROOT, running_server, unique

FIXTURES = ROOT / "server/tests/fixtures"
REDIRECT = "http://127.0.0.1/callback"


class Documents(BaseHTTPRequestHandler):
    """Client ID metadata documents: a good one per path, one too large, one too slow."""

    def do_GET(self):
        base = f"https://127.0.0.1:{self.server.server_port}"
        if self.path.startswith("/large"):
            body = json.dumps({"client_id": base + self.path, "redirect_uris": [REDIRECT],
                               "client_name": "x" * 6000}).encode()
        elif self.path.startswith("/slow"):
            time.sleep(6)
            body = b"{}"
        else:
            body = json.dumps({"client_id": base + self.path, "client_name": "Test connector",
                               "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
                               "grant_types": ["authorization_code", "refresh_token"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def documents():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Documents)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(FIXTURES / "localhost-cert.pem", FIXTURES / "localhost-key.pem")
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"https://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def gw():
    with running_server(NAIVE_EGRESS_CA=str(FIXTURES / "test-ca.pem")) as s:
        yield s


def admin_browser(base):
    """An HTTP client signed in to the console as the demo admin, sending what a browser on
    the console's own pages sends."""
    http = httpx2.Client(base_url=base, timeout=30, follow_redirects=False,
                         headers={"Sec-Fetch-Site": "same-origin"})
    r = http.post("/login", data={"username": "admin", "password": ADMIN_PASSWORD, "next": "/"})
    assert r.status_code == 303, r.text
    return http


def continued(page):
    """Where a continue page's refresh leads."""
    return html.unescape(re.search(r'content="0;url=([^"]+)"', page).group(1))


def consent(http, authorization_url, profile, decision="allow"):
    """Opens the authorization URL and the consent page, and decides: where the browser is
    sent back to (the client's redirect URI)."""
    r = http.get(authorization_url)
    assert r.status_code == 200, r.text
    page = continued(r.text)
    assert page.startswith("/connect?"), page
    shown = http.get(page)
    assert shown.status_code == 200 and 'data-testid="consent"' in shown.text, shown.text[-2000:]
    assert "Test connector" in shown.text and "127.0.0.1" in shown.text
    fields = dict(urllib.parse.parse_qsl(page.split("?", 1)[1]))
    fields.update(decision=decision, act_as="profile", profile_id=profile)
    r = http.post("/oauth/authorize", data=fields)
    assert r.status_code == 200, r.text
    return continued(r.text)


def provider(gw, client_id, profile, storage):
    http = admin_browser(gw.base)
    back = {}

    async def redirect_handler(url):
        back["url"] = consent(http, url, profile)

    async def callback_handler():
        q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(back["url"]).query))
        return AuthorizationCodeResult(code=q["code"], state=q.get("state"), iss=q.get("iss"))

    metadata = OAuthClientMetadata(redirect_uris=[REDIRECT], client_name="Test connector",
                                   grant_types=["authorization_code", "refresh_token"],
                                   response_types=["code"], token_endpoint_auth_method="none")
    return OAuthClientProvider(server_url=gw.base + "/mcp", client_metadata=metadata, storage=storage,
                               redirect_handler=redirect_handler, callback_handler=callback_handler,
                               client_metadata_url=client_id)


class Memory:
    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, info):
        self.client = info


@pytest.mark.anyio
async def test_the_sdk_connects_with_oauth_and_acts_as_the_chosen_profile(gw, documents):
    profile, _, _ = gw.agent(gw.kit(["web"]))
    storage = Memory()
    auth = provider(gw, documents + "/client.json", profile, storage)
    async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
        async with Client(streamable_http_client(gw.url, http_client=http), mode="legacy") as c:
            tools = {t.name for t in (await c.list_tools()).tools}
            assert "naive_web_read" in tools and "naive_cards_charge" not in tools
            r = await c.call_tool("naive_web_read", {"url": "https://example.test/oauth"})
            assert r.is_error is False
    # The access token is that profile's, and expires within the hour.
    assert storage.tokens.expires_in <= 3600 and storage.tokens.refresh_token
    status, log = gw.api("GET", f"/v1/users/{profile}/logs")
    assert status == 200 and "web.read" in json.dumps(log), log
    # The call's entry names the connected client and its connection.
    call = next(e for e in log["items"] if e.get("action") == "web.read")
    assert call["detail"]["client"] == "Test connector" and call["detail"]["connection_id"].startswith("ocn_")
    # ...good at /mcp only: /v1 refuses it.
    status, body = gw.api("GET", f"/v1/users/{profile}/budget", key=storage.tokens.access_token)
    assert (status, body["code"]) == (401, "token_for_mcp_only")
    # The profile page lists the connection, and revoking it makes the next request a 401
    # that points at the metadata again.
    browser = admin_browser(gw.base)
    page = browser.get(f"/profiles/{profile}").text
    assert 'data-connection="Test connector"' in page and "connected by admin" in page
    connection = re.search(r'name="connection_id" value="([^"]+)"', page).group(1)
    r = browser.post("/api/revoke_connection", data={"connection_id": connection},
                     headers={"Referer": f"{gw.base}/profiles/{profile}", "Accept": "text/html"})
    assert r.status_code in (302, 303), r.text
    r = httpx2.post(gw.url, headers={"Authorization": "Bearer " + storage.tokens.access_token,
                                     "Accept": "application/json, text/event-stream"},
                    json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r.status_code == 401 and "resource_metadata=" in r.headers["WWW-Authenticate"]
    # Its refresh token is dead with it.
    r = token(gw, grant_type="refresh_token", refresh_token=storage.tokens.refresh_token,
              client_id=documents + "/client.json")
    assert (r.status_code, r.json()["error"]) == (400, "invalid_grant")


def pkce():
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def authorize_url(gw, client_id, challenge, **extra):
    q = dict(response_type="code", client_id=client_id, redirect_uri="http://127.0.0.1:45123/callback",
             code_challenge=challenge, code_challenge_method="S256", state="xyz",
             resource=gw.base + "/mcp", scope="mcp")
    q.update(extra)
    return gw.base + "/oauth/authorize?" + urllib.parse.urlencode(q)


def token(gw, **form):
    return httpx2.post(gw.base + "/oauth/token", data=form, timeout=30)


def code_for(gw, documents, profile, verifier_challenge):
    _, challenge = verifier_challenge
    http = admin_browser(gw.base)
    client_id = documents + "/client.json"
    back = consent(http, authorize_url(gw, client_id, challenge), profile)
    q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(back).query))
    assert q["state"] == "xyz" and q["iss"] == gw.base
    # A native client's loopback redirect matches on any port (RFC 8252).
    assert back.startswith("http://127.0.0.1:45123/callback?")
    return q["code"]


def test_codes_and_refresh_tokens_are_refused_as_the_rfcs_say(gw, documents):
    profile, _, _ = gw.agent(gw.kit(["web"]))
    client_id = documents + "/client.json"
    pair = pkce()
    code = code_for(gw, documents, profile, pair)
    base = dict(grant_type="authorization_code", code=code, client_id=client_id,
                redirect_uri="http://127.0.0.1:45123/callback", code_verifier=pair[0])
    # A token for another resource, a wrong verifier, a redirect URI off by a character:
    # refused, nothing issued.
    r = token(gw, **{**base, "resource": "https://other.example/mcp"})
    assert (r.status_code, r.json()["error"]) == (400, "invalid_target")
    assert r.headers["Cache-Control"] == "no-store"
    r = token(gw, **{**base, "redirect_uri": "http://127.0.0.1:45123/callbacK"})
    assert (r.status_code, r.json()["error"]) == (400, "invalid_grant")
    # The code was taken by that attempt: a second use revokes what it made.
    r = token(gw, **base)
    assert (r.status_code, r.json()["error"]) == (400, "invalid_grant")

    pair = pkce()
    code = code_for(gw, documents, profile, pair)
    r = token(gw, **{**base, "code": code, "code_verifier": pkce()[0]})
    assert (r.status_code, r.json()["error"]) == (400, "invalid_grant")

    pair = pkce()
    code = code_for(gw, documents, profile, pair)
    good = token(gw, **{**base, "code": code, "code_verifier": pair[0]})
    assert good.status_code == 200, good.text
    issued = good.json()
    assert issued["token_type"] == "Bearer" and issued["expires_in"] == 3600
    # A code used twice: refused, and the tokens it gave are revoked.
    again = token(gw, **{**base, "code": code, "code_verifier": pair[0]})
    assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")
    assert mcp_status(gw, issued["access_token"]) == 401

    # Refresh rotation: each refresh token once; presenting a rotated one revokes the family.
    pair = pkce()
    code = code_for(gw, documents, profile, pair)
    first = token(gw, **{**base, "code": code, "code_verifier": pair[0]}).json()
    assert mcp_status(gw, first["access_token"]) != 401
    second = token(gw, grant_type="refresh_token", refresh_token=first["refresh_token"], client_id=client_id)
    assert second.status_code == 200, second.text
    second = second.json()
    assert second["refresh_token"] != first["refresh_token"]
    assert mcp_status(gw, second["access_token"]) != 401
    reused = token(gw, grant_type="refresh_token", refresh_token=first["refresh_token"], client_id=client_id)
    assert (reused.status_code, reused.json()["error"]) == (400, "invalid_grant")
    assert mcp_status(gw, second["access_token"]) == 401
    latest = token(gw, grant_type="refresh_token", refresh_token=second["refresh_token"], client_id=client_id)
    assert (latest.status_code, latest.json()["error"]) == (400, "invalid_grant")

    # Revoking the profile revokes its connections: the next request is 401, no refresh works.
    pair = pkce()
    code = code_for(gw, documents, profile, pair)
    live = token(gw, **{**base, "code": code, "code_verifier": pair[0]}).json()
    assert mcp_status(gw, live["access_token"]) != 401
    status, body = gw.api("POST", f"/v1/agent-profiles/{profile}/revoke")
    assert status == 200, body
    assert mcp_status(gw, live["access_token"]) == 401
    r = token(gw, grant_type="refresh_token", refresh_token=live["refresh_token"], client_id=client_id)
    assert (r.status_code, r.json()["error"]) == (400, "invalid_grant")


def mcp_status(gw, access_token):
    r = httpx2.post(gw.url, headers={"Authorization": "Bearer " + access_token,
                                     "Accept": "application/json, text/event-stream",
                                     "MCP-Protocol-Version": "2026-07-28"},
                    json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=30)
    return r.status_code


def test_metadata_documents_that_cannot_be_trusted_stop_at_the_server(gw, documents):
    _, challenge = pkce()
    http = admin_browser(gw.base)
    for client_id, why in [
        (documents + "/large.json", "over 5120 bytes"),
        (documents + "/slow.json", "took over"),
        ("https://10.1.2.3/client.json", "egress refused"),
        ("http://127.0.0.1/client.json", "HTTPS URL"),
    ]:
        r = http.get(authorize_url(gw, client_id, challenge))
        assert r.status_code == 400 and why in html.unescape(r.text), (client_id, r.text)
    # A redirect URI the document does not list is shown, never followed.
    r = http.get(authorize_url(gw, documents + "/client.json", challenge,
                               redirect_uri="https://evil.example/callback"))
    assert r.status_code == 400 and "evil.example" not in r.headers.get("Location", "")
    # Any other bad parameter goes back to the client: plain PKCE here.
    r = http.get(authorize_url(gw, documents + "/client.json", challenge, code_challenge_method="plain"))
    assert r.status_code == 303
    assert "error=invalid_request" in r.headers["Location"] and "state=xyz" in r.headers["Location"]


def test_the_metadata_documents_name_this_server_from_its_configured_url(gw):
    r = httpx2.get(gw.base + "/.well-known/oauth-protected-resource/mcp", headers={"Host": "evil.example"})
    doc = r.json()
    assert doc["resource"] == gw.base + "/mcp" and doc["authorization_servers"] == [gw.base]
    doc = httpx2.get(gw.base + "/.well-known/oauth-authorization-server").json()
    assert doc["issuer"] == gw.base and doc["code_challenge_methods_supported"] == ["S256"]
    assert doc["client_id_metadata_document_supported"] is True
    assert doc["token_endpoint"] == gw.base + "/oauth/token"


def test_an_expired_access_token_is_refused_and_a_refresh_gives_a_working_one(documents):
    with running_server(NAIVE_EGRESS_CA=str(FIXTURES / "test-ca.pem"), NAIVE_OAUTH_ACCESS_TOKEN_SECS="1") as short:
        profile, _, _ = short.agent(short.kit(["web"]))
        pair = pkce()
        code = code_for(short, documents, profile, pair)
        issued = token(short, grant_type="authorization_code", code=code, client_id=documents + "/client.json",
                       redirect_uri="http://127.0.0.1:45123/callback", code_verifier=pair[0]).json()
        assert issued["expires_in"] == 1
        time.sleep(1.5)
        r = httpx2.post(short.url, headers={"Authorization": "Bearer " + issued["access_token"],
                                            "Accept": "application/json, text/event-stream"},
                        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert r.status_code == 401 and 'error="invalid_token"' in r.headers["WWW-Authenticate"]
        fresh = token(short, grant_type="refresh_token", refresh_token=issued["refresh_token"],
                      client_id=documents + "/client.json")
        assert fresh.status_code == 200, fresh.text
        assert mcp_status(short, fresh.json()["access_token"]) != 401


def form_post(http, path, fields):
    """A console form post as the browser sends it: answered with a redirect back."""
    r = http.post(path, data=fields, headers={"Accept": "text/html", "Referer": http.base_url.join("/users").__str__()})
    assert r.status_code in (302, 303), r.text
    return r


@pytest.mark.anyio
async def test_a_client_that_registers_itself_connects_only_where_the_tenant_accepts_such_clients(gw):
    # Registration checks the metadata as RFC 7591 says.
    bad = httpx2.post(gw.base + "/oauth/register", json={"redirect_uris": ["ftp://x.example/cb"]})
    assert (bad.status_code, bad.json()["error"]) == (400, "invalid_redirect_uri")
    secret = httpx2.post(gw.base + "/oauth/register", json={"redirect_uris": [REDIRECT],
                                                            "token_endpoint_auth_method": "client_secret_basic"})
    assert (secret.status_code, secret.json()["error"]) == (400, "invalid_client_metadata")

    # The SDK without a metadata document registers itself; the tenant refuses it at first.
    profile, _, _ = gw.agent(gw.kit(["web"]))
    admin = admin_browser(gw.base)
    seen = {}

    async def redirect_handler(url):
        seen["authorize"] = url

    async def callback_handler():
        q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(seen["back"]).query))
        return AuthorizationCodeResult(code=q["code"], state=q.get("state"), iss=q.get("iss"))

    async def redirect_and_consent(url):
        await redirect_handler(url)
        page = continued(admin.get(url).text)
        shown = admin.get(page).text
        if "dynamic_clients_off" in shown:
            seen["refused"] = True
            # An admin accepts such clients on the users page, and the person consents.
            form_post(admin, "/api/set_dynamic_clients", {"accept": "on"})
        seen["back"] = consent(admin, url, profile)

    metadata = OAuthClientMetadata(redirect_uris=[REDIRECT], client_name="Test connector",
                                   grant_types=["authorization_code", "refresh_token"],
                                   response_types=["code"], token_endpoint_auth_method="none")
    auth = OAuthClientProvider(server_url=gw.base + "/mcp", client_metadata=metadata, storage=Memory(),
                               redirect_handler=redirect_and_consent, callback_handler=callback_handler)
    async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
        async with Client(streamable_http_client(gw.url, http_client=http), mode="legacy") as c:
            assert "naive_web_read" in {t.name for t in (await c.list_tools()).tools}
    assert seen["refused"] is True
    assert "client_id=nvcl_" in seen["authorize"]
    form_post(admin, "/api/set_dynamic_clients", {})


def test_only_admins_and_the_people_they_allow_may_connect_clients(gw, documents):
    profile, _, _ = gw.agent(gw.kit(["web"]))
    admin = admin_browser(gw.base)
    name = unique("approver")
    form_post(admin, "/api/add_user", {"username": name, "password": "approver-password-1", "approver": "on"})
    person = httpx2.Client(base_url=gw.base, timeout=30, follow_redirects=False,
                           headers={"Sec-Fetch-Site": "same-origin"})
    assert person.post("/login", data={"username": name, "password": "approver-password-1"}).status_code == 303
    _, challenge = pkce()
    url = authorize_url(gw, documents + "/client.json", challenge)
    page = continued(person.get(url).text)
    assert 'data-testid="connect-forbidden"' in person.get(page).text
    fields = dict(urllib.parse.parse_qsl(page.split("?", 1)[1]))
    refused = person.post("/oauth/authorize", data={**fields, "decision": "allow", "act_as": "profile",
                                                    "profile_id": profile})
    assert refused.status_code == 303 and "role_required" in urllib.parse.unquote(refused.headers["Location"])
    # The admin allows them on the users page: now they connect.
    users = admin.get("/users").text
    user_id = re.search(r'<option value="(usr_[a-z0-9]+)">' + re.escape(name) + "<", users).group(1)
    form_post(admin, "/api/set_client_connector", {"user_id": user_id, "allow": "yes"})
    assert f'data-connector="{name}"' in admin.get("/users").text
    back = consent(person, url, profile)
    assert "code=" in back
