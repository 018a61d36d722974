// Accessibility as a test: axe (axe-core, through @axe-core/playwright) on every view each role
// opens, in light and dark, at desktop and phone widths. Any serious or critical violation
// fails the build, named with the page, the rule and the elements.
import AxeBuilder from "@axe-core/playwright";
import { expect, signInAs, test } from "./fixtures";

const ROLES = ["admin", "approver", "reviewer", "finance"] as const;
const SCHEMES = ["light", "dark"] as const;
const WIDTHS = [
  { name: "desktop", width: 1280, height: 800 },
  { name: "phone", width: 390, height: 844 },
] as const;

test.describe("accessibility", () => {
  test.use({ storageState: { cookies: [], origins: [] } });

  for (const role of ROLES) {
    test(`every view ${role} opens passes axe`, async ({ page }) => {
      test.setTimeout(180_000);
      await signInAs(page, role);
      await expect(page.getByTestId("nav")).toBeVisible();
      const views = await page.getByTestId("nav").getByRole("link").evaluateAll((links) =>
        links.map((a) => (a as HTMLAnchorElement).getAttribute("href")!),
      );
      // The pages behind the views too: a proposal and a profile, where the role opens them.
      const more = [...views, "/account", "/no-such-page"];
      const failures: string[] = [];
      for (const scheme of SCHEMES) {
        await page.emulateMedia({ colorScheme: scheme });
        for (const size of WIDTHS) {
          await page.setViewportSize({ width: size.width, height: size.height });
          for (const path of more) {
            await page.goto(path);
            await page.getByRole("heading", { level: 1 }).first().waitFor();
            const result = await new AxeBuilder({ page }).analyze();
            for (const v of result.violations.filter((v) => v.impact === "serious" || v.impact === "critical")) {
              const where = v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(" | ");
              failures.push(`${path} (${scheme}, ${size.name}): ${v.id} [${v.impact}] ${v.help} at ${where}`);
            }
          }
        }
      }
      expect(failures, failures.join("\n")).toEqual([]);
    });
  }
});
