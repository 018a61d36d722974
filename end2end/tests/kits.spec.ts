// The AccountKit editor as an admin uses it: lowering a hard cap changes the in-browser
// simulator's verdict before anything is saved; after saving, the agent's next call is refused
// with budget_exceeded; a stale save gets the conflict message and keeps the draft.
import { expect, request as api, test } from "./fixtures";
import { COMPANY_KEY } from "../global-setup";

test.describe("kit editor", () => {
  test("lowering a hard cap changes the simulator's verdict, and after saving the agent gets budget_exceeded", async ({ page }) => {
    const stamp = Date.now();
    const name = `E2E-Buyers-${stamp}`;
    const kit = { name, primitives: ["cards", "web"], limits: { budget: { hard_cap: "500.00" }, approve: { above: "100.00" } } };
    expect((await api("PUT", `/v1/kits/${name}`, COMPANY_KEY, kit)).status).toBe(201);
    const profile = await api("POST", "/v1/agent-profiles", COMPANY_KEY, { name: `e2e-kit-buyer-${stamp}`, kit: name });
    expect(profile.status).toBe(201);
    const key = (await api("POST", `/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {})).json.secret as string;
    const charge = (amount: string) =>
      api("POST", `/v1/users/${profile.json.id}/cards/charge`, key, { amount, merchant: "globex-parts", memo: "e2e" });
    expect((await charge("30.00")).status).toBe(200);

    await page.goto(`/kits/${name}`);
    const editor = page.getByTestId("kit-editor");
    // Wait until the editor's island has hydrated.
    await expect(editor).toHaveAttribute("data-hydrated", "true");
    await expect(page.getByTestId("editor-loading")).toHaveCount(0);
    // The simulator runs in the browser: the profile has spent $30, so $48 more is allowed.
    await page.getByTestId("sim-profile").selectOption({ index: 0 });
    await expect(page.getByTestId("sim-profile")).toContainText("$30.00 posted");
    await page.getByTestId("sim-amount").fill("48");
    await expect(page.getByTestId("sim-verdict")).toHaveText("allow");

    // Lower the hard cap to $60: the draft denies, the saved version still allows.
    await page.getByTestId("hard-cap").fill("60");
    await expect(page.getByTestId("sim-verdict")).toHaveText("deny");
    await expect(page.getByTestId("sim-verdict-saved")).toHaveText("allow");
    await expect(page.getByTestId("sim-envelope")).toContainText("budget_exceeded");
    await expect(page.getByTestId("kit-diff")).toContainText("narrows");

    // Invalid input is caught as you type, with the field named.
    await page.getByTestId("soft-cap").fill("70");
    await expect(page.getByTestId("kit-errors")).toContainText("limits.budget.soft_cap");
    await expect(page.getByTestId("save-kit")).toBeDisabled();
    await page.getByTestId("soft-cap").fill("");
    await expect(page.getByTestId("kit-errors")).toBeEmpty();
    await page.screenshot({ path: "end2end/test-results/screenshots/kit-editor.png", fullPage: true });

    await page.getByTestId("save-kit").click();
    await expect(page.getByRole("status").filter({ hasText: "Saved as v2" })).toHaveAttribute("data-testid", "save-state");
    await expect(page.getByTestId("sim-verdict-saved")).toHaveText("deny");

    const refused = await charge("48.00");
    expect(refused.status).toBe(403);
    expect(refused.json.reason).toBe("budget_exceeded");
  });

  test("a save over someone else's newer version is refused with the conflict, keeping the draft", async ({ page }) => {
    const name = `E2E-Conflict-${Date.now()}`;
    expect((await api("PUT", `/v1/kits/${name}`, COMPANY_KEY, { name, primitives: ["web"] })).status).toBe(201);
    await page.goto(`/kits/${name}`);
    await expect(page.getByTestId("kit-editor")).toHaveAttribute("data-hydrated", "true");
    await page.getByTestId("approve-above").fill("25");
    // Someone saves v2 through the API meanwhile.
    const other = { name, primitives: ["web", "search"] };
    expect((await api("PUT", `/v1/kits/${name}`, COMPANY_KEY, other, { "if-match": "1" })).status).toBe(200);
    await page.getByTestId("save-kit").click();
    await expect(page.getByTestId("save-state")).toContainText("kit_version_conflict");
    await expect(page.getByTestId("save-state")).toContainText("is now at v2");
    await expect(page.getByTestId("approve-above")).toHaveValue("25");
  });

  test("can rules are added and removed in the form, and the diff and the JSON follow", async ({ page }) => {
    const name = `E2E-Rules-${Date.now()}`;
    expect((await api("PUT", `/v1/kits/${name}`, COMPANY_KEY, { name, primitives: ["web", "email"] })).status).toBe(201);
    await page.goto(`/kits/${name}`);
    await expect(page.getByTestId("kit-editor")).toHaveAttribute("data-hydrated", "true");
    await expect(page.getByTestId("rule")).toHaveCount(0);
    await expect(page.getByTestId("kit-diff")).toContainText("Nothing yet");
    await expect(page.getByTestId("save-kit")).toBeDisabled();

    await page.getByTestId("add-rule").click();
    const rule = page.getByTestId("rule");
    await expect(rule).toHaveCount(1);
    await rule.locator("input[name=rule_action]").fill("email.send");
    await rule.locator("select[name=rule_effect]").selectOption("deny");
    await expect(page.getByTestId("kit-diff")).toContainText("adds a rule denying `email.send`");
    await expect(page.locator("textarea[name=kit_json]")).toHaveValue(/"effect": "deny"/);
    await expect(page.getByTestId("save-kit")).toBeEnabled();

    await rule.getByRole("button", { name: "Remove" }).click();
    await expect(page.getByTestId("rule")).toHaveCount(0);
    await expect(page.getByTestId("kit-diff")).toContainText("Nothing yet");
    await expect(page.getByTestId("save-kit")).toBeDisabled();
  });
});
