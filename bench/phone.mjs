// The inbox as a phone opens it (issue #48): 390 px wide, Chromium's CPU slowed 4x, 1.6 Mbps
// down with 150 ms of latency. Prints the bytes transferred and the time until the Approve
// buttons are on screen and until the inbox's island is live (hydrated, its event stream
// open), for a first visit and a return visit in the same browser (its cache kept).
//   node bench/phone.mjs <base URL> <admin password>
import { chromium } from "@playwright/test";

const [base, password] = process.argv.slice(2);
const PHONE = { width: 390, height: 844 };
const NETWORK = { offline: false, latency: 150, downloadThroughput: (1.6e6 / 8), uploadThroughput: (750e3 / 8) };

async function signIn() {
  const res = await fetch(`${base}/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" },
    body: new URLSearchParams({ username: "admin", password, next: "/" }),
  });
  const cookie = res.headers.get("set-cookie").split(";")[0];
  const [name, value] = cookie.split("=");
  return { name, value, url: base };
}

/// One visit of the inbox: bytes over the wire, ms to the first Approve button, ms to live.
async function visit(page, cdp) {
  let bytes = 0;
  const onDone = (e) => { bytes += e.encodedDataLength; };
  cdp.on("Network.loadingFinished", onDone);
  const start = Date.now();
  await page.goto(`${base}/`, { waitUntil: "commit" });
  await page.getByTestId("approve").first().waitFor({ state: "visible", timeout: 60_000 });
  const visible = Date.now() - start;
  await page.locator('[data-testid="inbox-live"][data-live="true"]').waitFor({ timeout: 60_000 });
  const live = Date.now() - start;
  await page.waitForLoadState("networkidle").catch(() => {});
  cdp.off("Network.loadingFinished", onDone);
  return { bytes, visible, live };
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run"],
});
const context = await browser.newContext({ viewport: PHONE, deviceScaleFactor: 3, isMobile: true, hasTouch: true });
await context.addCookies([await signIn()]);
const page = await context.newPage();
const cdp = await context.newCDPSession(page);
await cdp.send("Network.enable");
await cdp.send("Network.emulateNetworkConditions", NETWORK);
await cdp.send("Emulation.setCPUThrottlingRate", { rate: 4 });
const first = await visit(page, cdp);
const again = await visit(page, cdp);
await browser.close();
const kb = (b) => (b / 1000).toFixed(1);
const s = (ms) => (ms / 1000).toFixed(2);
console.log("inbox on a phone (390 px, CPU 4x slower, 1.6 Mbps, 150 ms), 50 waiting approvals:");
console.log(`  first visit:  ${kb(first.bytes)} KB transferred, Approve on screen ${s(first.visible)} s, island live ${s(first.live)} s (targets: < 200 KB, < 2 s)`);
console.log(`  return visit: ${kb(again.bytes)} KB transferred, Approve on screen ${s(again.visible)} s, island live ${s(again.live)} s (target: < 30 KB)`);
