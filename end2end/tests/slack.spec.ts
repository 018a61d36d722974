// The Slack app as an admin sets it on the Runtime page: the workspace checked with Slack
// (the reference Web API, its own process), its secrets never shown again, a parked call
// posted to the channel with a button that opens the item in the console, and the app
// removed again.
import { COMPANY_KEY } from "../global-setup";
import { api, expect, test } from "./fixtures";

const messages = async (): Promise<any[]> =>
  (await (await fetch(`${process.env.NAIVE_E2E_SLACK}/messages`)).json()).items;

test("an admin connects Slack on the Runtime page and a parked call is posted there", async ({ page }) => {
  await page.goto("/runtime");
  const form = page.getByTestId("slack-form");
  await form.locator("input[name=bot_token]").fill("xoxb-e2e-reference");
  await form.locator("input[name=signing_secret]").fill("e2e-signing-secret-0123");
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
  const button = (await posted()).blocks.at(-1).elements[0];
  expect(button.url).toBe(new URL(`/?approval=${approval}`, page.url()).toString());
  await page.goto(button.url);
  await expect(page.locator(`tr[data-approval="${approval}"]`)).toBeVisible();

  // Removing the app keeps later parked calls out of Slack.
  await page.goto("/runtime");
  await page.getByTestId("remove-slack").click();
  await expect(page.getByTestId("form-done")).toContainText("Removed the Slack app");
  await expect(page.getByTestId("slack-app")).toHaveCount(0);
});
