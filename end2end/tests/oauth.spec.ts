// A hosted MCP client connects the way the MCP spec says: the official TypeScript SDK's OAuth
// client finds the authorization server from /mcp's 401, identifies itself with a client ID
// metadata document (served here over https), and sends the person to the console, where the
// signed-in admin picks the agent profile on the consent page in Chromium. Then the SDK lists
// that profile's tools and makes a governed call, which appears in the profile's activity and
// as the connection's last use on its page; revoking the connection there ends its access.
import { readFileSync } from "node:fs";
import { createServer as createHttp } from "node:http";
import { createServer as createHttps } from "node:https";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { COMPANY_KEY } from "../global-setup";
import { expect, test } from "./fixtures";

const FIXTURES = path.resolve(__dirname, "..", "..", "server", "tests", "fixtures");

async function listen(server: ReturnType<typeof createHttp>): Promise<number> {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return (server.address() as AddressInfo).port;
}

async function v1(method: string, route: string, body?: unknown) {
  const res = await fetch(new URL(route, process.env.NAIVE_E2E_URL), {
    method,
    headers: { authorization: `Bearer ${COMPANY_KEY}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

test("a hosted client connects with OAuth, acts as the profile an admin chose, and is revoked on the profile page", async ({ page }) => {
  // The agent profile the client will act as: its kit reads the web and nothing else.
  const kit = `OAuth-${Date.now()}`;
  expect((await v1("PUT", `/v1/kits/${kit}`, { name: kit, primitives: ["web"], limits: {} })).status).toBe(201);
  const profile = await v1("POST", "/v1/agent-profiles", { name: `connector-${Date.now()}`, kit });
  expect(profile.status).toBe(201);

  // Where the browser comes back with the code, and the client's metadata document (https).
  let code: string | undefined;
  const callback = createHttp((req, res) => {
    const url = new URL(req.url!, "http://127.0.0.1");
    if (url.pathname === "/callback") code = url.searchParams.get("code") ?? undefined;
    res.end("Connected. You can close this window.");
  });
  const callbackPort = await listen(callback);
  const redirectUrl = `http://127.0.0.1:${callbackPort}/callback`;
  const documents = createHttps(
    { cert: readFileSync(path.join(FIXTURES, "localhost-cert.pem")), key: readFileSync(path.join(FIXTURES, "localhost-key.pem")) },
    (_req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ client_id: clientId, client_name: "Playwright connector", redirect_uris: [redirectUrl], token_endpoint_auth_method: "none" }));
    },
  );
  const clientId = `https://127.0.0.1:${await listen(documents)}/oauth/client.json`;

  // The SDK's provider: it keeps what it is given, and its authorization URL is opened in
  // the admin's browser.
  let authorizationUrl: URL | undefined;
  let tokens: Awaited<ReturnType<OAuthClientProvider["tokens"]>>;
  let verifier = "";
  let info: Awaited<ReturnType<OAuthClientProvider["clientInformation"]>>;
  const provider: OAuthClientProvider = {
    get redirectUrl() {
      return redirectUrl;
    },
    clientMetadataUrl: clientId,
    get clientMetadata() {
      return { client_name: "Playwright connector", redirect_uris: [redirectUrl], token_endpoint_auth_method: "none" };
    },
    clientInformation: () => info,
    saveClientInformation: (i) => {
      info = i;
    },
    tokens: () => tokens,
    saveTokens: (t) => {
      tokens = t;
    },
    redirectToAuthorization: (url) => {
      authorizationUrl = url;
    },
    saveCodeVerifier: (v) => {
      verifier = v;
    },
    codeVerifier: () => verifier,
  };
  const mcp = new URL("/mcp", process.env.NAIVE_E2E_URL);
  const first = new StreamableHTTPClientTransport(mcp, { authProvider: provider });
  await expect(new Client({ name: "playwright", version: "1" }).connect(first)).rejects.toThrow(/Unauthorized/);
  expect(authorizationUrl).toBeDefined();

  // The consent page: who asks, where the browser returns, and which profile it acts as.
  await page.goto(authorizationUrl!.toString());
  await expect(page).toHaveURL(/\/connect\?/);
  const consent = page.getByTestId("consent");
  await expect(consent.getByTestId("client-name")).toHaveText("Playwright connector");
  await expect(consent.getByTestId("redirect-host")).toHaveText(`127.0.0.1:${callbackPort}`);
  await consent.getByTestId("profile-choice").selectOption(profile.body.id);
  await page.screenshot({ path: "end2end/test-results/screenshots/oauth-consent.png", fullPage: true });
  await consent.getByTestId("connect-allow").click();
  await expect(page).toHaveURL(new RegExp(`^${redirectUrl}\\?code=`));
  expect(code).toBeDefined();
  await first.finishAuth(code!);

  // Now the SDK connects with its access token: the profile's tools, and a governed call.
  const client = new Client({ name: "playwright", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(mcp, { authProvider: provider }));
  const names = (await client.listTools()).tools.map((t) => t.name);
  expect(names).toContain("naive_web_read");
  expect(names).not.toContain("naive_cards_charge");
  const result = await client.callTool({ name: "naive_web_read", arguments: { url: "https://example.test/oauth-e2e" } });
  expect(result.isError).toBe(false);
  const log = await v1("GET", `/v1/users/${profile.body.id}/logs`);
  expect(JSON.stringify(log.body)).toContain("web.read");

  // The profile page lists the connection and revokes it: the next request is refused.
  await page.goto(`/profiles/${profile.body.id}`);
  const row = page.locator('[data-connection="Playwright connector"]');
  await expect(row).toContainText("connected by admin");
  await page.screenshot({ path: "end2end/test-results/screenshots/oauth-connection.png", fullPage: true });
  await row.getByTestId("revoke-connection").click();
  await expect(page.getByTestId("form-done")).toContainText("Revoked Playwright connector");
  await expect(client.listTools()).rejects.toThrow();
  await client.close();
  callback.close();
  documents.close();
});
