// A plain Node ESM app (no TypeScript, no loader) that uses the installed package.
import { createRequire } from 'node:module';
import { createAdminHandler, createSpool, isSpoolError } from 'spoolmq';

// prom-client loads when the admin handler or metrics are first used, not with the package.
const promLoaded = () => Object.keys(createRequire(import.meta.url).cache).some((file) => file.includes('/node_modules/prom-client/'));

const spool = createSpool({ path: process.argv[2] ?? 'app.db' });
const handled = new Promise((resolve) => {
  spool.register('greetings', async (message) => resolve(message.payload));
});
await spool.start();
const id = await spool.send('greetings', { hello: 'from a plain Node app' });
console.log(`sent ${id}`);
console.log(`handled ${JSON.stringify(await handled)}`);
try {
  await spool.send('not a queue name', {});
} catch (error) {
  console.log(`refused ${isSpoolError(error, 'INVALID_QUEUE_NAME') ? error.code : String(error)}`);
}
console.log(`prom-client loaded: ${promLoaded()}`);
const admin = createAdminHandler(spool);
const scraped = await admin.registry.metrics();
console.log(`metrics ${/^spool_messages\{/m.test(scraped) ? 'scraped' : 'missing'}, prom-client loaded: ${promLoaded()}`);
admin.close();
await spool.close();
console.log('closed');
