// The Connectors page: the demo tenant's cards and email run on the reference upstream (its
// own process, as in `make run`), a test button shows what the upstream answers, its MCP
// tracker is a connected app whose tools are listed with their effects, a secret's
// value goes in once and is never shown, and a connector set here governs the next call.
import { api, expect, expectErrorStatus, request, signInAs, test } from "./fixtures";
import { COMPANY_KEY } from "../global-setup";

test("cards and email run on the upstream, and a test shows its answer", async ({ page }) => {
  await page.goto("/connectors");
  await expect(page.getByRole("heading", { level: 1, name: "Connectors" })).toBeVisible();
  const table = page.getByTestId("connectors-table");
  await expect(table.locator('tr[data-target="cards"]')).toHaveAttribute("data-kind", "http");
  await expect(table.locator('tr[data-target="email"]')).toHaveAttribute("data-kind", "http");
  await expect(table.locator('tr[data-target="web"]')).toHaveAttribute("data-kind", "sandbox");
  await expect(table.locator('tr[data-target="cards"]')).toContainText("/cards/charge");
  await table.locator('tr[data-target="cards"]').getByTestId("test-connector").click();
  const done = page.getByTestId("form-done");
  await expect(done).toContainText("Test of cards: HTTP 200");
  await expect(done).toContainText("card-processor");
  await expect(done).toHaveAttribute("role", "status");
  await page.screenshot({ path: "end2end/test-results/screenshots/connectors-admin.png", fullPage: true });
});

