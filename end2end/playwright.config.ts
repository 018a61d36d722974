import { defineConfig } from "@playwright/test";
import { STORAGE_STATE } from "./global-setup";

// The system Chromium from Debian; Playwright never downloads a browser here.
const launchOptions = {
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
};

export default defineConfig({
  testDir: "./tests",
  outputDir: "./test-results/artifacts",
  // global-setup starts the real server on a free port with a fresh database.
  globalSetup: "./global-setup.ts",
  fullyParallel: false,
  workers: 1,
  retries: 0,
  forbidOnly: !!process.env.CI,
  reporter: [["list"]],
  timeout: 30_000,
  use: {
    baseURL: process.env.NAIVE_E2E_URL,
    // Every test starts signed in as the demo admin; sign-in itself is tested from a fresh context.
    storageState: STORAGE_STATE,
    trace: "retain-on-failure",
    launchOptions,
  },
  projects: [
    { name: "chromium", testIgnore: /nojs\.spec\.ts/ },
    { name: "no-javascript", testMatch: /nojs\.spec\.ts/, use: { javaScriptEnabled: false } },
  ],
});
