import { describe, expect, it } from 'vitest';
import type { MessageAttribute } from '../../../src/sqs/backend.js';
import { md5OfAttributes, md5OfBody } from '../../../src/sqs/md5.js';

// Vectors from the aws-md5-of-message-attributes README and the SQS protocol notes (§5).
const string1: Record<string, MessageAttribute> = { attribName1: { type: 'String', value: 'attribValue 1' } };
const number1: Record<string, MessageAttribute> = {
  customNumberTypeAttrib: { type: 'Number.float', value: '4563442423554324324264524243.32543234' },
};
const binary1: Record<string, MessageAttribute> = {
  binaryAttribute: { type: 'Binary', value: new Uint8Array(Buffer.from('Hello binary world!', 'utf8')) },
};

describe('md5OfBody', () => {
  it('hashes the UTF-8 bytes as lowercase hex', () => {
    expect(md5OfBody('This is a test message')).toBe('fafb00f5732ab283681e124bf8747ed1');
    expect(md5OfBody('héllo')).toBe('be50e8478cf24ff3595bc7307fb91b50');
  });
});

describe('md5OfAttributes', () => {
  it('reproduces the AWS string, custom number and binary vectors', () => {
    expect(md5OfAttributes(string1)).toBe('19e27d4e946b072f3f58da80d94fd778');
    expect(md5OfAttributes(number1)).toBe('9fe1b90bbd9965bdf77bac517c7d2495');
    expect(md5OfAttributes(binary1)).toBe('31a92b15d92f8db860eda32aceb656c3');
  });

  it('reproduces the combined vector whatever order the names come in', () => {
    expect(md5OfAttributes({ ...string1, ...number1, ...binary1 })).toBe('c932db14a896c663f83c260297d594ff');
    expect(md5OfAttributes({ ...binary1, ...number1, ...string1 })).toBe('c932db14a896c663f83c260297d594ff');
  });

  it('is undefined when there are no attributes', () => {
    expect(md5OfAttributes({})).toBeUndefined();
  });

  it('tells a string value from the same bytes as binary', () => {
    const asString = md5OfAttributes({ a: { type: 'String', value: 'x' } });
    const asBinary = md5OfAttributes({ a: { type: 'String', value: new Uint8Array([0x78]) } });
    expect(asString).not.toBe(asBinary);
  });
});
