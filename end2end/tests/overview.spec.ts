// The admin's overview: what needs them, each count linking to its view, live as agents act.
import { api, expect, request, test } from "./fixtures";
import { COMPANY_KEY } from "../global-setup";

test("the overview counts what waits, links to it and follows new work live", async ({ page }) => {
  await page.goto("/overview");
  const approvals = page.getByTestId("needs-approvals");
  await expect(approvals).toBeVisible();
  await expect(page.getByTestId("overview-live")).toBeVisible();
  await expect(page.getByTestId("needs-chain")).toContainText("intact");
  await expect(page.getByTestId("needs-proposals")).toContainText("pending");
  const before = Number(await approvals.getAttribute("data-count"));

  // An agent's charge parks after the page loaded: the count rises without a reload.
  const profile = await api("/v1/agent-profiles", COMPANY_KEY, { name: `e2e-overview-${Date.now()}`, kit: "Procurement" });
  const key = (await api(`/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {})).json.secret as string;
  await expect(page.getByTestId("overview-live")).toHaveAttribute("data-live", "true");
  const parked = await api(`/v1/users/${profile.json.id}/cards/charge`, key, { amount: "29.00", merchant: "globex-parts" });
  expect(parked.status).toBe(202);
  await expect(page.getByTestId("needs-approvals")).toHaveAttribute("data-count", String(before + 1));
  // The admin's health figures: something waits, so the oldest approval has an age.
  const health = page.getByTestId("health");
  await expect(health).toBeVisible();
  await expect(health.getByTestId("health-approval")).toContainText(/waiting \d+(s|m|h)/);
  expect(Number(await health.getByTestId("health-approval").getAttribute("data-secs"))).toBeGreaterThanOrEqual(0);
  expect(Number(await health.getByTestId("health-outbox").getAttribute("data-count"))).toBeGreaterThanOrEqual(0);
  await expect(health.getByTestId("health-connector-errors").getByRole("link")).toHaveAttribute("href", "/activity?verdict=unavailable");
  await page.screenshot({ path: "end2end/test-results/screenshots/overview-admin.png", fullPage: true });

  await page.getByTestId("needs-approvals").getByRole("link", { name: String(before + 1) }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Approval inbox" })).toBeVisible();
  await expect(page.locator(`tr[data-approval="${parked.json.recovery[0].approval_id}"]`)).toBeVisible();
});

test("an agent whose runtime stopped on its hard cap is counted, and the count opens the stopped profiles", async ({ page }) => {
  const stamp = Date.now();
  const kit = `E2E-Capped-${stamp}`;
  const saved = await request("PUT", `/v1/kits/${kit}`, COMPANY_KEY, {
    name: kit,
    primitives: ["cards"],
    can: [{ action: "cards.charge", effect: "allow" }],
    limits: { budget: { hard_cap: "5" } },
  });
  expect(saved.status).toBe(201);
  const profile = await api("/v1/agent-profiles", COMPANY_KEY, { name: `e2e-stopped-${stamp}`, kit });
  const key = (await api(`/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {})).json.secret as string;

  await page.goto("/overview");
  const tile = page.getByTestId("needs-runtimes");
  await expect(page.getByTestId("overview-live")).toHaveAttribute("data-live", "true");
  await expect(tile.locator(`li[data-stopped="${profile.json.id}"]`)).toHaveCount(0);
  const before = Number(await tile.getAttribute("data-count"));

  // A charge over the hard cap is refused and stops the agent's hosted runtime.
  const refused = await api(`/v1/users/${profile.json.id}/cards/charge`, key, { amount: "6.00", merchant: "globex-parts" });
  expect(refused.status).toBe(403);
  expect(refused.json.error.details.reason).toBe("hard_cap_exceeded");
  await expect(tile).toHaveAttribute("data-count", String(before + 1));
  await expect(tile.locator(`li[data-stopped="${profile.json.id}"]`)).toContainText(`e2e-stopped-${stamp}: budget_exhausted`);

  await tile.getByRole("link", { name: String(before + 1), exact: true }).click();
  await expect(page).toHaveURL(/\/profiles\?runtime=stopped$/);
  await expect(page.getByTestId("profiles-filter")).toContainText("runtime is stopped");
  const rows = page.getByTestId("profiles-table").locator("tbody tr");
  await expect(rows).toHaveCount(before + 1);
  await expect(rows.filter({ hasText: `e2e-stopped-${stamp}` })).toContainText("budget_exhausted");
});
