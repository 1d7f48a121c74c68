/**
 * The dashboard in a real browser: Debian's chromium driven by playwright-core, against a running
 * spool with traffic. Every check waits on a condition in the page or the spool, never on time.
 * Screenshots of each page (1280×800 and 390×844, light and dark) go to test/browser/screenshots/.
 */
import { mkdirSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toDirectedGraph } from 'xstate/graph';
import { buildDashboard } from '../../scripts/build-admin.mjs';
import { messageMachine, NonRetryableError, type Spool } from '../../src/index.js';
import { serveAdminFor, type AdminFixture } from '../helpers/admin.js';
import { nextEvent, reached } from '../helpers/events.js';
import { useTempSpools } from '../helpers/spool.js';

const SCREENSHOTS = join(dirname(fileURLToPath(import.meta.url)), 'screenshots');
const VIEWPORTS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;
const WAIT_MS = 10_000;

const temp = useTempSpools();
let browser: BrowserContext;
let profile: string;

beforeAll(async () => {
  await buildDashboard();
  profile = mkdtempSync(join(tmpdir(), 'spool-chromium-'));
  // A persistent context is how playwright takes a fresh --user-data-dir of our own.
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});

afterAll(async () => {
  await browser?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

/**
 * A started spool with traffic: `email` (its own pool of 2) gets a message every 50 ms and
 * completes them; `held` is paused, so what is sent there stays pending; `flaky` fails a message
 * for good on its first delivery and completes it once requeued. Done rows are kept (retention).
 */
async function spoolWithTraffic(): Promise<AdminFixture & { flakySeen: Set<string> }> {
  const spool = temp.open({
    config: {
      retention: { doneMs: 3_600_000, deadMs: null },
      queues: { email: { executor: { concurrency: 2 } }, held: { paused: true }, flaky: {} },
    },
  });
  const flakySeen = new Set<string>();
  spool.register('email', (message) => new Promise((resolve) => setTimeout(resolve, 5 + ((message.payload as { n: number }).n % 20))));
  spool.register('held', async () => {});
  spool.register('flaky', async (message) => {
    if (!flakySeen.has(message.id)) {
      flakySeen.add(message.id);
      throw new NonRetryableError('the first delivery always fails');
    }
  });
  await spool.start();
  let n = 0;
  const traffic = setInterval(() => void spool.send('email', { n: n++, to: `user${n}@example.com` }).catch(() => {}), 50);
  temp.onCleanup(() => clearInterval(traffic));
  const fixture = await serveAdminFor(temp, spool);
  return { ...fixture, flakySeen };
}

/** A page on its own browser context; console errors and page errors are collected. */
async function openPage(base: string, route: string, options: { viewport?: keyof typeof VIEWPORTS; dark?: boolean } = {}) {
  const page = await browser.newPage();
  temp.onCleanup(() => page.close());
  await page.setViewportSize(VIEWPORTS[options.viewport ?? 'desktop']);
  await page.emulateMedia({ colorScheme: options.dark ? 'dark' : 'light' });
  page.setDefaultTimeout(WAIT_MS);
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${base}/admin/${route}`);
  await page.waitForSelector('[data-testid="live-status"]:text("live")');
  return { page, errors };
}

async function countOf(page: Page, selector: string): Promise<number> {
  return Number(await page.locator(selector).first().getAttribute('data-count'));
}

async function sendHeld(spool: Spool, n: number, from = 0): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await spool.send('held', { orderId: 4200 + from + i, customer: `c${from + i}` }));
  return ids;
}

describe('dashboard in chromium', () => {
  it('shows every queue with counts that change live', async () => {
    const { spool, base } = await spoolWithTraffic();
    await sendHeld(spool, 2);
    const { page, errors } = await openPage(base, '');
    const held = '.queue-row[data-queue="held"] .count-chip[data-state="pending"]';
    await page.waitForSelector(`${held}[data-count="2"]`);
    await sendHeld(spool, 3, 2);
    await page.waitForSelector(`${held}[data-count="5"]`);
    // The email queue moves too: its done count grows while the page stays open.
    const done = '.queue-row[data-queue="email"] .count-chip[data-state="done"]';
    await page.waitForSelector(done);
    const first = await countOf(page, done);
    await expect.poll(() => countOf(page, done), { timeout: WAIT_MS }).toBeGreaterThan(first);
    await expect(page.locator('.queue-row[data-queue="held"] .badge', { hasText: 'paused' }).count()).resolves.toBe(1);
    await page.waitForSelector('[data-testid="chart-throughput"] canvas');
    expect(errors).toEqual([]);
  });

  it('resizes a pool from the queue page, reaching spool.settings and the pool', async () => {
    const { spool, base } = await spoolWithTraffic();
    const { page, errors } = await openPage(base, '#/queue/email');
    await page.fill('[data-testid="concurrency-input"]', '5');
    await page.click('[data-testid="resize"]');
    await expect.poll(() => spool.settings.get().queues.email?.executor?.concurrency, { timeout: WAIT_MS }).toBe(5);
    await expect.poll(async () => (await spool.stats()).pools.byQueue.email?.concurrency, { timeout: WAIT_MS }).toBe(5);
    await page.waitForSelector('.setting-row[data-key="executor.concurrency"] .badge:text("override")');
    expect(errors).toEqual([]);
  });

  it('requeues a dead message from its page, and the page follows it to done', async () => {
    const { spool, base } = await spoolWithTraffic();
    const dead = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.queue === 'flaky' && e.to === 'dead');
    const id = await spool.send('flaky', { invoice: 77 });
    await dead;
    const { page, errors } = await openPage(base, `#/message/${id}`);
    await page.waitForSelector('[data-testid="message-state"] .chip:text("dead")');
    await page.waitForSelector('[data-testid="last-error"]:has-text("NON_RETRYABLE")');
    const moved = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.id === id && e.from === 'dead' && e.to === 'pending');
    const finished = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.id === id && e.to === 'done');
    await page.click('[data-testid="requeue"]');
    await moved;
    await finished;
    expect((await spool.get(id))?.state).toBe('done');
    await page.waitForSelector('[data-testid="message-state"] .chip:text("done")');
    await page.waitForSelector('[data-testid="timeline"] li:has(.chip:text("dead")):has(.chip:text("pending"))');
    // The timeline is the stored history: the failure that sent it dead carries its code.
    await page.waitForSelector('[data-testid="timeline"] li:has(.chip:text("processing")):has(.chip:text("dead")):has-text("NON_RETRYABLE")');
    expect(errors).toEqual([]);
  });

  it("shows an SQS message's group, deduplication id and the queue it was moved from", async () => {
    const { spool, base } = await spoolWithTraffic();
    await spool.queues.create('dlq.fifo', { fifo: true });
    await spool.queues.create('orders.fifo', { fifo: true, deadLetter: { queue: 'dlq.fifo', maxReceiveCount: 1 } });
    const id = await spool.send('orders.fifo', { order: 9 }, { group: 'customer-7', key: 'order-9' });
    await spool.receive('orders.fifo', { visibilityTimeoutMs: 0 });
    // Its second hand-out would pass maxReceiveCount: it moves to dlq.fifo.
    expect(await spool.receive('orders.fifo')).toEqual([]);
    expect(await spool.get(id)).toMatchObject({ queue: 'dlq.fifo', sourceQueue: 'orders.fifo', group: 'customer-7', dedupeId: 'order-9' });
    const { page, errors } = await openPage(base, `#/message/${id}`);
    await page.waitForSelector('[data-testid="group"]:text("customer-7")');
    await page.waitForSelector('[data-testid="dedupe-id"]:text("order-9")');
    await page.waitForSelector('[data-testid="source-queue"]:text("orders.fifo")');
    expect(errors).toEqual([]);
  });

  it('finds a message by a payload field with the search box', async () => {
    const { spool, base } = await spoolWithTraffic();
    const ids = await sendHeld(spool, 60);
    const { page, errors } = await openPage(base, '#/queue/held');
    await page.waitForSelector('[data-testid="message-list"]');
    await page.fill('[data-testid="search"]', 'orderId=4242');
    await page.click('[data-testid="apply-filter"]');
    await page.waitForSelector(`.message-row[data-id="${ids[42]}"]`);
    await expect.poll(() => page.locator('.message-row[data-id]').count(), { timeout: WAIT_MS }).toBe(1);
    await page.fill('[data-testid="search"]', 'c17"');
    await page.click('[data-testid="apply-filter"]');
    await page.waitForSelector(`.message-row[data-id="${ids[17]}"]`);
    await expect.poll(() => page.locator('.message-row[data-id]').count(), { timeout: WAIT_MS }).toBe(1);
    expect(errors).toEqual([]);
  });

  it('acts on "all matching" only for the search the list shows, naming it in the confirmation', async () => {
    const { spool, base } = await spoolWithTraffic();
    const ids = await sendHeld(spool, 5);
    const { page, errors } = await openPage(base, '#/queue/held');
    await page.waitForSelector('[data-testid="message-list"]');
    // Typed, not searched: the list still shows every message, so "all matching" waits.
    await page.fill('[data-testid="search"]', 'orderId=4202');
    expect(await page.locator('[data-testid="bulk-delete-all"]').isDisabled()).toBe(true);
    expect(await page.locator('[data-testid="bulk-requeue-all"]').isDisabled()).toBe(true);
    await page.click('[data-testid="apply-filter"]');
    await expect.poll(() => page.locator('.message-row[data-id]').count(), { timeout: WAIT_MS }).toBe(1);
    const asked: string[] = [];
    page.once('dialog', (dialog) => {
      asked.push(dialog.message());
      void dialog.accept();
    });
    await page.click('[data-testid="bulk-delete-all"]');
    await expect.poll(async () => (await spool.get(ids[2]!)) === undefined, { timeout: WAIT_MS }).toBe(true);
    expect(asked).toEqual(['Delete every message of queue held matching: any state, search "orderId=4202"?']);
    for (const id of [ids[0], ids[1], ids[3], ids[4]]) expect(await spool.get(id!)).toMatchObject({ state: 'pending' });
    expect(errors).toEqual([]);
  });

  it('shows direction marks in stored data as escapes, and a malformed link as the overview', async () => {
    const { spool, base } = await spoolWithTraffic();
    // U+202E reverses what follows: "0001" would read as "1000".
    const id = await spool.send('held', { amount: '\u202E0001\u202C' });
    const { page, errors } = await openPage(base, `#/message/${encodeURIComponent(id)}`);
    const payload = await page.locator('[data-testid="payload"]').textContent();
    expect(payload).toContain('"amount": "\\u202E0001\\u202C"');
    expect(payload).not.toContain('\u202E');
    await page.goto(`${base}/admin/#/queue/%E0%A4%A`);
    await page.waitForSelector('[data-testid="live-status"]:text("live")');
    expect((await page.locator('#app').innerHTML()).length).toBeGreaterThan(0);
    expect(errors).toEqual([]);
  });

  it('draws every state of the machine, counts them live, animates transitions and highlights a path', async () => {
    const { spool, base } = await spoolWithTraffic();
    const states = toDirectedGraph(messageMachine).children.map((c) => c.stateNode.key);
    const { page, errors } = await openPage(base, '#/lifecycle');
    await page.waitForSelector('svg[data-testid="statechart"] text.state-name');
    const drawn = await page.locator('svg[data-testid="statechart"] text.state-name').allTextContents();
    expect([...drawn].sort()).toEqual([...states].sort());
    // Traffic on email moves dots along the edges.
    await page.waitForSelector('svg g.dots circle', { state: 'attached' });

    await page.selectOption('[data-testid="lifecycle-queue"]', 'held');
    const pending = 'text.state-count[data-state="pending"]';
    await page.waitForSelector(`${pending}:text-is("0")`);
    const ids = await sendHeld(spool, 4);
    await page.waitForSelector(`${pending}:text-is("4")`);

    await page.click('g.state-node[data-state="pending"]');
    await page.waitForSelector('[data-testid="state-messages"] li');
    await page.click(`[data-testid="state-messages"] a:text("${ids[0]}")`);
    await page.waitForSelector('[data-testid="path"] li');
    await page.waitForSelector('path.edge.trail[data-edge="initial"]', { state: 'attached' });
    expect(errors).toEqual([]);
  });

  it('renders every page at 1280×800 and 390×844, light and dark, without sideways scrolling or errors (screenshots)', async () => {
    const { spool, base, flakySeen } = await spoolWithTraffic();
    await sendHeld(spool, 12);
    const dead = reached(spool.events$, 'dead', 1, 'flaky');
    const flakyId = await spool.send('flaky', { invoice: 1234, lines: [{ sku: 'A-1', qty: 2 }] });
    await dead;
    expect(flakySeen.has(flakyId)).toBe(true);
    await spool.settings.update({ queues: { email: { maxAttempts: 5 } } });
    mkdirSync(SCREENSHOTS, { recursive: true });

    const pages: { name: string; route: string; ready: string }[] = [
      { name: 'overview', route: '', ready: '.queue-row[data-queue="email"]' },
      { name: 'queue', route: '#/queue/held', ready: '[data-testid="message-list"] .message-row[data-id]' },
      { name: 'message', route: `#/message/${flakyId}`, ready: '[data-testid="timeline"] li' },
      { name: 'settings', route: '#/settings', ready: '[data-testid="settings-table"] .setting-row' },
      { name: 'lifecycle', route: `#/lifecycle/message/${flakyId}`, ready: '[data-testid="path"] li' },
    ];
    for (const viewport of ['desktop', 'phone'] as const) {
      for (const dark of [false, true]) {
        for (const p of pages) {
          const { page, errors } = await openPage(base, p.route, { viewport, dark });
          await page.waitForSelector(p.ready, { state: 'attached' });
          await page.waitForFunction('!document.body.textContent.includes("Loading")');
          const overflow = (await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')) as number;
          expect(overflow, `${p.name} ${viewport}${dark ? ' dark' : ''} scrolls sideways by ${overflow}px`).toBeLessThanOrEqual(0);
          await page.screenshot({ path: join(SCREENSHOTS, `${p.name}-${viewport}${dark ? '-dark' : ''}.png`), fullPage: viewport === 'phone' || p.name !== 'queue' });
          expect(errors, `${p.name} ${viewport}`).toEqual([]);
          await page.close();
        }
      }
    }
  }, 120_000); // 20 page loads and screenshots: ~27 s on an idle 2-core machine, more on a busy one
});
