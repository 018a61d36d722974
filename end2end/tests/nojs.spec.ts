// With JavaScript disabled every page still renders its data from the server.
import { PAGES, expect, test } from "./fixtures";

const CONTENT: Record<string, string> = {
  inbox: "servo motors",
  proposals: "Prefer acme-supplies for cable ties",
  kits: "Procurement",
  spend: "procurement-bot",
  activity: "chain verified",
  profiles: "receipts-clerk",
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
