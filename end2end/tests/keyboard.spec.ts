// Keyboard alone: a reviewer decides a proposal and an admin edits and saves a kit without the
// mouse. Focus moves with Tab only, and each control must be reachable and visibly focused.
// (The inbox's keyboard triage, j/k/a/d, is in inbox.spec.ts.)
import type { Locator, Page } from "@playwright/test";
import { api, expect, request, signInAs, test } from "./fixtures";
import { COMPANY_KEY } from "../global-setup";

/// Presses Tab until `target` has the focus; fails if it is not reached within `limit` presses
/// or if the focused control shows no focus indicator.
async function tabTo(page: Page, target: Locator, limit = 80) {
  for (let i = 0; i < limit; i++) {
    await page.keyboard.press("Tab");
    if (await target.evaluate((el) => el === document.activeElement)) {
      const ring = await target.evaluate((el) => {
        const s = getComputedStyle(el);
        return s.outlineStyle !== "none" && s.outlineWidth !== "0px" || s.boxShadow !== "none";
      });
      expect(ring, "the focused control shows where the focus is").toBe(true);
      return;
    }
  }
  throw new Error(`Tab never reached ${target}`);
}

test.describe("keyboard only", () => {
  test.use({ storageState: { cookies: [], origins: [] } });

  test("a reviewer accepts a proposal with the keyboard alone", async ({ page }) => {
    const profile = await api("/v1/agent-profiles", COMPANY_KEY, { name: `e2e-kbd-scribe-${Date.now()}`, kit: "Research" });
    const key = (await api(`/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {})).json.secret as string;
    const claim = `Keyboard claim ${Date.now()}`;
    const wb = await api("/v1/brain/writebacks", key, { run_id: "kbd-run", source: "e2e", claims: [{ object_type: "fact", content: { claim } }] });
    expect(wb.status).toBe(201);
    await signInAs(page, "reviewer");
    await expect(page.getByTestId("proposals-table")).toBeVisible();
    await tabTo(page, page.getByRole("link", { name: claim }));
    await page.keyboard.press("Enter");
    await expect(page.getByTestId("claim")).toContainText(claim);
    await tabTo(page, page.getByLabel("Because (required)"));
    await page.keyboard.type("typed without a mouse");
    await tabTo(page, page.getByTestId("accept"));
    await page.keyboard.press("Enter");
    await expect(page.getByTestId("form-done")).toContainText("Accepted: the claim is now belief");
    await expect(page.getByTestId("trail")).toContainText("typed without a mouse");
  });

  test("an admin edits and saves a kit with the keyboard alone", async ({ page }) => {
    const name = `E2E-Keys-${Date.now()}`;
    expect((await request("PUT", `/v1/kits/${name}`, COMPANY_KEY, { name, primitives: ["web"] })).status).toBe(201);
    await signInAs(page, "admin");
    await page.goto(`/kits/${name}`);
    await expect(page.getByTestId("kit-editor")).toHaveAttribute("data-hydrated", "true");
    await tabTo(page, page.getByTestId("hard-cap"));
    await page.keyboard.type("75");
    await tabTo(page, page.getByTestId("save-kit"));
    await page.keyboard.press("Enter");
    await expect(page.getByTestId("save-state")).toContainText("Saved as v2");
    const saved = await request("GET", `/v1/kits/${name}`, COMPANY_KEY);
    expect(saved.json.kit.limits.budget.hard_cap).toBe("75.00");
  });
});
