// Single sign-on as an admin sets it up and a person uses it: the connection saved on the
// users page (its secret never shown again) and tested against the provider, then a person
// signs in with their work email through the provider's own login and consent pages
// (oidc-provider from npm) and lands in the console with the roles their groups map to.
import { expect, test } from "./fixtures";

const IDP = () => process.env.NAIVE_E2E_IDP!;

test.describe("single sign-on", () => {
  test("an admin connects the provider and a person signs in through it", async ({ page, browser }) => {
    await page.goto("/users");
    const form = page.getByTestId("sso-form");
    await form.locator("input[name=issuer]").fill(IDP());
    await form.locator("input[name=client_id]").fill("naive");
    await form.locator("input[name=client_secret]").fill("naive-sso-secret");
    await form.locator("input[name=scopes]").fill("email profile groups");
    await form.locator("textarea[name=mapping]").fill("finance-team -> finance, approver\nreviewers -> reviewer");
    await form.locator("input[name=domains]").fill("example.com");
    await form.locator("input[name=create_users]").check();
    await page.getByTestId("save-sso").click();
    await expect(page.getByTestId("form-done")).toContainText("Saved single sign-on");
    // The secret is stored, never shown: the field is empty and says so.
    await expect(form.locator("input[name=client_secret]")).toHaveValue("");
    await expect(form.locator("input[name=client_secret]")).toHaveAttribute("placeholder", /stored/);
    await expect(page.getByTestId("sso-redirect-uri")).toHaveText(new URL("/login/sso/callback", page.url()).toString());
    await page.getByTestId("test-sso").click();
    await expect(page.getByTestId("form-done")).toContainText("signing key");

    // A person with no session: their work email leads to the provider.
    const context = await browser.newContext({ storageState: { cookies: [], origins: [] } });
    const person = await context.newPage();
    await person.goto("/login");
    await person.getByTestId("sso-login").locator("input[name=email]").fill("alice@example.com");
    await person.getByRole("button", { name: "Continue with single sign-on" }).click();
    await expect(person).toHaveURL(new RegExp(`^${IDP()}/interaction/`));
    await person.locator("input[name=login]").fill("alice");
    await person.locator("input[name=password]").fill("any password");
    await person.locator("button[type=submit]").click();
    // The provider's consent page, then back to the console.
    await person.locator("button[type=submit]").click();
    await expect(person.getByTestId("sign-out")).toBeVisible();
    expect(new URL(person.url()).origin).toBe(new URL(page.url()).origin);
    await person.screenshot({ path: "end2end/test-results/screenshots/sso-signed-in.png", fullPage: true });
    // Her groups gave approver and finance: the spend view opens, the users view does not.
    await person.goto("/spend");
    await expect(person.locator("h1")).toContainText("Spend");
    await context.close();

    // The admin sees who is bound to the provider.
    await page.reload();
    await expect(page.getByTestId("sso-people").locator('[data-sso-user="alice@example.com"]')).toContainText("alice@example.com");

    // A SCIM token for the directory: shown once, then only its prefix.
    await page.getByTestId("create-scim-token").click();
    const secret = page.getByTestId("scim").getByTestId("new-secret");
    await expect(secret).toHaveText(/^nvs_[a-z0-9]+_/);
    const token = (await secret.textContent())!.trim();
    await expect(page.getByTestId("scim-base")).toHaveText(new URL("/scim/v2", page.url()).toString());
    const users = await fetch(new URL("/scim/v2/Users", page.url()), { headers: { Authorization: `Bearer ${token}` } });
    expect(users.status).toBe(200);
    await page.reload();
    await expect(page.getByTestId("scim").getByTestId("new-secret")).toHaveCount(0);
    await expect(page.getByTestId("scim")).toContainText(`nvs_${token.split("_")[1]}_`);
  });
});
