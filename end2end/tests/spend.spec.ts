// Spend as finance sees it: the bar moves after an agent acts, the chart and burn rate show
// the day's spend, and the CSV export holds exactly the rows of the ledger table.
import { api, expect, request, signInAs, test } from "./fixtures";
import { COMPANY_KEY } from "../global-setup";

test.describe("spend as finance", () => {
  test.use({ storageState: { cookies: [], origins: [] } });

  test("the bar moves after an action and the CSV matches the ledger table", async ({ page }) => {
    const profile = await api("/v1/agent-profiles", COMPANY_KEY, { name: `e2e-spender-${Date.now()}`, kit: "Procurement" });
    expect(profile.status).toBe(201);
    const key = (await api(`/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {})).json.secret as string;

    await signInAs(page, "finance");
    await page.goto("/spend");
    const row = page.locator(`tr[data-profile="${profile.json.name}"]`);
    const bar = row.getByTestId("spend-bar");
    await expect(bar).toHaveAttribute("data-posted", "0.00");
    const widthBefore = await bar.locator("div").first().evaluate((el) => (el as HTMLElement).style.width);

    for (const amount of ["12.00", "7.50"]) {
      const charged = await api(`/v1/users/${profile.json.id}/cards/charge`, key, { amount, merchant: "globex-parts", memo: "e2e spend" });
      expect(charged.status).toBe(200);
    }
    await page.reload();
    await expect(bar).toHaveAttribute("data-posted", "19.50");
    const widthAfter = await bar.locator("div").first().evaluate((el) => (el as HTMLElement).style.width);
    expect(parseFloat(widthAfter)).toBeGreaterThan(parseFloat(widthBefore));
    await expect(row.getByTestId("burn")).not.toHaveText("$0.00");

    // A profile with no hard cap has nothing to fill: words, not an almost full bar.
    const kit = `e2e-uncapped-${Date.now()}`;
    expect((await request("PUT", `/v1/kits/${kit}`, COMPANY_KEY, { name: kit, primitives: ["web"] })).status).toBeLessThan(300);
    const free = await api("/v1/agent-profiles", COMPANY_KEY, { name: `e2e-uncapped-${Date.now()}`, kit });
    expect(free.status).toBe(201);
    await page.reload();
    const freeRow = page.locator(`tr[data-profile="${free.json.name}"]`);
    await expect(freeRow.getByTestId("no-cap")).toHaveText("no cap of its own");
    await expect(freeRow.getByTestId("spend-bar")).toHaveCount(0);
    await page.screenshot({ path: "end2end/test-results/screenshots/spend-finance.png", fullPage: true });

    await row.getByRole("link", { name: "Ledger" }).click();
    const chart = page.getByTestId("spend-chart");
    await expect(chart).toContainText("$19.50 in all");
    const table = page.getByTestId("ledger-table");
    await expect(table).toBeVisible();
    const shown = await table.locator("tbody tr").evaluateAll((rows) =>
      rows.map((r) => Array.from(r.querySelectorAll("td")).map((td) => td.textContent!.trim())),
    );
    expect(shown.length).toBeGreaterThan(0);

    const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("export-csv").click()]);
    const csv = (await (await import("node:fs/promises")).readFile((await download.path())!, "utf8")).trim().split("\n");
    expect(csv[0]).toBe("seq,created_at,action,kind,pending_delta,posted_delta,hold_id,kit_version,period_day");
    const exported = csv.slice(1).map((line) => line.split(","));
    // Same rows, same order: seq, action, kind and both deltas agree cell for cell.
    expect(exported.map((c) => [c[0], c[2], c[3], c[4], c[5]])).toEqual(shown.map((c) => [c[0], c[2], c[3], c[4], c[5]]));
    const posted = exported.reduce((sum, c) => sum + parseFloat(c[5]!), 0);
    expect(posted).toBeCloseTo(19.5, 4);
  });
});
