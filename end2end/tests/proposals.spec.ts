// The proposal queue as a reviewer: filter it, open a claim, accept it with a reason and see
// the trail grow.
import { expect, test } from "./fixtures";
import { ADMIN_PASSWORD } from "../global-setup";

test.describe("proposal queue", () => {
  test.use({ storageState: { cookies: [], origins: [] } });

  test("a reviewer accepts a proposed fact and the trail records who and why", async ({ page }) => {
    await page.goto("/login?next=/proposals");
    await page.getByLabel("Username").fill("reviewer");
    await page.getByLabel("Password").fill(ADMIN_PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByTestId("proposals-table")).toBeVisible();

    await page.getByLabel("Object type").fill("fact");
    await page.getByRole("button", { name: "Filter" }).click();
    await expect(page).toHaveURL(/object_type=fact/);
    const link = page.getByRole("link", { name: /Globex Parts ships servo motors/ });
    await expect(link).toBeVisible();
    await expect(page.getByText("Prefer acme-supplies")).toHaveCount(0);

    await link.click();
    await expect(page.getByTestId("claim")).toContainText("Globex Parts ships servo motors");
    const trail = page.getByTestId("trail").locator("li");
    const before = await trail.count();
    await page.getByLabel("Because (required)").fill("confirmed on the supplier's site");
    await page.getByTestId("accept").click();
    await expect(trail).toHaveCount(before + 1);
    await expect(page.getByTestId("trail")).toContainText("confirmed on the supplier's site");
    await expect(page.getByTestId("cannot-decide")).toContainText("Already accepted");
    await page.screenshot({ path: "end2end/test-results/screenshots/proposal-accepted.png", fullPage: true });
  });
});
