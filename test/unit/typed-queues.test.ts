/**
 * Typed queues (issue 15): a queue map given to createSpool links each queue's name to its
 * payload for send, sendBatch, register, wait and receive. `npm run typecheck` checks the type
 * assertions (each @ts-expect-error must be an error); the run checks the same calls work.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { createSpool, type Handler, type Message, type PulledMessage, type ReceivedMessage, type Spool } from '../../src/index.js';
import { useTempSpools } from '../helpers/spool.js';

interface Email {
  to: string;
}
interface Report {
  month: number;
}
type AppQueues = { email: Email; report: Report; 'orders.fifo': { sku: string } };

const spools = useTempSpools();

describe('typed queues', () => {
  it('links each queue name to its payload type, and the calls run as declared', async () => {
    const spool = createSpool<AppQueues>({ path: spools.path });
    spools.onCleanup(() => spool.close());
    const seen: Email[] = [];
    spool.register('email', (message) => {
      expectTypeOf(message).toEqualTypeOf<Message<Email>>();
      seen.push(message.payload);
    });
    // Type-checked only (a second consumer of 'email' would be DUPLICATE_CONSUMER at run time).
    // @ts-expect-error a report is not an email
    const wrongHandler = () => spool.register('email', (message: Message<Report>) => void message);
    void wrongHandler;
    await spool.send('email', { to: 'a@b.c' });
    // @ts-expect-error wrong payload for 'email'
    await expect(spool.send('email', { month: 3 })).resolves.toEqual(expect.any(String));
    // @ts-expect-error a queue the map does not declare
    await expect(spool.send('sms', { to: 'x' })).resolves.toEqual(expect.any(String));
    await spool.sendBatch('report', [{ month: 1 }, { month: 2 }]);
    // @ts-expect-error one payload of the batch is wrong
    await expect(spool.sendBatch('report', [{ month: 1 }, { to: 'x' }])).resolves.toHaveLength(2);

    const consumer = spool.consumer();
    const pulled = await consumer.wait('report', { timeoutMs: 0 });
    expectTypeOf(pulled).toEqualTypeOf<PulledMessage<Report> | null>();
    expect(pulled?.payload).toEqual({ month: 1 });
    const either = await consumer.wait(['report', 'email'], { timeoutMs: 0 });
    expectTypeOf(either).toEqualTypeOf<PulledMessage<Report | Email> | null>();
    await consumer.close();

    await spool.queues.create('orders.fifo', { fifo: true, contentDedupe: true });
    await spool.send('orders.fifo', { sku: 'A-1' }, { group: 'g' });
    const received = await spool.receive('orders.fifo', { max: 1 });
    expectTypeOf(received).toEqualTypeOf<ReceivedMessage<{ sku: string }>[]>();
    expect(received[0]?.body).toEqual({ sku: 'A-1' });
  });

  it('takes a map declared as an interface, which has no index signature', async () => {
    interface InterfaceQueues {
      email: Email;
      report: Report;
    }
    const spool = createSpool<InterfaceQueues>({ path: spools.path });
    spools.onCleanup(() => spool.close());
    spool.register('report', (message) => {
      expectTypeOf(message.payload).toEqualTypeOf<Report>();
    });
    await spool.send('email', { to: 'a@b.c' });
    // @ts-expect-error wrong payload for 'email'
    await expect(spool.send('email', { month: 3 })).resolves.toEqual(expect.any(String));
    // @ts-expect-error a queue the interface does not declare
    await expect(spool.send('sms', {})).resolves.toEqual(expect.any(String));
    const consumer = spool.consumer();
    const pulled = await consumer.wait('email', { timeoutMs: 0 });
    expectTypeOf(pulled).toEqualTypeOf<PulledMessage<Email> | null>();
    expect(pulled?.payload).toEqual({ to: 'a@b.c' });
    await consumer.close();
  });

  it('a send to a name known only as a union takes a payload that fits every queue of the union', async () => {
    const spool = createSpool<AppQueues>({ path: spools.path });
    spools.onCleanup(() => spool.close());
    const pick = (n: number): 'email' | 'report' => (n > 0 ? 'email' : 'report');
    const name = pick(1);
    expectTypeOf(spool.send<typeof name>).parameter(1).toEqualTypeOf<Email & Report>();
    // @ts-expect-error an email alone may be sent to 'report'
    await expect(spool.send(name, { to: 'a@b.c' })).resolves.toEqual(expect.any(String));
    // @ts-expect-error the same for each payload of a batch
    await expect(spool.sendBatch(name, [{ month: 1 }])).resolves.toHaveLength(1);
    await spool.send(name, { to: 'a@b.c', month: 1 });
    // A queue whose payload is itself a union keeps it whole for one name.
    const unions = createSpool<{ either: string | number }>({ path: spools.path });
    expectTypeOf(unions.send<'either'>).parameter(1).toEqualTypeOf<string | number>();
    // Reads still see any payload of the union.
    const consumer = spool.consumer();
    const pulled = await consumer.wait([name], { timeoutMs: 0 });
    expectTypeOf(pulled).toEqualTypeOf<PulledMessage<Email | Report> | null>();
    expect(pulled?.payload).toEqual({ to: 'a@b.c' });
    await consumer.close();
  });

  it('without a map every name is allowed and payloads are unknown; register<P> still narrows', () => {
    const spool: Spool = spools.open();
    expectTypeOf(spool.send).parameter(1).toEqualTypeOf<unknown>();
    spool.register<{ n: number }>('anything', (message) => {
      expectTypeOf(message.payload).toEqualTypeOf<{ n: number }>();
    });
    spool.register('other', (message) => {
      expectTypeOf(message.payload).toEqualTypeOf<unknown>();
    });
    // A handler typed on its own is taken as it is, as before the queue map existed.
    const typedHandler: Handler<{ s: string }> = () => {};
    spool.register('inferred', typedHandler);
    expect(() => spool.register('anything', () => {})).toThrow(expect.objectContaining({ code: 'DUPLICATE_CONSUMER' }));
  });
});
