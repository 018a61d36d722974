// Limits over time in the console (issue #33). The server reads "now" from a file the test
// writes (NAIVE_TEST_CLOCK_FILE), so spend lands in last month and this month without
// waiting; the file is removed afterwards and the clock is the system's again. The moments are
// in the past, so no other test's approval window ends while the clock is moved.
import { rmSync, writeFileSync } from "node:fs";
import { expect, request as api, signInAs, test } from "./fixtures";
import { COMPANY_KEY } from "../global-setup";

const setClock = (at: string) => writeFileSync(process.env.NAIVE_E2E_CLOCK!, at);
const systemClock = () => rmSync(process.env.NAIVE_E2E_CLOCK!, { force: true });

async function monthlyAgent(stamp: number) {
  const name = `E2E-Monthly-${stamp}`;
  const kit = { name, primitives: ["cards"], limits: { budget: { periods: [{ every: "month", hard_cap: "100" }] } } };
  expect((await api("PUT", `/v1/kits/${name}`, COMPANY_KEY, kit)).status).toBe(201);
  const profile = await api("POST", "/v1/agent-profiles", COMPANY_KEY, { name: `e2e-monthly-${stamp}`, kit: name });
  expect(profile.status).toBe(201);
  const key = (await api("POST", `/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {})).json.secret as string;
  const charge = (amount: string) =>
    api("POST", `/v1/users/${profile.json.id}/cards/charge`, key, { amount, merchant: "globex-parts", memo: "e2e period" });
  return { kit: name, profile: profile.json, charge };
}

test.describe("limits over time", () => {
  test.afterEach(systemClock);

  test("finance sees this month against the cap and last month beside it", async ({ browser }) => {
    const agent = await monthlyAgent(Date.now());
    setClock("2025-11-20T12:00:00Z");
    expect((await agent.charge("30.00")).status).toBe(200);
    setClock("2025-12-10T12:00:00Z");
    expect((await agent.charge("45.00")).status).toBe(200);
    expect((await agent.charge("60.00")).status).toBe(403);

    const page = await (await browser.newContext({ storageState: { cookies: [], origins: [] } })).newPage();
    await signInAs(page, "finance");
    await page.goto("/spend");
    const card = page.locator(`[data-testid="period-card"][data-profile="${agent.profile.name}"]`);
    await expect(card).toHaveAttribute("data-every", "month");
    await expect(card).toHaveAttribute("data-used", "45.00");
    await expect(card).toHaveAttribute("data-cap", "100.00");
    await expect(card.getByTestId("period-used")).toContainText("$45.00 of hard cap $100.00 · $55.00 left");
    await expect(card).toContainText("2025-12-01 to 2026-01-01");
    const november = card.locator('[data-testid="period-bar-previous"][data-first-day="2025-11-01"]');
    await expect(november).toHaveAttribute("data-used", "30.00");
    await expect(card.getByTestId("period-bar-current")).toHaveAttribute("data-first-day", "2025-12-01");
    await page.screenshot({ path: "end2end/test-results/screenshots/spend-periods.png", fullPage: true });
  });

  test("the kit editor edits period limits and simulates a charge at 23:50 on the 31st", async ({ page }) => {
    const agent = await monthlyAgent(Date.now());
    setClock("2025-12-15T12:00:00Z");
    expect((await agent.charge("80.00")).status).toBe(200);

    await page.goto(`/kits/${agent.kit}`);
    await expect(page.getByTestId("kit-editor")).toHaveAttribute("data-hydrated", "true");
    await expect(page.getByTestId("period-limits")).toHaveValue("month hard 100.00");
    await page.getByTestId("sim-profile").selectOption({ value: agent.profile.name });
    await page.getByTestId("sim-amount").fill("30");
    // $80 this month: $30 more at 23:50 on the 31st passes the month's cap...
    await page.getByTestId("sim-at").fill("2025-12-31T23:50");
    await expect(page.getByTestId("sim-verdict")).toHaveText("deny");
    await expect(page.getByTestId("sim-verdict")).toContainText("deny");
    await expect(page.getByTestId("sim-envelope")).toContainText("period_hard_cap_exceeded");
    await expect(page.getByTestId("sim-envelope")).toContainText("2026-01-01T00:00:00Z");
    // ...and twenty minutes later it is a new month.
    await page.getByTestId("sim-at").fill("2026-01-01T00:10");
    await expect(page.getByTestId("sim-verdict")).toHaveText("allow");

    // Raising the month's cap widens the kit, as the diff says, and the draft allows.
    await page.getByTestId("sim-at").fill("2025-12-31T23:50");
    await page.getByTestId("period-limits").fill("month hard 150\nday hard 40");
    await expect(page.getByTestId("kit-diff")).toContainText("raises monthly hard cap from $100.00 to $150.00");
    await expect(page.getByTestId("kit-diff")).toContainText("sets a daily hard cap of $40.00");
    await expect(page.getByTestId("sim-verdict")).toHaveText("allow");
    await expect(page.getByTestId("sim-verdict-saved")).toHaveText("deny");
    // A line that does not read names its limit.
    await page.getByTestId("period-limits").fill("fortnight hard 5");
    await expect(page.getByTestId("kit-errors")).toContainText("limits.budget.periods[0]");
  });
});
