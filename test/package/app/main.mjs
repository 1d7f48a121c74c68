// A plain Node ESM app (no TypeScript, no loader) that uses the installed package.
import { createSpool, isSpoolError } from 'spoolmq';

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
await spool.close();
console.log('closed');
