// A TypeScript consumer of the installed package's declarations (checked with tsc --noEmit).
import { createSpool, isSpoolError, NonRetryableError, type Handler, type MessageInfo, type SpoolEvent, type SpoolOptions } from 'spoolmq';

const options: SpoolOptions = { path: 'typed.db', durability: 'full' };
const spool = createSpool(options);

const handler: Handler<{ to: string }> = async (message, { signal }) => {
  if (signal.aborted) return;
  if (message.payload.to === '') throw new NonRetryableError('no address');
};
spool.register('email', handler);

spool.events$.subscribe((event: SpoolEvent) => {
  if (event.type === 'message.state') console.log(event.id, event.from, event.to);
});

export async function main(): Promise<void> {
  await spool.start();
  const id: string = await spool.send('email', { to: 'a@b.c' }, { delayMs: 10, priority: 1 });
  const info: MessageInfo | undefined = await spool.get(id);
  const counts = (await spool.stats()).queues['email']?.pending ?? 0;
  console.log(info?.state, counts, spool.settings.get().executor.concurrency);
  try {
    await spool.send('bad name', {});
  } catch (error) {
    if (isSpoolError(error, 'INVALID_QUEUE_NAME')) console.log(error.code, error.details);
  }
  await spool.close({ timeoutMs: 1000 });
}

// @ts-expect-error: send() needs a queue name string.
void spool.send(42, {});