test("a secret is stored once and never shown; a connector on it governs the next call", async ({ page }) => {
  const value = `e2e-secret-value-${Date.now()}`;
  await page.goto("/connectors");
  const store = page.getByTestId("store-secret");
  await store.getByLabel("Name").fill("e2e-relay");
  await store.getByLabel("Value").fill(value);
  await store.getByRole("button", { name: "Store secret" }).click();
  await expect(page.getByTestId("form-done")).toContainText("Stored secret e2e-relay (fp_");
  await expect(page.getByTestId("secrets-table").locator('tr[data-secret="e2e-relay"]')).toContainText("fp_");
  expect(await page.content()).not.toContain(value);
  const listed = await request("GET", "/v1/vault/secrets", COMPANY_KEY);
  expect(JSON.stringify(listed.json)).not.toContain(value);

  // sms.send on the mail relay with this (wrong) secret: the test shows the relay's refusal.
  const relay = (await request("GET", "/v1/connectors", COMPANY_KEY)).json.items.find((r: { target: string }) => r.target === "email");
  const form = page.getByTestId("set-connector");
  await form.getByLabel("Target").selectOption("sms.send");
  await form.getByLabel("Runs on").selectOption("http");
  await form.getByLabel("Upstream URL").fill(relay.connector.url);
  await form.getByLabel("Credential travels as").selectOption("hmac");
  await form.getByLabel("Secret").selectOption("e2e-relay");
  await form.getByRole("button", { name: "Save connector" }).click();
  await expect(page.getByTestId("form-done")).toContainText(`sms.send now runs on ${relay.connector.url}`);
  const row = page.getByTestId("connectors-table").locator('tr[data-target="sms.send"]');
  await expect(row).toHaveAttribute("data-kind", "http");
  await row.getByTestId("test-connector").click();
  await expect(page.getByTestId("form-error")).toContainText("HTTP 401");

  // The next sms from an agent is governed by it: unavailable, the relay refused the credential.
  const kit = { name: `Sms${Date.now()}`, primitives: ["sms"] };
  expect((await request("PUT", `/v1/kits/${kit.name}`, COMPANY_KEY, kit)).status).toBe(201);
  const profile = await api("/v1/agent-profiles", COMPANY_KEY, { name: `e2e-${kit.name}`, kit: kit.name });
  const key = await api(`/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {});
  const sms = await api(`/v1/users/${profile.json.id}/sms/send`, key.json.secret, { to: "+15550100", body: "hi" });
  expect(sms.status).toBe(503);
  expect(sms.json.error.details.reason).toBe("connector_http_401");

  // Back to the sandbox, which answers and says so; then the secret can go.
  await form.getByLabel("Target").selectOption("sms.send");
  await form.getByLabel("Runs on").selectOption("sandbox");
  await form.getByRole("button", { name: "Save connector" }).click();
  await expect(page.getByTestId("form-done")).toContainText("sms.send now runs on the sandbox");
  const again = await api(`/v1/users/${profile.json.id}/sms/send`, key.json.secret, { to: "+15550100", body: "hi" });
  expect(again.status).toBe(200);
  expect(again.json.connector).toBe("sandbox");
  await page.getByTestId("secrets-table").locator('tr[data-secret="e2e-relay"]').getByRole("button", { name: "Delete" }).click();
  await expect(page.getByTestId("form-done")).toContainText("Deleted secret e2e-relay");
});

test("the demo's tracker app lists its tools with their effects; an app is connected and removed here", async ({ page }) => {
  await page.goto("/connectors");
  const apps = page.getByTestId("apps-table");
  const tracker = apps.locator('tr[data-toolkit="tracker"]');
  await expect(tracker).toContainText("/mcp");
  await tracker.getByTestId("test-app").click();
  const done = page.getByTestId("form-done");
  await expect(done).toContainText("Test of tracker: 4 tools");
  await expect(done).toContainText("issues.list (read)");
  // It declares no effect: destructive, until a kit pins it.
  await expect(done).toContainText("issues.create (destructive)");
  await expect(done).toContainText("issues.delete (destructive)");
  await expect(done).toContainText("issues.export (read)");

  const url = (await request("GET", "/v1/connected-apps", COMPANY_KEY)).json.items[0].app.url;
  const form = page.getByTestId("set-app");
  await form.getByLabel("Toolkit").fill("e2e-notes");
  await form.getByLabel("MCP server URL (streamable HTTP)").fill(url);
  await form.getByLabel("Credential travels as").selectOption("none");
  await form.getByRole("button", { name: "Connect app" }).click();
  await expect(page.getByTestId("form-done")).toContainText(`Connected app e2e-notes now reaches ${url}`);
  const notes = apps.locator('tr[data-toolkit="e2e-notes"]');
  // Without the credential the tracker refuses the gateway's MCP client, and the test says so.
  await notes.getByTestId("test-app").click();
  await expect(page.getByTestId("form-error")).toContainText("e2e-notes did not list its tools");
  await notes.getByRole("button", { name: "Remove" }).click();
  await expect(page.getByTestId("form-done")).toContainText("Removed connected app e2e-notes");
  await expect(apps.locator('tr[data-toolkit="e2e-notes"]')).toHaveCount(0);
});

test.describe("other roles", () => {
  test.use({ storageState: { cookies: [], origins: [] } });
  test("an approver gets the 403 page for connectors", async ({ page }) => {
    expectErrorStatus("/connectors");
    await signInAs(page, "approver");
    const res = await page.goto("/connectors");
    expect(res!.status()).toBe(403);
    await expect(page.getByText("it needs one of these roles: admin")).toBeVisible();
  });
});

test("an app whose secret cannot be used shows why on its row, until the secret is stored again", async ({ page }) => {
  const url = (await request("GET", "/v1/connected-apps", COMPANY_KEY)).json.items[0].app.url;
  expect((await request("PUT", "/v1/vault/secrets/e2e-broken", COMPANY_KEY, { value: "line one\nline two" })).status).toBeLessThan(300);
  const spec = { url, auth: { kind: "bearer", secret: "e2e-broken" } };
  expect((await request("PUT", "/v1/connected-apps/e2e-broken", COMPANY_KEY, spec)).status).toBe(200);
  try {
    await page.goto("/connectors");
    const row = page.getByTestId("apps-table").locator('tr[data-toolkit="e2e-broken"]');
    await expect(row.getByTestId("connector-problem")).toContainText("connected_app_secret_unusable");
    // The demo's own app is untouched.
    await expect(page.getByTestId("apps-table").locator('tr[data-toolkit="tracker"]').getByTestId("connector-problem")).toHaveCount(0);
    expect((await request("PUT", "/v1/vault/secrets/e2e-broken", COMPANY_KEY, { value: "one line" })).status).toBeLessThan(300);
    await page.reload();
    await expect(row).toBeVisible();
    await expect(row.getByTestId("connector-problem")).toHaveCount(0);
  } finally {
    const headers = { authorization: `Bearer ${COMPANY_KEY}` };
    await fetch(`${process.env.NAIVE_E2E_URL}/v1/connected-apps/e2e-broken`, { method: "DELETE", headers });
    await fetch(`${process.env.NAIVE_E2E_URL}/v1/vault/secrets/e2e-broken`, { method: "DELETE", headers });
  }
});
