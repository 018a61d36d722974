// Starts the reference Slack Web API (its URL in NAIVE_E2E_SLACK), then the real server binary
// on port 0 with a fresh SQLite file, waits for the URL it prints, and hands it to the tests
// through NAIVE_E2E_URL; then the OpenID provider, its URL in NAIVE_E2E_IDP. The returned
// function stops all three.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

export const ADMIN_PASSWORD = "e2e-admin-password";
/// The demo tenant's company key, so tests can act as operators and agents over /v1.
export const COMPANY_KEY = "nv_e2ecomp1_abcdefghijklmnopqrstuv";
/// The signed-in admin's browser state, which every test starts from (see playwright.config.ts).
export const STORAGE_STATE = path.resolve(__dirname, "test-results", "admin-state.json");

/// The URL a child prints in its "listening on http://…" line, within `secs`.
function listening(child: ChildProcess, what: string, secs: number): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not print its URL within ${secs} s`)), secs * 1000);
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on("exit", (code) => reject(new Error(`${what} exited with ${code} before listening:\n${out}`)));
  });
}

export default async function globalSetup(): Promise<() => Promise<void>> {
  const root = path.resolve(__dirname, "..");
  const dir = mkdtempSync(path.join(tmpdir(), "naive-e2e-"));
  const bin = process.env.NAIVE_SERVER_BIN ?? path.join(root, "target", "debug", "server");
  // The reference Slack Web API the Slack app posts to, as its own process.
  const slack = spawn(bin, ["slack", "--listen", "127.0.0.1:0"], { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
  const slackUrl = await listening(slack, "the reference Slack", 30);
  process.env.NAIVE_E2E_SLACK = slackUrl;
  const server = spawn(bin, ["--bind", "127.0.0.1:0", "--database-url", `sqlite://${dir}/e2e.db`], {
    cwd: root,
    env: {
      ...process.env,
      LEPTOS_SITE_ROOT: path.join(root, "target", "site"),
      NAIVE_ADMIN_PASSWORD: ADMIN_PASSWORD,
      NAIVE_COMPANY_KEY: COMPANY_KEY,
      // The demo tenant's cards and email run on the reference upstream, as in `make run`.
      NAIVE_DEMO_UPSTREAM: "1",
      // The reference programs listen on loopback, which egress refuses unless allowed.
      NAIVE_EGRESS_ALLOW: "127.0.0.1/32",
      // MCP clients' metadata documents are served over https by the tests, with this CA.
      NAIVE_EGRESS_CA: path.join(root, "server", "tests", "fixtures", "test-ca.pem"),
      NAIVE_SLACK_API_URL: `${slackUrl}/api`,
      // Dead letters within a test's time: two attempts, retried within half a second.
      NAIVE_OUTBOX_MAX_ATTEMPTS: "2",
      NAIVE_OUTBOX_BACKOFF_BASE_MS: "100",
      NAIVE_OUTBOX_BACKOFF_MAX_MS: "500",
      RUST_LOG: process.env.RUST_LOG ?? "warn",
      // Budget periods read "now" from this file while a test has written one (see CLOCK_FILE).
      NAIVE_TEST_CLOCK_FILE: path.join(dir, "clock"),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await listening(server, "the server", 60);
  process.env.NAIVE_E2E_URL = url;
  // The OpenID provider single sign-on signs in through (oidc-provider from npm), its own process.
  const idp = spawn("node", [path.join(root, "scripts", "oidc-provider.mjs"), "--redirect", `${url}/login/sso/callback`], {
    cwd: root,
    stdio: ["ignore", "pipe", "ignore"],
  });
  process.env.NAIVE_E2E_IDP = await listening(idp, "the OpenID provider", 30);
  process.env.NAIVE_E2E_CLOCK = path.join(dir, "clock");
  // Sign in once as the demo admin, through the real form endpoint, and keep the cookie.
  const res = await fetch(`${url}/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" },
    body: new URLSearchParams({ username: "admin", password: ADMIN_PASSWORD, next: "/" }),
  });
  const set = res.headers.get("set-cookie");
  if (res.status !== 303 || !set) throw new Error(`signing in failed: HTTP ${res.status}`);
  const [name, value] = set.split(";")[0].split("=");
  mkdirSync(path.dirname(STORAGE_STATE), { recursive: true });
  writeFileSync(
    STORAGE_STATE,
    JSON.stringify({
      cookies: [{ name, value, domain: new URL(url).hostname, path: "/", expires: -1, httpOnly: true, secure: false, sameSite: "Strict" }],
      origins: [],
    }),
  );
  return async () => {
    idp.kill("SIGTERM");
    slack.kill("SIGTERM");
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
    rmSync(dir, { recursive: true, force: true });
  };
}
