// A page fixture that fails the test on any console error, page error or failed request.
import { test as base, expect, type Page } from "@playwright/test";
import { ADMIN_PASSWORD } from "../global-setup";

export const PAGES = [
  { path: "/overview", name: "overview", heading: "Overview" },
  { path: "/", name: "inbox", heading: "Approval inbox" },
  { path: "/proposals", name: "proposals", heading: "Proposals" },
  { path: "/beliefs", name: "beliefs", heading: "Beliefs" },
  { path: "/kits", name: "kits", heading: "Kits" },
  { path: "/spend", name: "spend", heading: "Spend" },
  { path: "/activity", name: "activity", heading: "Activity" },
  { path: "/profiles", name: "profiles", heading: "Profiles" },
  { path: "/kits/Procurement", name: "kit-editor", heading: "Edit kit" },
  { path: "/connectors", name: "connectors", heading: "Connectors" },
  { path: "/runtime", name: "runtime", heading: "Runtime" },
  { path: "/users", name: "users", heading: "Console users" },
] as const;

/// Paths a test expects an error status from (a 403 page it asked for); reset per test.
const expectedErrors = new Set<string>();
export function expectErrorStatus(path: string) {
  expectedErrors.add(path);
}

export const test = base.extend<{ problems: string[] }>({
  problems: [
    async ({ page }, use, testInfo) => {
      const problems: string[] = [];
      expectedErrors.clear();
      const jsOff = testInfo.project.use.javaScriptEnabled === false;
      const expectedError = (url: string) =>
        url.includes("/no-such-page") || [...expectedErrors].some((p) => new URL(url).pathname === p);
      page.on("console", (m) => {
        if (m.type() === "error" && !expectedError(m.location().url)) problems.push(`console error: ${m.text()}`);
      });
      page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
      page.on("requestfailed", (r) => {
        // With JavaScript off, Chromium refuses to fetch the island script; that is the point.
        if (jsOff && r.resourceType() === "script") return;
        // Navigating away cancels reads still in flight (the health check, an inbox refresh,
        // the favicon) and closes the live event stream; that is the browser tidying up, not a
        // failed request. A cancelled write would still count (the inbox refresh and the kit
        // editor's preview are read server functions, which post).
        const path = new URL(r.url()).pathname;
        const read = r.method() === "GET" || path.startsWith("/api/inbox") || path === "/api/kit_preview";
        if (r.failure()?.errorText === "net::ERR_ABORTED" && read) return;
        problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
      });
      page.on("response", (r) => {
        // A 404 the test asked for is expected; any other 4xx/5xx is a defect.
        if (r.status() >= 400 && !expectedError(r.url())) problems.push(`HTTP ${r.status()}: ${r.url()}`);
      });
      await use(problems);
      expect(problems, "the page produced errors").toEqual([]);
    },
    { auto: true },
  ],
});

export { expect };

/// The gateway's HTTP API as an agent or the company calls it: the method, the path, a bearer
/// key, and a JSON body; answers the status and the parsed JSON.
export async function request(
  method: string,
  path: string,
  key: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: any }> {
  const res = await fetch(`${process.env.NAIVE_E2E_URL}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

/// A GET, or a POST when there is a body.
export const api = (path: string, key: string, body?: unknown) =>
  request(body === undefined ? "GET" : "POST", path, key, body);

/// Signs in through the form as one of the demo's console users (they share the admin's
/// password).
export async function signInAs(page: Page, username: string) {
  await page.goto("/login");
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill(ADMIN_PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
}
