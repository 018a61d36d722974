// The admin's overview: what needs them, each count linking to its view, live as agents act.
import { api, expect, test } from "./fixtures";
import { COMPANY_KEY } from "../global-setup";

test("the overview counts what waits, links to it and follows new work live", async ({ page }) => {
  await page.goto("/overview");
  const approvals = page.getByTestId("needs-approvals");
  await expect(approvals).toBeVisible();
  await expect(page.getByTestId("overview-live")).toBeVisible();
  await expect(page.getByTestId("needs-chain")).toContainText("intact");
  await expect(page.getByTestId("needs-proposals")).toContainText("pending");
  const before = Number(await approvals.getAttribute("data-count"));

  // An agent's charge parks after the page loaded: the count rises without a reload.
  const profile = await api("/v1/agent-profiles", COMPANY_KEY, { name: `e2e-overview-${Date.now()}`, kit: "Procurement" });
  const key = (await api(`/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {})).json.secret as string;
  await expect(page.getByTestId("overview-live")).toHaveAttribute("data-live", "true");
  const parked = await api(`/v1/users/${profile.json.id}/cards/charge`, key, { amount: "29.00", merchant: "globex-parts" });
  expect(parked.status).toBe(202);
  await expect(page.getByTestId("needs-approvals")).toHaveAttribute("data-count", String(before + 1));
  await page.screenshot({ path: "end2end/test-results/screenshots/overview-admin.png", fullPage: true });

  await page.getByTestId("needs-approvals").getByRole("link", { name: String(before + 1) }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Approval inbox" })).toBeVisible();
  await expect(page.locator(`tr[data-approval="${parked.json.recovery[0].approval_id}"]`)).toBeVisible();
});
