/** The stored form of the message history (runtime/history.ts): entries round-trip, damage is skipped. */
import { describe, expect, it } from 'vitest';
import { decodeTimeline, encodeEntry, withSendEntry } from '../../src/runtime/history.js';

describe('message history codec', () => {
  it('round-trips entries, with and without an error code, joined as the column stores them', () => {
    const text = [
      encodeEntry(1000, null, 'pending', 0),
      encodeEntry(1001, 'pending', 'activating', 1),
      encodeEntry(1002, 'processing', 'dead', 1, 'NON_RETRYABLE'),
      encodeEntry(1003, 'dead', 'pending', 0, 'a "quoted" code'),
    ].join(',');
    expect(decodeTimeline(text)).toEqual([
      { at: 1000, from: null, to: 'pending', attempt: 0 },
      { at: 1001, from: 'pending', to: 'activating', attempt: 1 },
      { at: 1002, from: 'processing', to: 'dead', attempt: 1, code: 'NON_RETRYABLE' },
      { at: 1003, from: 'dead', to: 'pending', attempt: 0, code: 'a "quoted" code' },
    ]);
  });

  it('reads nothing from null or unreadable text, and skips entries it cannot place', () => {
    expect(decodeTimeline(null)).toEqual([]);
    expect(decodeTimeline('[1,')).toEqual([]);
    expect(decodeTimeline('[1,0,99,1],"x",[2,0,1,1]')).toEqual([{ at: 2, from: 'pending', to: 'activating', attempt: 1 }]);
  });

  it('writes out the implied send entry of a new row, and leaves a row that holds its own alone', () => {
    const sent = encodeEntry(1000, null, 'pending', 0);
    const claimed = encodeEntry(1001, 'pending', 'activating', 1);
    expect(withSendEntry('', 1000)).toBe(sent);
    expect(withSendEntry(`,${claimed}`, 1000)).toBe(`${sent},${claimed}`);
    // A row stored before the send entry was implied: read as it is, whatever its created_at.
    expect(withSendEntry(`${sent},${claimed}`, 5)).toBe(`${sent},${claimed}`);
    expect(decodeTimeline(withSendEntry(`,${claimed}`, 1000))).toEqual([
      { at: 1000, from: null, to: 'pending', attempt: 0 },
      { at: 1001, from: 'pending', to: 'activating', attempt: 1 },
    ]);
  });
});
