/**
 * Query protocol requests (`Action=…&Version=2012-11-05`, form-encoded; boto3 before 1.31.81,
 * aws-sdk v2, the AWS CLI v1 and many tools). The flattened keys are folded into the JSON
 * protocol's input shape, so both protocols share one normalizer:
 *
 *   Attribute.1.Name=VisibilityTimeout&Attribute.1.Value=60     → Attributes: { VisibilityTimeout: '60' }
 *   MessageAttribute.1.Name=a&MessageAttribute.1.Value.DataType=String&…  → MessageAttributes: { a: {…} }
 *   SendMessageBatchRequestEntry.2.MessageBody=x                → Entries[1].MessageBody
 *   AttributeName.1=All (or AttributeName=All)                  → AttributeNames: ['All']
 *
 * Members are ordered by their index N. Integer members become numbers when they are integer text
 * and stay text otherwise, for the normalizer to refuse.
 */
import { SqsError, invalidParameter } from './errors.js';
import { resolveOperation, type SqsOperation } from './requests.js';

/** How a flattened Query member folds into the JSON shape. */
type Fold =
  | { kind: 'list'; member: string }
  | { kind: 'map'; member: string; key: string; value: string }
  | { kind: 'structs'; member: string };

const FOLDS: Readonly<Record<string, Fold>> = {
  Attribute: { kind: 'map', member: 'Attributes', key: 'Name', value: 'Value' },
  Tag: { kind: 'map', member: 'Tags', key: 'Key', value: 'Value' },
  MessageAttribute: { kind: 'map', member: 'MessageAttributes', key: 'Name', value: 'Value' },
  MessageSystemAttribute: { kind: 'map', member: 'MessageSystemAttributes', key: 'Name', value: 'Value' },
  AttributeName: { kind: 'list', member: 'AttributeNames' },
  MessageSystemAttributeName: { kind: 'list', member: 'MessageSystemAttributeNames' },
  MessageAttributeName: { kind: 'list', member: 'MessageAttributeNames' },
  TagKey: { kind: 'list', member: 'TagKeys' },
  SendMessageBatchRequestEntry: { kind: 'structs', member: 'Entries' },
  DeleteMessageBatchRequestEntry: { kind: 'structs', member: 'Entries' },
  ChangeMessageVisibilityBatchRequestEntry: { kind: 'structs', member: 'Entries' },
};

const INTEGER_MEMBERS = new Set(['DelaySeconds', 'MaxNumberOfMessages', 'VisibilityTimeout', 'WaitTimeSeconds', 'MaxResults', 'MaxNumberOfMessagesPerSecond']);

/** One key segment's subtree: its own value (`a=1`) and its children (`a.b=2`). */
interface Node {
  value?: string;
  children: Map<string, Node>;
}

/**
 * Parses a Query request: parameters from the URL's query string and the form body (the body wins).
 * A request without `Action` is `MissingAction`.
 */
export function parseQueryRequest(url: string, body: Uint8Array): { op: SqsOperation; input: Record<string, unknown> } {
  const params = new Map<string, string>();
  const queryAt = url.indexOf('?');
  if (queryAt !== -1) for (const [k, v] of new URLSearchParams(url.slice(queryAt + 1))) params.set(k, v);
  const form = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  for (const [k, v] of new URLSearchParams(form)) params.set(k, v);
  const action = params.get('Action');
  if (action === undefined || action === '') throw new SqsError('MissingAction', 'The request must contain the parameter Action.');
  const op = resolveOperation(action);
  params.delete('Action');
  params.delete('Version');
  return { op, input: foldQueryParameters(params) };
}

/** Dot-separated parts a query parameter's name may have (the protocol's deepest has 6). */
const MAX_KEY_SEGMENTS = 12;

/** Folds flattened Query parameters into the JSON protocol's input shape. */
export function foldQueryParameters(params: ReadonlyMap<string, string> | Iterable<[string, string]>): Record<string, unknown> {
  const root: Node = { children: new Map() };
  for (const [key, value] of params) {
    let node = root;
    const segments = key.split('.');
    // The deepest key of the protocol has 6 segments; a much deeper one would overflow the stack
    // of the fold below (a 500) instead of being refused.
    if (segments.length > MAX_KEY_SEGMENTS) throw invalidParameter(key.slice(0, 100), value, `It has ${segments.length} dot-separated parts; the most a parameter has is ${MAX_KEY_SEGMENTS}.`);
    for (const segment of segments) {
      let child = node.children.get(segment);
      if (!child) node.children.set(segment, (child = { children: new Map() }));
      node = child;
    }
    node.value = value;
  }
  return foldStruct(root, '');
}

function foldStruct(node: Node, path: string): Record<string, unknown> {
  const out = Object.create(null) as Record<string, unknown>;
  for (const [name, child] of node.children) {
    const where = path + name;
    // Own keys only: a parameter named like an Object.prototype member (constructor) is unknown, not a fold.
    const fold = Object.hasOwn(FOLDS, name) ? FOLDS[name] : undefined;
    if (fold !== undefined) {
      const items = indexed(child, where);
      if (fold.kind === 'list') out[fold.member] = items.map(([, item, itemPath]) => leaf(item, itemPath));
      else if (fold.kind === 'structs') out[fold.member] = items.map(([, item, itemPath]) => foldStruct(item, `${itemPath}.`));
      else {
        const map = Object.create(null) as Record<string, unknown>;
        for (const [, item, itemPath] of items) {
          const key = item.children.get(fold.key);
          const value = item.children.get(fold.value);
          if (key?.value === undefined) throw invalidParameter(`${itemPath}.${fold.key}`, '', 'It is required.');
          if (value === undefined) throw invalidParameter(`${itemPath}.${fold.value}`, '', 'It is required.');
          map[key.value] = value.children.size > 0 ? foldStruct(value, `${itemPath}.${fold.value}.`) : (value.value ?? '');
        }
        out[fold.member] = map;
      }
    } else if (child.children.size > 0) {
      out[name] = foldStruct(child, `${where}.`);
    } else {
      out[name] = INTEGER_MEMBERS.has(name) && /^-?\d{1,15}$/.test(child.value ?? '') ? Number(child.value) : child.value;
    }
  }
  return out;
}

/** The `.N` children of a flattened member, in index order; `Name=x` without an index is item 1. */
function indexed(node: Node, path: string): [number, Node, string][] {
  if (node.children.size === 0) return node.value === undefined ? [] : [[1, { value: node.value, children: new Map() }, path]];
  const items: [number, Node, string][] = [];
  for (const [index, child] of node.children) {
    if (!/^[1-9]\d{0,5}$/.test(index)) throw invalidParameter(`${path}.${index}`, index, 'The member index must be a positive integer.');
    items.push([Number(index), child, `${path}.${index}`]);
  }
  return items.sort((a, b) => a[0] - b[0]);
}

function leaf(node: Node, path: string): string {
  if (node.value === undefined || node.children.size > 0) throw invalidParameter(path, '', 'It must be a single value.');
  return node.value;
}
