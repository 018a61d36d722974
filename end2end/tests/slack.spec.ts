// The Slack app as an admin sets it on the Runtime page: the workspace checked with Slack
// (the reference Web API, its own process), its secrets never shown again, a parked call
// posted to the channel with Approve, Deny and a button that opens the item in the console.
// An approver who clicks Approve before linking is sent a single-use link; they open it,
// sign in, and link their Slack user on the link page; then their click is their vote. The
// admin sees the link on the Runtime page and removes it, then removes the app.
import AxeBuilder from "@axe-core/playwright";
import { COMPANY_KEY } from "../global-setup";
import { api, expect, signInAs, test } from "./fixtures";

const slack = async (what: string): Promise<any[]> =>
  (await (await fetch(`${process.env.NAIVE_E2E_SLACK}/${what}`)).json()).items;
const messages = () => slack("messages");

/// A click on Approve by Slack user `who`, driven through the reference Slack as Slack sends
/// it; what the clicker was told.
async function approveInSlack(url: string, who: string, approval: string): Promise<string> {
  const payload = {
    type: "block_actions", team: { id: "T0REFERENCE" }, user: { id: who, username: "e2e-approver" },
    channel: { id: "C0E2EAPPROVALS" }, actions: [{ action_id: "naive_approve", value: approval }],
  };
  const res = await fetch(`${process.env.NAIVE_E2E_SLACK}/interact`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ url, payload }),
  });
  const sent = await res.json();
  expect(sent.status).toBe(200);
  const n = Number(sent.payload.response_url.split("/").at(-1));
  let said = "";
  await expect.poll(async () => (said = (await slack("responses")).find((r) => r.n === n)?.body.text ?? "")).not.toBe("");
  return said;
}

test("an admin connects Slack, an approver links their Slack user once and then decides in Slack", async ({ page, browser }) => {
  await page.goto("/runtime");
  const form = page.getByTestId("slack-form");
  await form.locator("input[name=bot_token]").fill("xoxb-e2e-reference");
  // The reference Slack's driver signs clicks with this secret, as Slack signs with the app's.
  await form.locator("input[name=signing_secret]").fill("reference-signing-secret-0123456789");
  await form.locator("input[name=channels]").fill("C0E2EAPPROVALS");
  await page.getByTestId("save-slack").click();
  await expect(page.getByTestId("form-done")).toContainText("Connected Slack workspace Reference workspace");
  await expect(page.getByTestId("slack-app")).toContainText("C0E2EAPPROVALS");
  // The secrets are stored, never shown: the fields are empty and say so.
  await expect(form.locator("input[name=bot_token]")).toHaveValue("");
  await expect(form.locator("input[name=bot_token]")).toHaveAttribute("placeholder", /stored/);
  expect(await page.content()).not.toContain("xoxb-e2e-reference");

  const profile = await api("/v1/agent-profiles", COMPANY_KEY, { name: `e2e-slack-${Date.now()}`, kit: "Procurement" });
  const key = await api(`/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {});
  const parked = await api(`/v1/users/${profile.json.id}/cards/charge`, key.json.secret, { amount: "30.00", merchant: "globex-parts" });
  expect(parked.status).toBe(202);
  const approval = parked.json.recovery[0].approval_id as string;
  const posted = async () => (await messages()).find((m) => JSON.stringify(m.blocks).includes(approval));
  await expect.poll(posted).toBeTruthy();
  const buttons = (await posted()).blocks.at(-1).elements;
  expect(buttons.map((b: any) => b.action_id)).toEqual(["naive_approve", "naive_deny", "naive_open"]);
  expect(buttons[2].url).toBe(new URL(`/?approval=${approval}`, page.url()).toString());
  await page.goto(buttons[2].url);
  await expect(page.locator(`tr[data-approval="${approval}"]`)).toBeVisible();

  // An unlinked click decides nothing; the clicker alone gets a link, opens it and signs in.
  await page.goto("/runtime");
  const url = (await page.getByTestId("slack-request-url").textContent())!;
  const said = await approveInSlack(url, "U0E2EAPPROVER", approval);
  expect(said).toContain("not linked");
  const link = said.match(/<(http[^|>]+)\|/)![1];
  const approver = await browser.newContext({ baseURL: process.env.NAIVE_E2E_URL, storageState: { cookies: [], origins: [] } });
  const theirs = await approver.newPage();
  await signInAs(theirs, "approver");
  await theirs.goto(link);
  await expect(theirs.getByTestId("slack-link-offer")).toContainText("@e2e-approver");
  await expect(theirs.getByTestId("console-user")).toHaveText("approver");
  for (const scheme of ["light", "dark"] as const) {
    await theirs.emulateMedia({ colorScheme: scheme });
    const axe = await new AxeBuilder({ page: theirs }).analyze();
    const bad = axe.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
    expect(bad.map((v) => `${scheme}: ${v.id} at ${v.nodes[0]?.target}`)).toEqual([]);
  }
  await theirs.getByTestId("link-slack").click();
  await expect(theirs).toHaveURL(/\/account/);
  await expect(theirs.getByTestId("form-done")).toContainText("Linked Slack user @e2e-approver to approver");
  await expect(theirs.getByTestId("my-slack")).toContainText("@e2e-approver");
  // The link is used up.
  await theirs.goto(link);
  await expect(theirs.getByText(/used already/)).toBeVisible();
  await approver.close();

  // Now the click is the approver's vote, and the message says so.
  expect(await approveInSlack(url, "U0E2EAPPROVER", approval)).toMatch(/^Approved as approver/);
  await expect.poll(async () => JSON.stringify((await posted()).blocks)).toContain("Approved by approver");

  // The admin sees who linked which Slack user, and removes the link.
  await page.reload();
  const row = page.locator('tr[data-slack-user="U0E2EAPPROVER"]');
  await expect(row).toContainText("approver");
  await row.getByRole("button", { name: "Remove link" }).click();
  await expect(page.getByTestId("form-done")).toContainText("Removed the link of Slack user U0E2EAPPROVER");
  await expect(page.getByTestId("slack-links-empty")).toBeVisible();

  // Removing the app keeps later parked calls out of Slack.
  await page.goto("/runtime");
  await page.getByTestId("remove-slack").click();
  await expect(page.getByTestId("form-done")).toContainText("Removed the Slack app");
  await expect(page.getByTestId("slack-app")).toHaveCount(0);
});
