/**
 * Loopback addresses, for the DNS-rebinding guards of the admin and SQS servers: a page whose
 * DNS name rebinds to this machine reaches a loopback port with its own name in the Host header.
 */
import { isIPv4, isIPv6 } from 'node:net';

/**
 * The Host names a server bound to `bind` serves when `bind` is a loopback address (`localhost`,
 * 127.0.0.0/8, `::1` with or without brackets), so that a page whose DNS name rebinds to this
 * machine cannot reach the API through a browser; undefined for any other address.
 */
export function loopbackHosts(bind: string): string[] | undefined {
  const bare = (bind.startsWith('[') && bind.endsWith(']') ? bind.slice(1, -1) : bind).toLowerCase();
  const v4 = isIPv4(bare) || /^::ffff:\d+\.\d+\.\d+\.\d+$/.test(bare) ? bare.replace(/^::ffff:/, '') : undefined;
  const loopback = bare === 'localhost' || (v4 !== undefined && isIPv4(v4) && v4.startsWith('127.')) || (isIPv6(bare) && /^(0{0,4}:){2,7}0{0,3}1$/.test(bare));
  if (!loopback) return undefined;
  // An IPv4-mapped address is named by its IPv4 form too.
  return [...new Set(['127.0.0.1', 'localhost', '[::1]', isIPv6(bare) ? `[${bare}]` : bare, ...(v4 === undefined ? [] : [v4])])];
}


/** The host name of a Host header, as compared: lowercase, without its port or a trailing dot. */
export function hostNameOf(hostHeader: string): string {
  const host = hostHeader.toLowerCase();
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0]!;
  // "localhost." (a fully qualified name) is localhost.
  return name.replace(/\.$/, '');
}

/**
 * A configured host name (allowedHosts, --allowed-hosts), as compared; undefined when it can never
 * match a Host header's name: it has a port, or is an IPv6 address without brackets.
 */
export function configuredHostName(entry: string): string | undefined {
  const name = entry.trim().toLowerCase().replace(/\.$/, '');
  if (name === '' || (name.includes(':') && !/^\[[0-9a-f:.]+\]$/.test(name))) return undefined;
  return name;
}
