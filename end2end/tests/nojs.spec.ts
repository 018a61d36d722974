// With JavaScript disabled every page still renders its data from the server.
import { PAGES, expect, request, test } from "./fixtures";
import { COMPANY_KEY } from "../global-setup";

const CONTENT: Record<string, string> = {
  overview: "Approvals waiting for you",
  inbox: "servo motors",
  proposals: "Prefer acme-supplies for cable ties",
  beliefs: "Invoices from acme-supplies are due net 30",
  kits: "Procurement",
  spend: "procurement-bot",
  activity: "chain verified",
  profiles: "receipts-clerk",
  "kit-editor": "Version history",
  connectors: "demo-upstream",
  runtime: "naive-reference-runtime",
  users: "approver",
};

for (const p of PAGES) {
  test(`${p.name} renders without JavaScript`, async ({ page }) => {
    const res = await page.goto(p.path);
    expect(res?.status()).toBe(200);
    await expect(page.getByRole("heading", { level: 1, name: p.heading })).toBeVisible();
    await expect(page.locator("main")).toContainText(CONTENT[p.name]);
    // The island stays in its server-rendered state.
    await expect(page.getByTestId("connection-label")).toHaveText("static page");
    await page.screenshot({ path: `end2end/test-results/screenshots/${p.name}-nojs.png`, fullPage: true });
  });
}

test("a profile's page lists its keys and the revoke cascade without JavaScript", async ({ page }) => {
  await page.goto("/profiles");
  await page.getByRole("link", { name: "procurement-bot" }).click();
  await expect(page.getByTestId("profile-name")).toHaveText("procurement-bot");
  await expect(page.getByTestId("keys-table")).toBeVisible();
  await expect(page.getByTestId("cascade")).toContainText("receipts-clerk");
  await page.screenshot({ path: "end2end/test-results/screenshots/profile-nojs.png", fullPage: true });
});

test("an approval decided without JavaScript says what happened", async ({ page }) => {
  const profile = await request("POST", "/v1/agent-profiles", COMPANY_KEY, { name: `e2e-nojs-buyer-${Date.now()}`, kit: "Procurement" });
  const key = (await request("POST", `/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {})).json.secret as string;
  const parked = await request("POST", `/v1/users/${profile.json.id}/cards/charge`, key, { amount: "27.00", merchant: "globex-parts" });
  expect(parked.status).toBe(202);
  const id = parked.json.recovery[0].approval_id as string;
  await page.goto("/");
  const row = page.locator(`tr[data-approval="${id}"]`);
  await row.getByPlaceholder("reason (required)").fill("over this week's plan");
  await row.getByTestId("deny").click();
  await expect(row).toHaveCount(0);
  await expect(page.getByTestId("form-done")).toContainText(`Denied cards.charge of $27.00 for ${profile.json.name}; its $27.00 hold was voided.`);
});

test("a kit saves from its JSON without JavaScript", async ({ page }) => {
  const name = `E2E-NoJS-${Date.now()}`;
  const created = await request("PUT", `/v1/kits/${name}`, COMPANY_KEY, { name, primitives: ["web"] });
  expect(created.status).toBe(201);
  await page.goto(`/kits/${name}`);
  await expect(page.getByTestId("editor-loading")).toBeVisible();
  await page.getByText("The kit as JSON", { exact: true }).click();
  await page.locator("textarea[name=kit_json]").fill(JSON.stringify({ name, primitives: ["web", "search"] }));
  await page.getByTestId("save-kit").click();
  await expect(page).toHaveURL(new RegExp(`/kits/${name}\\?saved=v2&done=`));
  // What the save did, in words: the version and what it changed.
  const done = page.getByTestId("form-done");
  await expect(done).toContainText(`Saved ${name} as v2: `);
  await expect(done).toContainText("search");
  await expect(done).toContainText("Agents on it get it on their next call.");
  await expect(page.getByTestId("kit-history")).toContainText("v2 by admin");
  await expect(page.getByTestId("kit-history")).toContainText("search");
});
