import { PAGES, expect, test } from "./fixtures";

test.describe("console shell", () => {
  for (const p of PAGES) {
    test(`${p.name} renders from the database`, async ({ page }) => {
      const res = await page.goto(p.path);
      expect(res?.status()).toBe(200);
      await expect(page.getByRole("heading", { level: 1, name: p.heading })).toBeVisible();
      await expect(page.getByTestId("session")).toContainText("Acme Robotics");
      await expect(page.getByRole("link", { name: "Profiles" })).toBeVisible();
      for (const [width, height, form] of [[1280, 800, "desktop"], [390, 844, "phone"]] as const) {
        await page.setViewportSize({ width, height });
        // Wide tables scroll inside their cards; the page itself never scrolls sideways.
        const sideways = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        expect(sideways, `${p.name} at ${form} width is wider than the screen`).toBeLessThanOrEqual(0);
        for (const scheme of ["light", "dark"] as const) {
          await page.emulateMedia({ colorScheme: scheme });
          await page.screenshot({ path: `end2end/test-results/screenshots/${p.name}-${form}-${scheme}.png`, fullPage: true });
        }
      }
    });
  }

  test("profiles show the demo sub-agent tree", async ({ page }) => {
    await page.goto("/profiles");
    const table = page.getByTestId("profiles-table");
    await expect(table).toContainText("procurement-bot");
    await expect(table).toContainText("↳ receipts-clerk");
    await expect(table).toContainText("research-crawler");
  });

  test("kits show the demo history with its diff", async ({ page }) => {
    await page.goto("/kits");
    const procurement = page.getByTestId("kit-card").filter({ hasText: "Procurement" });
    await procurement.getByText("History (2 versions)").click();
    await expect(procurement).toContainText("raises hard cap from $40.00 to $50.00");
  });

  test("the inbox lists the demo's parked card charge and the feed its activity", async ({ page }) => {
    await page.goto("/");
    const row = page.getByTestId("inbox-table").locator("tr", { hasText: "procurement-bot" });
    await expect(row).toContainText("cards.charge");
    await expect(row).toContainText("$30.00");
    await expect(row).toContainText("soft_cap_crossed");
    await page.goto("/activity");
    await expect(page.getByTestId("chain-status")).toContainText("chain verified");
    const feed = page.getByTestId("activity-table");
    await expect(feed).toContainText("park");
    await expect(feed).toContainText("deny");
    await expect(feed).toContainText("research-crawler");
  });

  test("the connection island hydrates and reacts to a click", async ({ page }) => {
    await page.goto("/");
    const indicator = page.getByTestId("connection");
    // Hydration runs the first check on its own.
    await expect(page.getByTestId("connection-label")).toHaveText(/^live · \d+ ms$/);
    const before = Number(await indicator.getAttribute("data-checks"));
    expect(before).toBeGreaterThanOrEqual(1);
    await indicator.click();
    await expect(indicator).toHaveAttribute("data-checks", String(before + 1));
    await expect(page.getByTestId("connection-count")).toHaveText(`checked ${before + 1}×`);
  });

  test("an unknown route gets the styled 404 page", async ({ page }) => {
    const res = await page.goto("/no-such-page");
    expect(res?.status()).toBe(404);
    await expect(page.getByTestId("not-found")).toContainText("There is no page here");
    await expect(page.getByRole("link", { name: "Inbox", exact: true })).toBeVisible();
    await page.screenshot({ path: "end2end/test-results/screenshots/not-found-desktop-light.png" });
  });
});

test.describe("time zones", () => {
  test.use({ timezoneId: "Asia/Tokyo", locale: "en-US" });

  test("timestamps appear in the viewer's time zone, server-rendered ones and live ones alike", async ({ page }) => {
    await page.goto("/activity");
    const first = page.locator("time[datetime]").first();
    // Rendered in UTC by the server, rewritten in the browser; the UTC text stays as a tooltip.
    await expect(first).toHaveAttribute("title", /UTC$/);
    await expect(first).toContainText("GMT+9");
    const utc = new Date((await first.getAttribute("datetime"))!);
    const tokyoHour = (utc.getUTCHours() + 9) % 24;
    const hour12 = tokyoHour % 12 === 0 ? 12 : tokyoHour % 12;
    await expect(first).toContainText(`${hour12}:`);
    // Outside any island too (the profiles table is plain server-rendered HTML).
    await page.goto("/profiles");
    await expect(page.getByTestId("profiles-table").locator("time[datetime]").first()).toContainText("GMT+9");
  });
});
