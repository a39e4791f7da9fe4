import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/**
 * Debian's Chromium driven by playwright-core (never a browser download). The machine's network
 * is closed: every background service of the browser is off, and each run gets a fresh profile.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const INSTALL_COMMAND = 'apt-get install -y chromium';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/**
 * Launches Chromium, or fails with the exact command that installs it (the e2e tests never skip).
 * A phone in Kinshasa by default; `page` overrides the viewport or locale (a desktop reader of the API reference).
 */
export async function launchChromium(
  page: { viewport?: { width: number; height: number }; locale?: string; javaScriptEnabled?: boolean } = {},
): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: the browser tests need it. Install it with: ${INSTALL_COMMAND}`,
    );
  }
  const profile = mkdtempSync(path.join(os.tmpdir(), 'checkout-e2e-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 390, height: 844 },
    // a client in Kinshasa: the browser asks for French (Accept-Language), as the checkout's default
    locale: 'fr-CD',
    ...page,
  });
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
