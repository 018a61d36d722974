// Signing in through the form in a fresh browser, and a role's 403 page.
import { expect, expectErrorStatus, signInAs, test } from "./fixtures";
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

test.describe("roles", () => {
  test.use({ storageState: { cookies: [], origins: [] } });

  // Each role opens its own views and gets the 403 page, which names the roles needed, elsewhere.
  for (const [role, allowed, forbidden] of [
    ["approver", "/", "/spend"],
    ["reviewer", "/proposals", "/"],
    ["finance", "/spend", "/users"],
  ] as const) {
    test(`${role} gets a 403 page for ${forbidden}`, async ({ page }) => {
      expectErrorStatus(forbidden);
      await signInAs(page, role);
      await expect(page.getByTestId("session")).toContainText(role);
      const ok = await page.goto(allowed);
      expect(ok?.status()).toBe(200);
      await expect(page.getByTestId("forbidden")).toHaveCount(0);
      const res = await page.goto(forbidden);
      expect(res?.status()).toBe(403);
      await expect(page.getByTestId("forbidden")).toContainText("You do not have access to this page");
      await expect(page.getByTestId("forbidden")).toContainText(role);
      await page.screenshot({ path: `end2end/test-results/screenshots/403-${role}.png`, fullPage: true });
    });
  }

  // Signing in without a page to return to lands each role on its own work, and the
  // navigation offers exactly the views the role opens.
  for (const [role, landing, heading, current, views] of [
    ["admin", "/overview", "Overview", "Overview", ["Overview", "Inbox", "Proposals", "Beliefs", "Kits", "Spend", "Activity", "Profiles", "Connectors", "Runtime", "Users"]],
    ["approver", "/", "Approval inbox", "Inbox", ["Inbox", "Beliefs", "Activity"]],
    ["reviewer", "/proposals", "Proposals", "Proposals", ["Proposals", "Beliefs", "Activity"]],
    ["finance", "/spend", "Spend", "Spend", ["Inbox", "Proposals", "Beliefs", "Kits", "Spend", "Activity", "Profiles"]],
  ] as const) {
    test(`${role} lands on ${landing} and is offered only its views`, async ({ page }) => {
      await signInAs(page, role);
      await expect(page).toHaveURL(new RegExp(`${landing.replace("/", "\\/")}$`));
      await expect(page.getByRole("heading", { level: 1, name: heading })).toBeVisible();
      await expect(page.getByTestId("nav").getByRole("link")).toHaveText([...views]);
      await expect(page.getByTestId("nav").getByRole("link", { name: current, exact: true })).toHaveAttribute("aria-current", "page");
    });
  }

  test("a cross-site POST to a server function is refused", async ({ page }) => {
    expectErrorStatus("/api/approve");
    // A page from another origin (here about:blank, origin "null") posting to the console.
    const target = `${process.env.NAIVE_E2E_URL}/api/approve`;
    await page.setContent(`<form method="post" action="${target}"><input name="id" value="apr_x"><button>go</button></form>`);
    const [res] = await Promise.all([
      page.waitForResponse((r) => r.url() === target),
      page.getByRole("button", { name: "go" }).click(),
    ]);
    expect(res.status()).toBe(403);
    expect(await res.json()).toMatchObject({ code: "cross_site_request" });
  });
});
