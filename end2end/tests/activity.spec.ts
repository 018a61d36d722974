// The live activity feed: backfilled from the log on load, then following the stream; an
// action shows up within a second; pause holds new entries back and resume shows them.
import { api, expect, test } from "./fixtures";
import { COMPANY_KEY } from "../global-setup";

async function newAgent(prefix: string) {
  const profile = await api("/v1/agent-profiles", COMPANY_KEY, { name: `${prefix}-${Date.now()}`, kit: "Default" });
  const key = await api(`/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {});
  return { id: profile.json.id as string, name: profile.json.name as string, key: key.json.secret as string };
}

const read = (a: { id: string; key: string }, url: string) =>
  api(`/v1/users/${a.id}/web/read`, a.key, { url });

test.describe("activity feed", () => {
  test("an action shows up in the feed within a second, and the page is backfilled after a reload", async ({ page }) => {
    const agent = await newAgent("e2e-live");
    await page.goto("/activity");
    await expect(page.getByTestId("live-state")).toHaveText("live");
    const before = await page.locator("tr[data-seq]").count();
    expect(before).toBeGreaterThan(0);

    const done = await read(agent, "https://example.test/live");
    expect(done.status).toBe(200);
    const row = page.locator("tr[data-kind=action]", { hasText: agent.name }).first();
    // SPEC: the feed shows an action within a second of it happening.
    await expect(row).toBeVisible({ timeout: 1_000 });
    await expect(row).toContainText("web.read");

    await page.reload();
    await expect(page.locator("tr[data-kind=action]", { hasText: agent.name }).first()).toBeVisible();
  });

  test("pause holds new entries back and resume shows them", async ({ page }) => {
    const agent = await newAgent("e2e-pause");
    await page.goto(`/activity?agent=${agent.name}`);
    await expect(page.getByTestId("live-state")).toHaveText("live");
    await page.getByTestId("pause").click();
    await expect(page.getByTestId("pause")).toHaveText("Resume");
    expect((await read(agent, "https://example.test/a")).status).toBe(200);
    expect((await read(agent, "https://example.test/b")).status).toBe(200);
    // Two actions, each an action entry for this agent; the filter keeps other agents out.
    await expect(page.getByTestId("live-state")).toHaveText(/paused · [1-9]\d* new/);
    await expect(page.locator("tr[data-kind=action]", { hasText: agent.name })).toHaveCount(0);
    await page.getByTestId("pause").click();
    await expect(page.locator("tr[data-kind=action]", { hasText: agent.name })).toHaveCount(2);
    await expect(page.getByTestId("live-state")).toHaveText("live");
  });
});
