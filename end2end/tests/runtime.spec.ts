// The Runtime page: the demo tenant's team runtime (the reference runtime, its own process, as
// in `make run`) reachable and claimed, an agent's comment delivered through the outbox, an
// approver's webhook (the reference receiver, started here as its own process) told that a
// call parked with a link that opens that item in the inbox, a log stream to a collector (the
// same receiver) with its secret shown once and its cursor, and a dead letter retried.
import { spawn, type ChildProcess } from "node:child_process";
import { createHmac } from "node:crypto";
import path from "node:path";
import { expect, request, test } from "./fixtures";
import { COMPANY_KEY } from "../global-setup";

const BIN = process.env.NAIVE_SERVER_BIN ?? path.resolve(__dirname, "..", "..", "target", "debug", "server");

/// The reference webhook receiver on a free port; its base URL.
async function receiver(args: string[] = []): Promise<{ base: string; child: ChildProcess }> {
  const child = spawn(BIN, ["webhook-receiver", "--listen", "127.0.0.1:0", ...args], { stdio: ["ignore", "pipe", "inherit"] });
  const base = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (c: Buffer) => {
      out += c.toString();
      const m = out.match(/(http:\/\/\S+)/);
      if (m) resolve(m[1]);
    });
    child.on("exit", (code) => reject(new Error(`the receiver exited with ${code}`)));
  });
  return { base, child };
}

/// An agent whose card charges above $50 park: [profile id, key].
async function parkingAgent(): Promise<[string, string]> {
  const name = `Parks${Date.now()}`;
  const kit = { name, primitives: ["cards", "tasks"], limits: { approve: { above: "50" } } };
  expect((await request("PUT", `/v1/kits/${name}`, COMPANY_KEY, kit)).status).toBe(201);
  const profile = await request("POST", "/v1/agent-profiles", COMPANY_KEY, { name: `e2e-${name}`, kit: name });
  const key = await request("POST", `/v1/agent-profiles/${profile.json.id}/keys`, COMPANY_KEY, {});
  return [profile.json.id, key.json.secret];
}

test("the runtime is reachable and an agent's comment is delivered through the outbox", async ({ page }) => {
  const [profile, key] = await parkingAgent();
  const comment = await request("POST", `/v1/users/${profile}/teams/comment`, key, { task_id: "T-1", body: "from the e2e agent" });
  expect(comment.status).toBe(200);
  const id = comment.json.result.command_id;
  await page.goto("/runtime");
  await expect(page.getByRole("heading", { level: 1, name: "Runtime" })).toBeVisible();
  await expect(page.getByTestId("runtime-card")).toHaveAttribute("data-reachable", "true");
  await expect(page.getByTestId("runtime-card")).toContainText("claimed for this tenant");
  await expect(page.getByTestId("runtime-live")).toContainText("naive-reference-runtime");
  await expect(async () => {
    await page.reload();
    await expect(page.getByTestId("commands-table").locator(`tr[data-delivery="${id}"]`)).toHaveAttribute("data-status", "delivered", { timeout: 1_000 });
  }).toPass({ timeout: 15_000 });
  await page.screenshot({ path: "end2end/test-results/screenshots/runtime-admin.png", fullPage: true });
});

