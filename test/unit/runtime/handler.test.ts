import { describe, expect, it } from 'vitest';
import { LazyHandlerContext, outcomeOf } from '../../../src/runtime/handler.js';
import { NonRetryableError, RateLimitError, RetryAfterError } from '../../../src/errors.js';

describe('LazyHandlerContext', () => {
  it('makes the controller on the first read of signal, and hands out its signal from then on', () => {
    const entry: { controller: AbortController | undefined } = { controller: undefined };
    const context = new LazyHandlerContext(entry);
    expect(entry.controller).toBeUndefined();
    const signal = context.signal;
    expect(entry.controller).toBeInstanceOf(AbortController);
    expect(signal).toBe(entry.controller!.signal);
    expect(context.signal).toBe(signal);
    entry.controller!.abort('stop');
    expect(context.signal.aborted).toBe(true);
  });

  it('reads a controller the runtime made first (a timeout before the handler looked)', () => {
    const controller = new AbortController();
    controller.abort('timeout');
    const context = new LazyHandlerContext({ controller });
    expect(context.signal).toBe(controller.signal);
    expect(context.signal.reason).toBe('timeout');
  });

  it('shows the handler nothing of the runtime entry it reads from', () => {
    const context = new LazyHandlerContext({ controller: undefined });
    expect(Object.keys(context)).toEqual([]);
    expect('signal' in context).toBe(true);
    const { signal } = context;
    expect(signal).toBeInstanceOf(AbortSignal);
  });
});

describe('outcomeOf', () => {
  it('reads the error classes a handler throws', () => {
    expect(outcomeOf(new RetryAfterError(250))).toEqual({ kind: 'defer', delayMs: 250 });
    expect(outcomeOf(new NonRetryableError('bad')).kind).toBe('reject');
    expect(outcomeOf(new RateLimitError(1000))).toEqual({ kind: 'defer', delayMs: 0, pauseMs: 1000 });
    expect(outcomeOf(new Error('boom')).kind).toBe('fail');
  });

  it('never throws on a hostile value', () => {
    const hostile = new Proxy({}, { getPrototypeOf: () => { throw new Error('trap'); } });
    expect(outcomeOf(hostile).kind).toBe('fail');
  });
});
