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

// A tool call over /mcp as an MCP client on spec 2026-07-28 sends it: one stateless request.
async function readOverMcp(a: { key: string }, url: string) {
  const res = await fetch(`${process.env.NAIVE_E2E_URL}/mcp`, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${a.key}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": "2026-07-28",
      "Mcp-Method": "tools/call",
      "Mcp-Name": "naive_web_read",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: {
        name: "naive_web_read",
        arguments: { url },
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientInfo": { name: "e2e", version: "1" },
          "io.modelcontextprotocol/clientCapabilities": {},
        },
      },
    }),
  });
  return { status: res.status, json: await res.json() };
}

test.describe("activity feed", () => {
  test("each entry says which transport it came by, and the feed filters by it", async ({ page }) => {
    const agent = await newAgent("e2e-via");
    expect((await read(agent, "https://example.test/over-http")).status).toBe(200);
    const mcp = await readOverMcp(agent, "https://example.test/over-mcp");
    expect(mcp.status).toBe(200);
    expect(mcp.json.result.isError).toBe(false);
    await page.goto(`/activity?agent=${agent.name}&transport=mcp`);
    const rows = page.locator("tr[data-kind=action]", { hasText: agent.name });
    await expect(rows).toHaveCount(1);
    await expect(rows.first()).toHaveAttribute("data-transport", "mcp");
    // The agent (here also the actor) is named; its profile id is on hover, never in the cell.
    await expect(rows.first()).not.toContainText("prf_");
    await expect(rows.first().locator(`td[title="${agent.id}"]`)).toHaveText([agent.name, agent.name]);
    // Live, the filter keeps /v1 calls out and lets MCP calls in.
    await expect(page.getByTestId("live-state")).toHaveText("live");
    expect((await read(agent, "https://example.test/over-http-2")).status).toBe(200);
    expect((await readOverMcp(agent, "https://example.test/over-mcp-2")).status).toBe(200);
    await expect(rows).toHaveCount(2);
    await page.goto(`/activity?agent=${agent.name}&transport=http`);
    await expect(rows).toHaveCount(2);
    await expect(rows.first()).toHaveAttribute("data-transport", "http");
  });

  test("an action shows up in the feed within a second, and the page is backfilled after a reload", async ({ page }) => {
    const agent = await newAgent("e2e-live");
    await page.goto("/activity");
    await expect(page.getByTestId("live-state")).toHaveText("live");
    const before = await page.locator("tr[data-seq]").count();
    expect(before).toBeGreaterThan(0);

    const done = await read(agent, "https://example.test/live");
    expect(done.status).toBe(200);
    const row = page.locator("tr[data-kind=action]", { hasText: agent.name }).first();
    // The feed shows an action within a second of it happening.
    await expect(row).toBeVisible({ timeout: 1_000 });
    await expect(row).toContainText("web.read");
    // A row the stream delivered names its agent the same way.
    await expect(row.locator(`td[title="${agent.id}"]`)).toHaveText([agent.name, agent.name]);

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