test("an approver's webhook is told a call parked, with a link that opens it in the inbox", async ({ page }) => {
  const hook = await receiver();
  try {
    await page.goto("/runtime");
    const form = page.getByTestId("create-webhook");
    await form.getByLabel("Endpoint URL").fill(`${hook.base}/hook`);
    await expect(form.getByLabel("approval.parked")).toBeChecked();
    await form.getByRole("button", { name: "Add webhook" }).click();
    const secret = (await page.getByTestId("new-secret").textContent())!.trim();
    expect(secret).toMatch(/^whsec_/);
    await page.reload();
    await expect(page.getByTestId("new-secret")).toHaveCount(0);

    const [profile, key] = await parkingAgent();
    const parked = await request("POST", `/v1/users/${profile}/cards/charge`, key, { amount: "75.00", merchant: "acme" });
    expect(parked.status).toBe(202);
    const approval = parked.json.recovery[0].approval_id as string;
    let message: any;
    await expect(async () => {
      const got = await (await fetch(`${hook.base}/received`)).json();
      message = got.items.find((r: any) => JSON.parse(r.body).data?.approval_id === approval);
      expect(message).toBeTruthy();
    }).toPass({ timeout: 15_000 });
    // Verified here with Node's crypto, the way docs/outbox.md documents it.
    const key64 = Buffer.from(secret.slice("whsec_".length), "base64");
    const signed = `${message.webhook_id}.${message.webhook_timestamp}.${message.body}`;
    expect(message.webhook_signature).toBe(`v1,${createHmac("sha256", key64).update(signed).digest("base64")}`);
    const body = JSON.parse(message.body);
    expect(body.type).toBe("approval.parked");

    await page.goto(body.data.link);
    const row = page.locator(`tr[data-approval="${approval}"]`);
    await expect(row).toBeVisible();
    await expect(row).toHaveAttribute("aria-selected", "true");
    await page.screenshot({ path: "end2end/test-results/screenshots/runtime-webhook-link.png", fullPage: true });
  } finally {
    hook.child.kill();
  }
});

test("a log stream sends the activity log to a collector, signed, its secret once and its cursor on the page", async ({ page }) => {
  const collector = await receiver();
  try {
    await page.goto("/runtime");
    const form = page.getByTestId("create-stream");
    await form.getByLabel("Collector URL").fill(`${collector.base}/siem`);
    await form.getByRole("button", { name: "Add stream" }).click();
    const secret = (await page.getByTestId("stream-secret-once").getByTestId("new-secret").textContent())!.trim();
    expect(secret).toMatch(/^whsec_/);

    // Its first batch starts with its own entry, one JSON entry per line, signed.
    let first: any;
    await expect(async () => {
      const got = await (await fetch(`${collector.base}/received`)).json();
      first = got.items.find((r: any) => r.answered === 200);
      expect(first).toBeTruthy();
    }).toPass({ timeout: 15_000 });
    const key64 = Buffer.from(secret.slice("whsec_".length), "base64");
    const signed = `${first.webhook_id}.${first.webhook_timestamp}.${first.body}`;
    expect(first.webhook_signature).toBe(`v1,${createHmac("sha256", key64).update(signed).digest("base64")}`);
    const lines = (first.body as string).trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(lines[0].verdict).toBe("stream_added");

    await page.reload();
    await expect(page.getByTestId("stream-secret-once")).toHaveCount(0);
    const row = page.getByTestId("streams-table").locator("tr", { hasText: `${collector.base}/siem` });
    await expect(async () => {
      await page.reload();
      await expect(row).toHaveAttribute("data-state", /caught_up|streaming/, { timeout: 1_000 });
      const cursor = Number(await row.getByTestId("stream-cursor").getAttribute("data-seq", { timeout: 1_000 }));
      expect(cursor).toBeGreaterThanOrEqual(lines[lines.length - 1].seq);
    }).toPass({ timeout: 15_000 });
    await page.screenshot({ path: "end2end/test-results/screenshots/runtime-log-stream.png", fullPage: true });
    await row.getByTestId("delete-stream").click();
    await expect(page.getByTestId("form-done")).toContainText("Removed log stream");
    await expect(page.getByTestId("streams-table").locator("tr", { hasText: `${collector.base}/siem` })).toHaveCount(0);
  } finally {
    collector.child.kill();
  }
});

