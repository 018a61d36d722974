// The approval inbox as its users see it: an agent's card charge over HTTP parks, an approver
// approves it in the browser, and the agent's poll then shows it executed; the profile's owner
// sees the item but is told they cannot decide it.
import { expect, test } from "./fixtures";
import { ADMIN_PASSWORD, COMPANY_KEY } from "../global-setup";

const base = () => process.env.NAIVE_E2E_URL!;

async function api(path: string, key: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${base()}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
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

    test("a parked card charge is approved in the browser and the agent's poll shows it executed", async ({ page }) => {
      const profile = await api("/v1/agent-profiles", COMPANY_KEY, { name: `e2e-buyer-${Date.now()}`, kit: "Procurement" });
      expect(profile.status).toBe(201);
      const key = await api(`/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {});
      expect(key.status).toBe(201);
      const agent = key.json.secret as string;
      const parked = await api(`/v1/users/${profile.json.id}/cards/charge`, agent, { amount: "30.00", merchant: "globex-parts", memo: "e2e" });
      expect(parked.status).toBe(202);
      const approvalId = parked.json.recovery[0].approval_id as string;

      await page.goto("/login");
      await page.getByLabel("Username").fill("approver");
      await page.getByLabel("Password").fill(ADMIN_PASSWORD);
      await page.getByRole("button", { name: "Sign in" }).click();
      await expect(page.getByRole("heading", { level: 1, name: "Approval inbox" })).toBeVisible();
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

      const polled = await api(`/v1/approvals/${approvalId}`, agent);
      expect(polled.status).toBe(200);
      expect(polled.json.status).toBe("approved");
      expect(polled.json.decided_by).toBe("approver");
      expect(polled.json.result.ok).toBe(true);
    });
  });
});
