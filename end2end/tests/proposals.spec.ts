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
    // The proposing agent is named, its id only on hover.
    await expect(page.getByTestId("trail")).not.toContainText("prf_");
    await expect(page.getByTestId("trail").locator("span[title^='prf_']").first()).toBeVisible();
    const trail = page.getByTestId("trail").locator("li");
    const before = await trail.count();
    await page.getByLabel("Because (required)").fill("confirmed on the supplier's site");
    await page.getByTestId("accept").click();
    await expect(trail).toHaveCount(before + 1);
    await expect(page.getByRole("status").filter({ hasText: "Accepted" })).toContainText("the claim is now belief blf_");
    await expect(page.getByTestId("trail")).toContainText("confirmed on the supplier's site");
    await expect(page.getByTestId("cannot-decide")).toContainText("Already accepted");
    await page.screenshot({ path: "end2end/test-results/screenshots/proposal-accepted.png", fullPage: true });

    // The accepted claim is now one of the company's beliefs, with who accepted it and why,
    // and it links back to its proposal.
    await page.getByTestId("nav").getByRole("link", { name: "Beliefs" }).click();
    await page.getByLabel("Search").fill("servo motors");
    await page.getByRole("button", { name: "Filter" }).click();
    await expect(page).toHaveURL(/q=servo\+motors/);
    const row = page.getByTestId("beliefs-table").locator("tbody tr");
    await expect(row).toHaveCount(1);
    await expect(row).toContainText("reviewer");
    await expect(row).toContainText("confirmed on the supplier's site");
    await page.screenshot({ path: "end2end/test-results/screenshots/beliefs.png", fullPage: true });
    await row.getByRole("link", { name: /Globex Parts ships servo motors/ }).click();
    await expect(page.getByTestId("claim")).toContainText("Globex Parts ships servo motors");
  });
});
