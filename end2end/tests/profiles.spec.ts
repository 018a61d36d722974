// Profiles and keys as an admin uses them: a key is created in the console (its secret shown
// once), used by an agent, rotated and revoked; revoking a profile previews its cascade and
// then stops every sub-agent.
import { api, expect, test } from "./fixtures";
import { COMPANY_KEY } from "../global-setup";

const read = (profile: string, key: string) => api(`/v1/users/${profile}/web/read`, key, { url: "https://example.test/" });

test.describe("profiles and keys", () => {
  test("a key is created, used, rotated and revoked", async ({ page }) => {
    const profile = await api("/v1/agent-profiles", COMPANY_KEY, { name: `e2e-keys-${Date.now()}`, kit: "Default" });
    expect(profile.status).toBe(201);
    const id = profile.json.id as string;

    await page.goto(`/profiles/${id}`);
    await expect(page.getByTestId("profile-name")).toHaveText(profile.json.name);
    await page.getByTestId("create-key").click();
    const secret = page.getByTestId("new-secret");
    await expect(secret).toBeVisible();
    const first = (await secret.textContent())!.trim();
    expect(first).toMatch(/^nv_[a-z0-9]+_/);
    // The page says what happened, in words, announced as a status.
    await expect(page.getByTestId("form-done")).toContainText(/^Issued key key_\S+ for e2e-keys-\d+; the profile's other keys keep working\.$/);
    // With it, a ready-to-paste MCP client configuration for this server's /mcp.
    const config = JSON.parse((await page.getByTestId("mcp-config").textContent())!);
    const endpoint = new URL("/mcp", page.url()).toString();
    expect(config.mcpServers.naive).toEqual({ type: "http", url: endpoint, headers: { Authorization: `Bearer ${first}` } });
    await expect(page.getByTestId("mcp-endpoint")).toHaveText(endpoint);
    await page.screenshot({ path: "end2end/test-results/screenshots/profile-new-key.png", fullPage: true });
    // The copy button is live once the island hydrates.
    await page.context().grantPermissions(["clipboard-read", "clipboard-write"]);
    await expect(page.getByTestId("copy-secret")).toBeEnabled();
    await page.getByTestId("copy-secret").click();
    await expect(page.getByTestId("copy-secret")).toHaveText("Copied");
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(first);

    // Shown once: a reload of the same URL shows only the prefix.
    await page.reload();
    await expect(page.getByTestId("new-secret")).toHaveCount(0);
    await expect(page.getByTestId("mcp-config")).toHaveCount(0);
    const prefix = first.split("_")[1];
    const row = page.locator(`tr[data-key="${prefix}"]`);
    await expect(row).toContainText("never");

    // The agent uses it; the console shows it was used.
    expect((await read(id, first)).status).toBe(200);
    await page.reload();
    await expect(row).not.toContainText("never");

    // Rotate with no grace: the new key works, the old one stops at once.
    await row.locator("select[name=grace_secs]").selectOption("0");
    await row.getByTestId("rotate-key").click();
    await expect(page.getByTestId("new-secret")).toBeVisible();
    const second = (await page.getByTestId("new-secret").textContent())!.trim();
    expect(second).not.toBe(first);
    await expect(page.getByTestId("form-done")).toContainText(/^Rotated key key_\S+ into key key_\S+; the old key stopped working now\.$/);
    expect((await read(id, second)).status).toBe(200);
    expect((await read(id, first)).status).toBe(401);

    // Revoke the new key: the agent is refused.
    const secondRow = page.locator(`tr[data-key="${second.split("_")[1]}"]`);
    await secondRow.getByTestId("revoke-key").click();
    await expect(secondRow).toContainText("revoked");
    await expect(page.getByTestId("form-done")).toContainText("is revoked: its next call, over HTTP or MCP, gets 401.");
    expect((await read(id, second)).status).toBe(401);
  });

  test("revoking a profile previews its cascade and stops its sub-agents", async ({ page }) => {
    const stamp = Date.now();
    const parent = await api("/v1/agent-profiles", COMPANY_KEY, { name: `e2e-lead-${stamp}`, kit: "Default" });
    const child = await api("/v1/agent-profiles", COMPANY_KEY, { name: `e2e-helper-${stamp}`, kit: "Default", parent: parent.json.id });
    expect(child.status).toBe(201);
    const childKey = await api(`/v1/agent-profiles/${child.json.id}/keys`, COMPANY_KEY, {});
    expect((await read(child.json.id, childKey.json.secret)).status).toBe(200);

    await page.goto(`/profiles/${parent.json.id}`);
    const cascade = page.getByTestId("cascade");
    await expect(cascade).toContainText("2 profiles revoked");
    await expect(cascade).toContainText(`e2e-helper-${stamp}`);
    // A sub-agent appears after the preview: the confirmed revoke is refused and nothing changes.
    const late = await api("/v1/agent-profiles", COMPANY_KEY, { name: `e2e-late-${stamp}`, kit: "Default", parent: child.json.id });
    expect(late.status).toBe(201);
    await page.getByTestId("confirm-revoke").check();
    await page.getByTestId("revoke").click();
    await expect(page.getByTestId("form-error")).toContainText("cascade_changed");
    await expect(page.getByTestId("profile-status")).toHaveText("active");
    await expect(cascade).toContainText("3 profiles revoked");
    await page.getByTestId("confirm-revoke").check();
    await page.getByTestId("revoke").click();
    await expect(page.getByTestId("profile-status")).toHaveText("revoked");
    await expect(page.getByTestId("form-done")).toContainText("Revoked 3 profile(s) with their keys");
    await expect(page.getByTestId("form-error")).toHaveCount(0);

    const refused = await read(child.json.id, childKey.json.secret);
    expect(refused.status).toBe(403);
    expect(refused.json.reason).toBe("agent_profile_revoked");
    await page.goto("/profiles");
    await expect(page.locator("tr", { hasText: `e2e-helper-${stamp}` })).toContainText("revoked");
  });
});
