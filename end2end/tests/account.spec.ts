// A console user's own page: a personal API token is created (its secret shown once), decides
// over /v1 as that user, and stops working when it is revoked. And an approval the kit no
// longer allows is refused in the inbox with the reason, never run.
import { api, expect, request, signInAs, test } from "./fixtures";
import { COMPANY_KEY } from "../global-setup";

/// A fresh kit and an agent on it; returns the agent's profile id and key.
async function agentOn(kit: Record<string, unknown>) {
  const name = kit.name as string;
  expect((await request("PUT", `/v1/kits/${name}`, COMPANY_KEY, kit)).status).toBe(201);
  const profile = await api("/v1/agent-profiles", COMPANY_KEY, { name: `e2e-${name}`, kit: name });
  expect(profile.status).toBe(201);
  const key = await api(`/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {});
  return { profile: profile.json.id as string, key: key.json.secret as string };
}

const park = async (a: { profile: string; key: string }, amount: string) => {
  const r = await api(`/v1/users/${a.profile}/cards/charge`, a.key, { amount, merchant: "acme", memo: "e2e" });
  expect(r.status).toBe(202);
  return r.json.recovery[0].approval_id as string;
};

test.describe("a console user's own tokens", () => {
  test.use({ storageState: { cookies: [], origins: [] } });

  test("a token is shown once, decides as its user, and stops when revoked", async ({ page }) => {
    const agent = await agentOn({ name: `Tokens${Date.now()}`, primitives: ["cards"], limits: { approve: { above: "5" } } });
    await signInAs(page, "approver");
    await page.getByTestId("account-link").click();
    await expect(page.getByRole("heading", { level: 1, name: "Your account" })).toBeVisible();
    await expect(page.getByTestId("account-roles")).toContainText("approver");

    const form = page.getByTestId("create-token");
    await form.getByLabel("Label").fill("e2e script");
    await form.getByLabel("approver").check();
    await form.getByRole("button", { name: "Create token" }).click();
    const secret = page.getByTestId("new-secret");
    await expect(secret).toBeVisible();
    const token = (await secret.textContent())!.trim();
    expect(token).toMatch(/^nvu_[a-z0-9]+_/);
    await page.screenshot({ path: "end2end/test-results/screenshots/account-new-token.png", fullPage: true });
    await page.reload();
    await expect(page.getByTestId("new-secret")).toHaveCount(0);

    const approval = await park(agent, "9.00");
    const approved = await request("POST", `/v1/approvals/${approval}/approve`, token, {});
    expect(approved.status).toBe(200);
    const trail = (await api(`/v1/approvals/${approval}`, COMPANY_KEY)).json.trail as Array<Record<string, string>>;
    expect(trail.find((s) => s.step === "approved")).toMatchObject({ actor: "approver" });

    await page.getByTestId("revoke-token").first().click();
    await expect(page.getByTestId("tokens-table")).toContainText("revoked");
    const second = await park(agent, "8.00");
    expect((await request("POST", `/v1/approvals/${second}/approve`, token, {})).status).toBe(401);
  });

  test("an approval the narrowed kit refuses is not run, and the inbox says why", async ({ page }) => {
    const name = `Narrowing${Date.now()}`;
    const kit = (cap: string) => ({ name, primitives: ["cards"], limits: { budget: { hard_cap: cap }, approve: { above: "5" } } });
    const agent = await agentOn(kit("10"));
    const approval = await park(agent, "6.00");
    expect((await request("PUT", `/v1/kits/${name}`, COMPANY_KEY, kit("3"), { "if-match": "1" })).status).toBe(200);

    await signInAs(page, "approver");
    const row = page.locator(`tr[data-approval="${approval}"]`);
    await row.getByTestId("approve").click();
    await expect(page.getByTestId("form-error")).toContainText("hard_cap_exceeded");
    await expect(page.getByTestId("form-error")).toContainText("hard cap of $3.00");
    const after = await api(`/v1/approvals/${approval}`, agent.key);
    expect(after.json.status).toBe("denied");
    const spent = await api(`/v1/users/${agent.profile}/budget`, agent.key);
    expect(spent.json.totals).toEqual({ posted: "0.00", pending: "0.00" });
  });
});
