/**
 * The MD5 digests SQS returns so that clients can check what the server stored.
 *
 * JS v3 checks `MD5OfMessageBody` and `MD5OfBody` (lowercase hex of the UTF-8 bytes); the Java
 * and .NET SDKs also check the attribute digests, so those follow AWS's algorithm exactly:
 * names sorted, each field length-prefixed (4-byte big-endian), a transport byte 1 for string
 * values and 2 for binary ones.
 */
import * as crypto from 'node:crypto';
import type { MessageAttribute } from './backend.js';

// crypto.hash (Node ≥ 20.12) is the one-shot form, several times cheaper than createHash for
// ~100-byte bodies; every received message needs one.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** Lowercase hex MD5 of a body's UTF-8 bytes. */
export function md5OfBody(body: string): string {
  return oneShot ? oneShot('md5', body, 'hex') : crypto.createHash('md5').update(body, 'utf8').digest('hex');
}

/** MD5 of message (or system) attributes, or undefined when there are none. */
export function md5OfAttributes(attributes: Readonly<Record<string, MessageAttribute>>): string | undefined {
  // Sorted by UTF-16 code units, as the AWS SDKs sort; names are ASCII, so bytes agree.
  const names = Object.keys(attributes).sort();
  if (names.length === 0) return undefined;
  const hash = crypto.createHash('md5');
  const field = (bytes: Uint8Array) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    hash.update(length);
    hash.update(bytes);
  };
  for (const name of names) {
    const attribute = attributes[name] as MessageAttribute;
    field(Buffer.from(name, 'utf8'));
    field(Buffer.from(attribute.type, 'utf8'));
    if (typeof attribute.value === 'string') {
      hash.update(STRING_TRANSPORT);
      field(Buffer.from(attribute.value, 'utf8'));
    } else {
      hash.update(BINARY_TRANSPORT);
      field(attribute.value);
    }
  }
  return hash.digest('hex');
}

const STRING_TRANSPORT = Buffer.from([1]);
const BINARY_TRANSPORT = Buffer.from([2]);
