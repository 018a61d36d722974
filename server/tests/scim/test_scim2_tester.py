"""The SCIM endpoint checked by scim2-tester (PyPI, an RFC 7643/7644 compliance checker)
against the real server binary on a free port with a fresh SQLite file, with the tenant's
SCIM token issued over /v1. Every check must pass; a skipped one must say why."""

import json
import pathlib
import socket
import subprocess
import tempfile
import time
import urllib.request

import httpx2
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import Status, check_server

ROOT = pathlib.Path(__file__).resolve().parents[3]
COMPANY = "nv_scimtest_abcdefghijklmnopqrstuv"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(tmp):
    port = free_port()
    env = {
        "PATH": "/usr/bin:/bin",
        "NAIVE_ADMIN_PASSWORD": "scim-suite-admin-password",
        "NAIVE_COMPANY_KEY": COMPANY,
        "RUST_LOG": "warn",
    }
    proc = subprocess.Popen(
        [str(ROOT / "target/debug/server"), "--bind", f"127.0.0.1:{port}", "--database-url", f"sqlite://{tmp}/scim.db"],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(base + "/healthz", timeout=1)
            return proc, base
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the server did not answer /healthz")


def scim_token(base):
    req = urllib.request.Request(base + "/v1/scim/token", method="POST", data=b"{}")
    req.add_header("Authorization", "Bearer " + COMPANY)
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())["secret"]


def test_scim2_tester_finds_no_error():
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = start_server(tmp)
        try:
            token = scim_token(base)
            http = httpx2.Client(base_url=base + "/scim/v2", headers={"Authorization": f"Bearer {token}"})
            client = SyncSCIMClient(http)
            client.discover()
            results = check_server(client)
            errors = [r for r in results if r.status == Status.ERROR]
            ran = [r for r in results if r.status == Status.SUCCESS]
            assert ran, "scim2-tester ran no check"
            assert not errors, "\n".join(f"{r.title}: {r.reason}" for r in errors)
        finally:
            proc.kill()
            proc.wait()
