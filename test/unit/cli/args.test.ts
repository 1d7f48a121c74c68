/** parseCli's admin token: --token, --token-file or SPOOL_ADMIN_TOKEN, never an empty one. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCli, UsageError } from '../../../src/cli/args.js';

const dir = mkdtempSync(join(tmpdir(), 'spool-args-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const tokenOf = (argv: string[], env: Record<string, string> = {}) => (parseCli(argv, env) as { token?: string }).token;
const refusal = (argv: string[], env: Record<string, string> = {}) => {
  try {
    parseCli(argv, env);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).code).toBe('INVALID_ARGUMENT');
    return (error as Error).message;
  }
  throw new Error(`parseCli accepted ${argv.join(' ')}`);
};

describe('the admin token of spool admin and spool serve', () => {
  for (const command of ['admin', 'serve']) {
    it(`${command}: from --token, from a token file, else from SPOOL_ADMIN_TOKEN`, () => {
      const base = [command, '--db', 'x.db'];
      expect(tokenOf([...base, '--token', 'a1'], { SPOOL_ADMIN_TOKEN: 'env' })).toBe('a1');
      expect(tokenOf([...base, '--token-file', file('t1', 'from-file\n')], { SPOOL_ADMIN_TOKEN: 'env' })).toBe('from-file');
      expect(tokenOf([...base, '--token-file', file('t2', 'crlf\r\n')])).toBe('crlf');
      expect(tokenOf([...base, '--token-file', file('t3', 'no-newline')])).toBe('no-newline');
      expect(tokenOf(base, { SPOOL_ADMIN_TOKEN: 'env' })).toBe('env');
      expect(tokenOf(base)).toBeUndefined();
    });

    it(`${command}: an empty, multi-line, unreadable or doubled token is a usage error, never "no token"`, () => {
      const base = [command, '--db', 'x.db'];
      expect(refusal([...base, '--token', ''])).toContain('--token to give a non-empty token');
      expect(refusal(base, { SPOOL_ADMIN_TOKEN: '' })).toContain('SPOOL_ADMIN_TOKEN to give a non-empty token');
      expect(refusal([...base, '--token-file', file('e', '\n')])).toContain('non-empty token');
      expect(refusal([...base, '--token-file', file('m', 'a\nb\n')])).toContain('one line');
      expect(refusal([...base, '--token-file', join(dir, 'missing')])).toContain('ENOENT');
      expect(refusal([...base, '--token', 'a', '--token-file', file('t4', 'b')])).toContain('not both');
    });
  }

  it('other commands take no token option and ignore the variable', () => {
    expect(refusal(['stats', '--db', 'x.db', '--token-file', 'f'])).toContain('--token-file is not an option of spool stats');
    expect(parseCli(['stats', '--db', 'x.db'], { SPOOL_ADMIN_TOKEN: '' })).toEqual({ name: 'stats', db: 'x.db' });
  });
});
