"""Prints an OAuth access token for /mcp, obtained as a hosted client obtains one: its client
ID metadata document served over https (the test CA, which the server trusts with
--egress-ca), the admin's consent on the console's page, the code exchanged with PKCE.
bench/mcp.sh measures tool calls with it beside the same profile's static key.
    python bench/oauth_token.py BASE ADMIN PASSWORD PROFILE_ID
"""

import base64
import hashlib
import html
import json
import re
import secrets
import ssl
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2

FIXTURES = Path(__file__).resolve().parents[1] / "server/tests/fixtures"
REDIRECT = "http://127.0.0.1/callback"


class Document(BaseHTTPRequestHandler):
    def do_GET(self):
        own = f"https://127.0.0.1:{self.server.server_port}{self.path}"
        body = json.dumps({"client_id": own, "client_name": "bench", "redirect_uris": [REDIRECT]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def continued(page):
    return html.unescape(re.search(r'content="0;url=([^"]+)"', page).group(1))


def main(base, admin, password, profile):
    docs = ThreadingHTTPServer(("127.0.0.1", 0), Document)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(FIXTURES / "localhost-cert.pem", FIXTURES / "localhost-key.pem")
    docs.socket = tls.wrap_socket(docs.socket, server_side=True)
    threading.Thread(target=docs.serve_forever, daemon=True).start()
    client_id = f"https://127.0.0.1:{docs.server_port}/client.json"
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    http = httpx2.Client(base_url=base, timeout=30, headers={"Sec-Fetch-Site": "same-origin"})
    assert http.post("/login", data={"username": admin, "password": password}).status_code == 303
    query = dict(response_type="code", client_id=client_id, redirect_uri=REDIRECT, code_challenge=challenge,
                 code_challenge_method="S256", state="bench", resource=base + "/mcp")
    page = continued(http.get("/oauth/authorize?" + urllib.parse.urlencode(query)).text)
    fields = dict(urllib.parse.parse_qsl(page.split("?", 1)[1]))
    fields.update(decision="allow", act_as="profile", profile_id=profile)
    back = continued(http.post("/oauth/authorize", data=fields).text)
    code = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(back).query))["code"]
    answer = http.post("/oauth/token", data=dict(grant_type="authorization_code", code=code, client_id=client_id,
                                                 redirect_uri=REDIRECT, code_verifier=verifier))
    print(answer.json()["access_token"])
    docs.shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:5])
