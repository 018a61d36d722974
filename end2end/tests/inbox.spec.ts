// The approval inbox as its users see it: an agent's card charge over HTTP parks, an approver
// approves it in the browser, and the agent's poll then shows it executed; the profile's owner
// sees the item but is told they cannot decide it.
import { api, expect, signInAs, test } from "./fixtures";
import { COMPANY_KEY } from "../global-setup";

/// The inbox island has opened its event stream.
async function waitForLive(page: import("@playwright/test").Page) {
  await expect(page.getByTestId("inbox-live")).toHaveAttribute("data-live", "true");
}

async function park(amount: string): Promise<{ agent: string; approvalId: string; profile: string }> {
  const profile = await api("/v1/agent-profiles", COMPANY_KEY, { name: `e2e-triage-${Date.now()}-${amount}`, kit: "Procurement" });
  const key = await api(`/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {});
  const parked = await api(`/v1/users/${profile.json.id}/cards/charge`, key.json.secret, { amount, merchant: "globex-parts", memo: "triage" });
  expect(parked.status).toBe(202);
  return { agent: key.json.secret, approvalId: parked.json.recovery[0].approval_id, profile: profile.json.id };
}

test.describe("approval inbox", () => {
  test("the owner of an agent sees its parked charge but cannot decide it", async ({ page }) => {
    // Signed in as the demo admin, who owns procurement-bot.
    await page.goto("/");
    const row = page.locator("tr", { hasText: "procurement-bot" }).first();
    await expect(row.getByTestId("cannot-decide")).toContainText("You own this agent");
    await expect(row.getByTestId("approve")).toHaveCount(0);
  });

  test.describe("as an approver", () => {
    test.use({ storageState: { cookies: [], origins: [] } });

    test("a parked card charge appears live, is approved in the browser and the agent's poll shows it executed", async ({ page }) => {
      const profile = await api("/v1/agent-profiles", COMPANY_KEY, { name: `e2e-buyer-${Date.now()}`, kit: "Procurement" });
      expect(profile.status).toBe(201);
      const key = await api(`/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {});
      expect(key.status).toBe(201);
      const agent = key.json.secret as string;

      await signInAs(page, "approver");
      await expect(page.getByRole("heading", { level: 1, name: "Approval inbox" })).toBeVisible();
      await waitForLive(page);
      // The charge parks after the page has loaded: it must appear without a reload.
      const parked = await api(`/v1/users/${profile.json.id}/cards/charge`, agent, { amount: "30.00", merchant: "globex-parts", memo: "e2e" });
      expect(parked.status).toBe(202);
      const approvalId = parked.json.recovery[0].approval_id as string;
      const row = page.locator(`tr[data-approval="${approvalId}"]`);
      await expect(row).toContainText("amount: 30.00");
      // The countdown ticks in the browser.
      const countdown = row.getByTestId("countdown");
      const first = Number(await countdown.getAttribute("data-seconds"));
      await expect.poll(async () => Number(await countdown.getAttribute("data-seconds"))).toBeLessThan(first);
      await page.screenshot({ path: "end2end/test-results/screenshots/inbox-approver.png", fullPage: true });

      await row.getByPlaceholder("note (optional)").fill("servos are fine");
      await row.getByTestId("approve").click();
      await expect(page.locator(`tr[data-approval="${approvalId}"]`)).toHaveCount(0);
      // The page says what happened, in words, as a status message.
      const done = page.getByRole("status").filter({ hasText: "Approved" });
      await expect(done).toContainText(`Approved cards.charge of $30.00 for ${profile.json.name}: it ran (charge_id ch_`);
      await expect(done).toContainText("its hold settled");

      const polled = await api(`/v1/approvals/${approvalId}`, agent);
      expect(polled.status).toBe(200);
      expect(polled.json.status).toBe("approved");
      expect(polled.json.decided_by).toBe("approver");
      expect(polled.json.result.ok).toBe(true);
    });
  });
});

