// Replay and shadow in the kit editor (issue #35): an admin lowers a cap and sees what it would
// have done to last week's calls; the save is held until they confirm; they start the draft
// in shadow instead, watch a difference appear as a live call is decided, and promote it.
import { expect, request as api, test } from "./fixtures";
import { COMPANY_KEY } from "../global-setup";

test.describe("replay and shadow", () => {
  test("last week's effect, a held save, a shadow's live difference, and promotion", async ({ page }) => {
    const stamp = Date.now();
    const name = `E2E-Shadow-${stamp}`;
    const kit = { name, primitives: ["cards"], limits: { budget: { hard_cap: "500.00" } } };
    expect((await api("PUT", `/v1/kits/${name}`, COMPANY_KEY, kit)).status).toBe(201);
    const profile = await api("POST", "/v1/agent-profiles", COMPANY_KEY, { name: `e2e-shadow-${stamp}`, kit: name });
    expect(profile.status).toBe(201);
    const key = (await api("POST", `/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {})).json.secret as string;
    const charge = (amount: string) =>
      api("POST", `/v1/users/${profile.json.id}/cards/charge`, key, { amount, merchant: "globex-parts" });
    for (let i = 0; i < 3; i++) expect((await charge("40.00")).status).toBe(200);

    await page.goto(`/kits/${name}`);
    await expect(page.getByTestId("kit-editor")).toHaveAttribute("data-hydrated", "true");
    await expect(page.getByTestId("shadow-none")).toBeVisible();
    // $40 three times ran; under a $100 cap the third would have been refused.
    await page.getByTestId("hard-cap").fill("100");
    await page.getByTestId("replay-run").click();
    const summary = page.getByTestId("replay-summary");
    await expect(summary.getByTestId("effect-headline")).toHaveText("Against the last 7 days: 1 of 3 calls would be decided otherwise.");
    await expect(summary.getByTestId("money-refused")).toContainText("40.00");
    await expect(summary.getByTestId("change")).toHaveCount(1);
    await expect(summary.getByTestId("would-be")).toContainText("hard_cap_exceeded");
    await expect(summary.getByTestId("replay-all")).toHaveText("All 1 changed calls →");

    // Saving is held until the admin confirms what it would refuse.
    await page.getByTestId("save-kit").click();
    await expect(page.getByTestId("save-state")).toContainText("would have refused 1 call that ran");

    // Run it in shadow instead: the live kit keeps governing.
    await page.getByTestId("start-shadow").click();
    await expect(page.getByTestId("form-done")).toContainText("runs in shadow");
    const shadow = page.getByTestId("shadow");
    await expect(shadow.getByTestId("shadow-quiet")).toBeVisible();
    await expect(shadow.getByTestId("live-state")).toHaveText("live");
    expect((await charge("40.00")).status).toBe(200);
    // The difference appears as it happens, without a reload.
    await expect(shadow.getByTestId("change")).toHaveCount(1);
    await expect(shadow.getByTestId("was")).toContainText("allow");
    await expect(shadow.getByTestId("would-be")).toContainText("hard_cap_exceeded");
    await expect(shadow.getByTestId("effect-headline")).toHaveText(/1 of 1 calls would be decided otherwise/);
    await expect(shadow).toContainText("narrows");

    await shadow.getByTestId("promote-shadow").click();
    await expect(page.getByTestId("form-done")).toContainText("The shadow is now the live kit, as v2");
    await expect(page.getByTestId("shadow-none")).toBeVisible();
    const refused = await charge("40.00");
    expect(refused.status).toBe(403);
    expect(refused.json.reason).toBe("budget_exceeded");
  });
});
