/**
 * What counts as a plain object where Spool takes JSON-shaped input (payloads, message
 * attributes): one whose prototype is null or an Object.prototype, this realm's or another's.
 */

/**
 * True for a plain object's prototype: null, this realm's Object.prototype, or another realm's (an
 * object made in a `vm` context, or by a library that runs in one). Read through descriptors, so no
 * getter on the prototype runs.
 */
export function isPlainPrototype(proto: unknown): boolean {
  if (proto === Object.prototype || proto === null) return true;
  // Another realm's Object.prototype ends its chain, and is its own constructor's prototype.
  if (typeof proto !== 'object' || Object.getPrototypeOf(proto) !== null) return false;
  const ctor: unknown = Object.getOwnPropertyDescriptor(proto, 'constructor')?.value;
  return typeof ctor === 'function' && ctor.name === 'Object' && Object.getOwnPropertyDescriptor(ctor, 'prototype')?.value === proto;
}
