import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

/** Debian's chromium (apt-get install chromium), driven by playwright-core. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Whether the browser tests can run here. Without chromium they are skipped with a message on a
 * developer's machine, and fail under CI (CI=true), where .ci/run installs it.
 */
export const chromiumAvailable = (): boolean => {
  if (existsSync(CHROMIUM)) return true;
  if (process.env.CI === 'true') return true; // the launch fails, and with it the tests
  console.warn(`Skipping the dashboard's browser tests: no chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);
  return false;
};

export interface Browser {
  context: BrowserContext;
  /** A new tab: its own request headers (credentials), colour scheme and viewport. */
  page(options?: { headers?: Record<string, string>; colorScheme?: 'light' | 'dark'; width?: number; height?: number }): Promise<Page>;
  close(): Promise<void>;
}

/** One chromium with a fresh --user-data-dir (removed on close), launched with the flags of the issue. */
export const launchBrowser = async (): Promise<Browser> => {
  const dir = mkdtempSync(join(tmpdir(), 'dashboard-chromium-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
    viewport: { width: 1280, height: 900 },
    // A zone away from UTC (and not by whole hours): the page's UTC / browser-zone switch shows a difference.
    timezoneId: 'Asia/Kolkata',
    timeout: 60_000,
  });
  return {
    context,
    page: async ({ headers, colorScheme = 'light', width = 1280, height = 900 } = {}) => {
      const page = await context.newPage();
      if (headers) await page.setExtraHTTPHeaders(headers);
      await page.emulateMedia({ colorScheme });
      await page.setViewportSize({ width, height });
      return page;
    },
    close: async () => {
      await context.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
};