test("an admin sets how long archived log entries stay, and the page shows the archive's progress", async ({ page }) => {
  await page.goto("/runtime");
  await expect(page.getByTestId("archive-status")).toContainText("Deleted from the database");
  const form = page.getByTestId("retention-form");
  await form.getByLabel("Days an archived entry stays").fill("30");
  await form.getByRole("button", { name: "Save retention" }).click();
  await expect(page.getByTestId("form-done")).toContainText("for 30 days");
  await page.goto("/runtime");
  await expect(page.getByTestId("retention-form").getByLabel("Days an archived entry stays")).toHaveValue("30");
  await page.getByTestId("retention-form").getByLabel("Days an archived entry stays").fill("");
  await page.getByTestId("retention-form").getByRole("button", { name: "Save retention" }).click();
  await expect(page.getByTestId("form-done")).toContainText("Every log entry now stays");
});

test("a webhook that never answers ends in a dead letter an admin retries", async ({ page }) => {
  const hook = await receiver(["--always-fail"]);
  try {
    await page.goto("/runtime");
    const form = page.getByTestId("create-webhook");
    await form.getByLabel("Endpoint URL").fill(`${hook.base}/failing`);
    await form.getByLabel("approval.parked").uncheck();
    await form.getByLabel("approval.decided").uncheck();
    await form.getByLabel("approval.expired").uncheck();
    await form.getByLabel("profile.revoked").check();
    await form.getByRole("button", { name: "Add webhook" }).click();
    await expect(page.getByTestId("secret-once")).toBeVisible();
    const endpoint = page.getByTestId("webhooks-table").locator("tr", { hasText: `${hook.base}/failing` });
    await endpoint.getByTestId("test-webhook").click();
    await expect(page.getByTestId("form-error")).toContainText("HTTP 500");

    const [profile] = await parkingAgent();
    expect((await request("POST", `/v1/agent-profiles/${profile}/revoke`, COMPANY_KEY, { reason: "e2e" })).status).toBe(200);
    const dead = page.getByTestId("deliveries-table").locator('tr[data-status="dead"]', { hasText: "profile.revoked" }).first();
    await expect(async () => {
      await page.reload();
      await expect(dead).toBeVisible({ timeout: 1_000 });
    }).toPass({ timeout: 20_000 });
    await expect(dead).toContainText("webhook_http_500");
    await dead.getByTestId("retry-delivery").click();
    await expect(page.getByTestId("form-done")).toContainText("again");
  } finally {
    hook.child.kill();
  }
});

test("an admin purges an endpoint's backlog from the Runtime page, and none of it is sent", async ({ page }) => {
  // A receiver that takes a minute to answer: the first message is in flight, the rest wait.
  const hook = await receiver(["--latency-ms", "60000"]);
  const created = await request("POST", "/v1/webhooks", COMPANY_KEY, { url: `${hook.base}/slow`, events: ["approval.parked"] });
  expect(created.status).toBe(201);
  const endpoint = created.json.endpoint.id as string;
  try {
    const [profile, key] = await parkingAgent();
    for (let i = 0; i < 3; i++) {
      expect((await request("POST", `/v1/users/${profile}/cards/charge`, key, { amount: "75.00", merchant: "acme" })).status).toBe(202);
    }
    await page.goto("/runtime");
    const queue = page.getByTestId("backlog-table").locator('tr[data-backlog="webhook"]', { hasText: endpoint });
    await expect(queue).toContainText("3 of at most");
    await queue.getByTestId("purge-backlog").click();
    await expect(page.getByTestId("form-done")).toContainText(`Purged 3 queued for webhook ${endpoint}`);
    await expect(queue).toHaveCount(0);
    const purged = page.getByTestId("deliveries-table").locator('tr[data-status="purged"]', { hasText: "approval.parked" });
    await expect(purged).toHaveCount(3);
  } finally {
    hook.child.kill();
    await fetch(`${process.env.NAIVE_E2E_URL}/v1/webhooks/${endpoint}`, { method: "DELETE", headers: { authorization: `Bearer ${COMPANY_KEY}` } });
  }
});