test.describe("inbox triage", () => {
  test.use({ storageState: { cookies: [], origins: [] } });

  test("j/k move the selection, a approves the selected item and d denies it with a reason", async ({ page }) => {
    const first = await park("31.00");
    const second = await park("32.00");
    await signInAs(page, "approver");
    const rowOf = (id: string) => page.locator(`tr[data-approval="${id}"]`);
    await expect(rowOf(second.approvalId)).toBeVisible();
    // Wait for the island: it is live once hydrated.
    await waitForLive(page);
    const order = await page.locator("tr[data-approval]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-approval")));
    const selected = page.locator('tr[aria-selected="true"]');
    await expect(selected).toHaveAttribute("data-approval", order[0]!);
    await page.keyboard.press("j");
    await expect(selected).toHaveAttribute("data-approval", order[1]!);
    await page.keyboard.press("k");
    await expect(selected).toHaveAttribute("data-approval", order[0]!);
    // Move to the first charge and approve it with `a`.
    for (let i = 0; i < order.indexOf(first.approvalId); i++) await page.keyboard.press("j");
    await expect(selected).toHaveAttribute("data-approval", first.approvalId);
    await page.keyboard.press("a");
    await expect(rowOf(first.approvalId)).toHaveCount(0);
    expect((await api(`/v1/approvals/${first.approvalId}`, first.agent)).json.status).toBe("approved");
    // Approved: the hold posted.
    const spent = await api(`/v1/users/${first.profile}/budget`, first.agent);
    expect([spent.json.totals.posted, spent.json.totals.pending]).toEqual(["31.00", "0.00"]);

    // Select the second and deny it: `d` puts the cursor in its reason field.
    await waitForLive(page);
    const now = await page.locator("tr[data-approval]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-approval")));
    for (let i = 0; i < now.indexOf(second.approvalId); i++) await page.keyboard.press("j");
    await expect(rowOf(second.approvalId)).toHaveAttribute("aria-selected", "true");
    await page.keyboard.press("d");
    const reason = rowOf(second.approvalId).locator("input[name=reason]");
    await expect(reason).toBeFocused();
    await page.keyboard.type("not from this supplier");
    await page.keyboard.press("Enter");
    await expect(rowOf(second.approvalId)).toHaveCount(0);
    await expect(page.getByTestId("form-done")).toContainText("Denied cards.charge of $32.00");
    await expect(page.getByTestId("form-done")).toContainText("its $32.00 hold was voided. The agent is told: not from this supplier.");
    const denied = await api(`/v1/approvals/${second.approvalId}`, second.agent);
    expect(denied.json.status).toBe("denied");
    expect(denied.json.decision_reason).toBe("not from this supplier");
    // Denied: the hold is voided, nothing posted.
    const after = await api(`/v1/users/${second.profile}/budget`, second.agent);
    expect([after.json.totals.posted, after.json.totals.pending]).toEqual(["0.00", "0.00"]);
  });

  test("what an approver is typing survives a live update of the inbox", async ({ page }) => {
    const first = await park("33.00");
    await signInAs(page, "approver");
    await waitForLive(page);
    const reason = page.locator(`tr[data-approval="${first.approvalId}"] input[name=reason]`);
    await reason.click();
    await page.keyboard.type("checking with finance");
    // Another charge parks: the rows are swapped for the server's fresh ones.
    const second = await park("34.00");
    await expect(page.locator(`tr[data-approval="${second.approvalId}"]`)).toBeVisible();
    await expect(reason).toHaveValue("checking with finance");
    await expect(reason).toBeFocused();
  });

  test("the selection stays on its approval when a live update adds rows above it", async ({ page }) => {
    await park("35.00");
    await park("36.00");
    await signInAs(page, "approver");
    await waitForLive(page);
    const order = await page.locator("tr[data-approval]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-approval")));
    const selected = page.locator('tr[aria-selected="true"]');
    await page.keyboard.press("j");
    const chosen = order[1]!;
    await expect(selected).toHaveAttribute("data-approval", chosen);
    const newer = await park("37.00");
    await expect(page.locator(`tr[data-approval="${newer.approvalId}"]`)).toBeVisible();
    await expect(selected).toHaveAttribute("data-approval", chosen);
    await expect(selected).toHaveCount(1);
  });
});
