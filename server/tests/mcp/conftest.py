"""The MCP suite's fixtures: the real server binary on a free port with a fresh SQLite file,
set up over /v1 with the company key, and MCP clients from the official Python SDK.

Every test runs in both protocol generations: `legacy` opens a session (2025-11-25), `auto`
negotiates 2026-07-28, which is stateless.
"""

import contextlib
import itertools
import json
import os
import pathlib
import re
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = pathlib.Path(__file__).resolve().parents[3]
COMPANY = "nv_mcpsuite_abcdefghijklmnopqrstuv"
ADMIN_PASSWORD = "mcp-suite-admin-password"
_names = itertools.count(1)


def unique(prefix):
    return f"{prefix}-{os.getpid()}-{next(_names)}"


class Server:
    def __init__(self, base, database_url):
        self.base = base
        self.database_url = database_url
        self.url = base + "/mcp"
        self._human = None

    def api(self, method, path, body=None, key=COMPANY):
        """A /v1 call: (status, JSON body)."""
        data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
        req = urllib.request.Request(self.base + path, method=method, data=data)
        req.add_header("Authorization", "Bearer " + key)
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def kit(self, primitives, limits=None, name=None):
        """Saves a kit (a new one, or a new version of `name`) and returns its name."""
        name = name or unique("Kit")
        body = {"name": name, "primitives": primitives, "limits": limits or {}}
        status, kit = self.api("GET", f"/v1/kits/{name}")
        version = kit["kit"]["version"] if status == 200 else None
        status, saved = self.put_kit(name, body, version)
        assert status in (200, 201), saved
        return name

    def put_kit(self, name, body, version):
        req = urllib.request.Request(
            f"{self.base}/v1/kits/{name}", method="PUT", data=json.dumps(body).encode()
        )
        req.add_header("Authorization", "Bearer " + COMPANY)
        req.add_header("Content-Type", "application/json")
        if version is not None:
            req.add_header("If-Match", f'"{version}"')
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def agent(self, kit):
        """A new profile on `kit` with a key: (profile id, key secret, key id)."""
        status, profile = self.api("POST", "/v1/agent-profiles", {"name": unique("mcp-agent"), "kit": kit})
        assert status == 201, profile
        status, key = self.api("POST", f"/v1/agent-profiles/{profile['id']}/keys")
        assert status == 201, key
        return profile["id"], key["secret"], key["key"]["id"]

    def human(self):
        """The demo admin's personal API token, made on the account page as the admin would."""
        if self._human is None:
            self._human = personal_token(self.base, "admin", ADMIN_PASSWORD)
        return self._human

    @contextlib.asynccontextmanager
    async def mcp(self, key, mode, messages=None):
        async def on_message(message):
            if messages is not None:
                messages.append(message)

        headers = {"Authorization": "Bearer " + key}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            transport = streamable_http_client(self.url, http_client=http)
            async with Client(transport, mode=mode, message_handler=on_message) as client:
                yield client


def personal_token(base, user, password, roles=("admin", "approver", "reviewer")):
    class Stay(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None

    opener = urllib.request.build_opener(Stay)

    def post(path, fields, cookie=None):
        req = urllib.request.Request(base + path, data=urllib.parse.urlencode(fields).encode(), method="POST")
        req.add_header("Accept", "text/html")
        req.add_header("Referer", base + "/account")
        if cookie:
            req.add_header("Cookie", cookie)
        try:
            opener.open(req, timeout=10)
        except urllib.error.HTTPError as e:
            return e.headers
        raise AssertionError(path + " did not redirect")

    cookie = post("/login", {"username": user, "password": password, "next": "/"})["Set-Cookie"].split(";")[0]
    fields = {"label": unique("mcp-suite"), **{r: "on" for r in roles}}
    to = post("/api/create_token", fields, cookie)["Location"]
    req = urllib.request.Request(base + to)
    req.add_header("Cookie", cookie)
    page = urllib.request.urlopen(req, timeout=10).read().decode()
    return re.search(r'data-testid="new-secret"[^>]*>([^<]+)(?:<!>)?</code>', page).group(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_server(**extra_env):
    """The server binary on a free port with a fresh SQLite file, until the block ends."""
    binary = os.environ.get("NAIVE_SERVER_BIN", str(ROOT / "target/debug/server"))
    with tempfile.TemporaryDirectory() as dir:
        port = free_port()
        database_url = f"sqlite://{dir}/mcp.db"
        env = dict(
            os.environ,
            DATABASE_URL=database_url,
            NAIVE_ADMIN_PASSWORD=ADMIN_PASSWORD,
            NAIVE_COMPANY_KEY=COMPANY,
            # The reference programs the suite starts listen on loopback.
            NAIVE_EGRESS_ALLOW="127.0.0.1/32",
            RUST_LOG="warn",
            **{k: v.format(dir=dir) for k, v in extra_env.items()},
        )
        log = open(os.path.join(dir, "server.log"), "w")
        proc = subprocess.Popen([binary, "--bind", f"127.0.0.1:{port}"], env=env, stdout=log, stderr=log)
        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        else:
            proc.kill()
            raise RuntimeError("the server did not start: " + open(os.path.join(dir, "server.log")).read())
        server = Server(base, database_url)
        server.dir = dir
        yield server
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        text = open(os.path.join(dir, "server.log")).read()
        assert "panicked" not in text, text


@contextlib.contextmanager
def reference_program(*args):
    """A reference program of the server binary (`slack`, `hec-receiver`, …) as its own
    process on a free port, until the block ends: the URL it printed."""
    binary = os.environ.get("NAIVE_SERVER_BIN", str(ROOT / "target/debug/server"))
    proc = subprocess.Popen([binary, *args, "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        yield line[line.index("http://"):].strip()
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def server():
    with running_server() as s:
        yield s


class Clock:
    """The moment a clocked server reads as now (NAIVE_TEST_CLOCK_FILE): set, never slept on."""

    def __init__(self, path):
        self.path = path

    def set(self, rfc3339):
        tmp = self.path + ".new"
        with open(tmp, "w") as f:
            f.write(rfc3339)
        os.replace(tmp, self.path)


@pytest.fixture(scope="module")
def clocked():
    """A server of its own whose clock the test drives: (server, clock)."""
    with running_server(NAIVE_TEST_CLOCK_FILE="{dir}/clock") as s:
        yield s, Clock(os.path.join(s.dir, "clock"))


@pytest.fixture(params=["legacy", "auto"])
def mode(request):
    return request.param


@pytest.fixture
def anyio_backend():
    return "asyncio"
