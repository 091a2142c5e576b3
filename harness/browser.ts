// A headless Chromium for page tests (Debian's chromium-headless-shell or chromium, driven by
// puppeteer-core): fresh profile per launch, no network features, and a close() that kills the
// browser even when it does not answer — so a failing test never leaves one behind.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';

/** Real binaries first: Debian's /usr/bin entries are wrapper scripts whose PID is not the browser's. */
const CANDIDATES = [
  '/usr/lib/chromium/chromium-headless-shell',
  '/usr/lib/chromium/chromium',
  '/usr/bin/chromium-headless-shell',
  '/usr/bin/chromium',
];

export function chromiumPath(): string {
  const path = process.env.CHROMIUM_PATH || CANDIDATES.find((p) => existsSync(p));
  if (!path) {
    throw new Error(
      'no Chromium found: apt-get install -y --no-install-recommends chromium-headless-shell (or set CHROMIUM_PATH)',
    );
  }
  return path;
}

export interface HeadlessBrowser {
  browser: Browser;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<HeadlessBrowser> {
  const profile = mkdtempSync(join(os.tmpdir(), 'flashsale-chromium-'));
  let browser: Browser;
  try {
    browser = await puppeteer.launch({
      executablePath: chromiumPath(),
      headless: 'shell',
      userDataDir: profile,
      defaultViewport: { width: 1280, height: 1000 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        `--user-data-dir=${profile}`,
      ],
      timeout: 60_000,
    });
  } catch (err) {
    rmSync(profile, { recursive: true, force: true });
    throw err;
  }
  return {
    browser,
    async close() {
      const proc = browser.process();
      await Promise.race([browser.close(), new Promise((r) => setTimeout(r, 5000))]).catch(() => {});
      if (proc && proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
