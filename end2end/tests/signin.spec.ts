// Signing in through the form in a fresh browser, and a role's 403 page.
import { expect, test } from "./fixtures";
import { ADMIN_PASSWORD } from "../global-setup";

test.describe("sign-in", () => {
  // A browser with no session.
  test.use({ storageState: { cookies: [], origins: [] } });

  test("a signed-out visit goes through the sign-in form and back to the page", async ({ page }) => {
    await page.goto("/kits");
    await expect(page).toHaveURL(/\/login\?next=\/kits$/);
    await expect(page.getByRole("heading", { level: 1, name: "Sign in" })).toBeVisible();
    await page.getByLabel("Username").fill("admin");
    await page.getByLabel("Password").fill(ADMIN_PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page).toHaveURL(/\/kits$/);
    await expect(page.getByRole("heading", { level: 1, name: "Kits" })).toBeVisible();
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === "naive_session");
    expect(session?.httpOnly).toBe(true);
    expect(session?.sameSite).toBe("Strict");
    await page.screenshot({ path: "end2end/test-results/screenshots/kits-after-sign-in.png" });

    await page.getByTestId("sign-out").click();
    await expect(page).toHaveURL(/\/login\?error=signed_out$/);
    await expect(page.getByTestId("login-error")).toContainText("signed out");
  });

  test("a wrong password says so and sets no session", async ({ page }) => {
    await page.goto("/login");
    await page.getByLabel("Username").fill("admin");
    await page.getByLabel("Password").fill("not-the-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByTestId("login-error")).toContainText("do not match");
    expect((await page.context().cookies()).some((c) => c.name === "naive_session")).toBe(false);
    await page.screenshot({ path: "end2end/test-results/screenshots/login-error.png" });
  });
});
