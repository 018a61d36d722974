// Approvals for teams in the browser (issue #34): a large charge needs two people, one of them
// from finance; the approver sees the agent's words as plain text and the quorum's progress,
// approves, and finance releases it. Several items are ticked with the keyboard and a
// shift-click and approved in one go; on a phone each item is a card with both decisions in
// view; groups are managed on the users page; the kit editor shows who would have to approve.
import { api, expect, request, signInAs, test } from "./fixtures";
import { COMPANY_KEY } from "../global-setup";

const stamp = Date.now();
const KIT = `Team-${stamp}`;

async function teamAgent(): Promise<{ profile: string; key: string }> {
  const kit = {
    name: KIT,
    primitives: ["cards"],
    limits: {
      budget: { hard_cap: "100000" },
      approve: { rules: [{ above: "30", window: "30m" }, { above: "500", approvers: 2, role: "finance", window: "4h" }] },
    },
  };
  if ((await request("GET", `/v1/kits/${KIT}`, COMPANY_KEY)).status === 404) {
    const saved = await request("PUT", `/v1/kits/${KIT}`, COMPANY_KEY, kit);
    expect(saved.status).toBe(201);
  }
  const profile = await api("/v1/agent-profiles", COMPANY_KEY, { name: `e2e-team-${Date.now()}`, kit: KIT });
  expect(profile.status).toBe(201);
  const key = await api(`/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {});
  return { profile: profile.json.id, key: key.json.secret };
}

async function charge(a: { profile: string; key: string }, amount: string, why?: string): Promise<string> {
  const headers: Record<string, string> = why ? { "naive-justification": encodeURIComponent(why) } : {};
  const r = await request("POST", `/v1/users/${a.profile}/cards/charge`, a.key, { amount, merchant: "globex-parts" }, headers);
  expect(r.status).toBe(202);
  return r.json.recovery[0].approval_id;
}

test.describe("approvals for teams", () => {
  test.use({ storageState: { cookies: [], origins: [] } });

  test("two approvers, one from finance: progress, the agent's words as text, and the release", async ({ page }) => {
    const agent = await teamAgent();
    const id = await charge(agent, "600.00", "Quarterly <b>servo</b> restock");
    await signInAs(page, "approver");
    const row = page.locator(`tr[data-approval="${id}"]`);
    await expect(row.getByTestId("justification")).toHaveText("“Quarterly <b>servo</b> restock”");
    await expect(row.locator("b")).toHaveCount(0);
    await expect(row.getByTestId("progress")).toHaveText("0 of 2");
    await expect(row.getByTestId("needs")).toHaveText("needs 2 more approvers, one of them with role finance");
    await row.getByTestId("approve").click();
    await expect(page.getByRole("status").filter({ hasText: "recorded" })).toContainText("(1 of 2, approved by approver); it needs 1 more approver, one of them with role finance");
    await expect(row.getByTestId("cannot-decide")).toContainText("You have approved this");

    await page.getByTestId("sign-out").click();
    await signInAs(page, "finance");
    await page.goto(`/?approval=${id}`);
    const linked = page.locator(`tr[data-approval="${id}"]`);
    await expect(linked).toHaveAttribute("aria-selected", "true");
    await expect(linked.getByTestId("progress")).toHaveText("1 of 2, approved by approver");
    await linked.getByTestId("approve").click();
    await expect(page.getByRole("status").filter({ hasText: "Approved" })).toContainText("it ran");
    const polled = await api(`/v1/approvals/${id}`, agent.key);
    expect(polled.json.status).toBe("approved");
    expect(polled.json.quorum.votes.map((v: any) => v.username)).toEqual(["approver", "finance"]);
  });

  test("x and a shift-click tick a range, and one bulk approval decides each", async ({ page }) => {
    const agent = await teamAgent();
    const ids = [await charge(agent, "40.00"), await charge(agent, "41.00"), await charge(agent, "42.00")];
    await signInAs(page, "approver");
    await expect(page.getByTestId("inbox-live")).toHaveAttribute("data-live", "true");
    // Newest first: the last charge is the top row. Select it with j/k, tick it with x.
    const rowOf = (id: string) => page.locator(`tr[data-approval="${id}"]`);
    await expect(rowOf(ids[2])).toBeVisible();
    const rows = page.locator("tr[data-approval]");
    const top = await rows.first().getAttribute("data-approval");
    expect(top).toBe(ids[2]);
    await page.locator("body").press("x");
    await expect(rowOf(ids[2]).locator("input[data-tick]")).toBeChecked();
    await rowOf(ids[0]).locator("input[data-tick]").click({ modifiers: ["Shift"] });
    for (const id of ids) await expect(rowOf(id).locator("input[data-tick]")).toBeChecked();
    await page.getByLabel("Note for the ticked items").fill("month-end batch");
    await page.getByTestId("bulk-approve").click();
    await expect(page.getByRole("status").filter({ hasText: "Approved 3 of 3." })).toBeVisible();
    for (const id of ids) {
      const a = await api(`/v1/approvals/${id}`, agent.key);
      expect(a.json.status).toBe("approved");
      expect(a.json.quorum.votes[0].note).toBe("month-end batch");
    }
  });

  test("on a phone each waiting item is a card with its amount, reason, expiry and both decisions in view", async ({ page }) => {
    const agent = await teamAgent();
    const id = await charge(agent, "45.00", "urgent spares");
    await page.setViewportSize({ width: 390, height: 844 });
    await signInAs(page, "approver");
    await page.goto(`/?approval=${id}`);
    const card = page.locator(`tr[data-approval="${id}"]`);
    await expect(card).toBeVisible();
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(390);
    for (const testid of ["approve", "deny", "countdown", "justification"]) {
      await expect(card.getByTestId(testid)).toBeInViewport();
    }
    const signOut = await page.getByTestId("sign-out").boundingBox();
    expect(signOut!.height).toBeLessThan(28);
    // The filters and the bulk bar wait behind one control, so the first item leads the screen.
    await expect(page.getByTestId("inbox-filters")).toBeHidden();
    await expect(page.getByTestId("bulk")).toBeHidden();
    await page.screenshot({ path: "end2end/test-results/screenshots/inbox-phone.png", fullPage: true });
    await page.getByTestId("inbox-tools").click();
    await expect(page.getByTestId("inbox-filters")).toBeVisible();
    await expect(page.getByTestId("bulk")).toBeVisible();
    await card.getByTestId("approve").click();
    await expect(page.getByRole("status").filter({ hasText: "Approved" })).toBeVisible();
  });

  test("groups are managed on the users page and a kit's simulator says who must approve", async ({ page }) => {
    await signInAs(page, "admin");
    await page.goto("/users");
    const name = `e2e-treasury-${stamp}`;
    await page.getByTestId("create-group").getByLabel("New group").fill(name);
    await page.getByTestId("create-group").getByRole("button", { name: "Add group" }).click();
    const group = page.locator(`[data-group="${name}"]`);
    await expect(group).toBeVisible();
    await group.getByLabel("User to add").selectOption("finance");
    await group.getByTestId("add-member").click();
    await expect(page.locator(`[data-group="${name}"] [data-member="finance"]`)).toBeVisible();

    await teamAgent();
    await page.goto(`/kits/${KIT}`);
    await expect(page.getByTestId("approval-rules")).toHaveValue(/above 500\.00 approvers 2 role finance window 4h/);
    await page.getByTestId("sim-amount").fill("700");
    await expect(page.getByTestId("sim-verdict")).toHaveText("park");
    await expect(page.getByTestId("sim-verdict-who")).toContainText("2 approvers, one of them with role finance within 4h");
  });
});
