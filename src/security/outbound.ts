/**
 * The outbound address policy: where the service may connect on a client's word or a stored value
 * (webhook endpoints, push token_uri, CPS_FCM_URL, and any later destination). In production only
 * https to public addresses, plus http or https to what the operator lists in CPS_OUTBOUND_ALLOW;
 * development allows everything, so local receivers work.
 *
 * Checked twice: at registration (`check`, which resolves the name once) and at connect time (the
 * socket's DNS lookup, `lookup`), so the address checked is the address used and a name that
 * re-resolves to a private address after registration (DNS rebinding) is refused. IP literals in
 * any spelling are classified directly, because Node connects to them without a lookup.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Why an address is refused; 'public' is the only class a production connection may reach. */
export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'carrier-grade NAT'
  | 'multicast'
  | 'broadcast'
  | 'this network'
  | 'reserved'
  | 'unique-local'
  | 'site-local'
  | 'metadata'
  | 'not an address';

/** Cloud instance-metadata addresses, named as such (some lie outside the private and link-local ranges). */
const METADATA_ADDRESSES = new Set([
  '169.254.169.254', // AWS, GCP, Azure, OpenStack, ...
  '169.254.170.2', // AWS ECS task metadata
  '100.100.100.200', // Alibaba Cloud
  '168.63.129.16', // Azure WireServer: a public address, but the host's own endpoint
  'fd00:ec2::254', // AWS IMDS over IPv6
]);

/** Names that reach the host itself or a metadata service (metadata.google.internal), whatever DNS says. */
const BLOCKED_NAMES = new Set(['localhost', 'metadata', 'metadata.goog', 'instance-data']);
const BLOCKED_SUFFIXES = ['.localhost', '.internal'];

const V4_RANGES: Record<string, AddressClass> = {
  unicast: 'public',
  loopback: 'loopback',
  private: 'private',
  linkLocal: 'link-local',
  carrierGradeNat: 'carrier-grade NAT',
  multicast: 'multicast',
  broadcast: 'broadcast',
  unspecified: 'this network',
};

const V6_RANGES: Record<string, AddressClass> = {
  unicast: 'public',
  loopback: 'loopback',
  unspecified: 'this network',
  linkLocal: 'link-local',
  multicast: 'multicast',
  uniqueLocal: 'unique-local',
  deprecatedSiteLocal: 'site-local',
};

function classifyV4(address: ipaddr.IPv4): AddressClass {
  if (METADATA_ADDRESSES.has(address.toString())) return 'metadata';
  // Documentation, benchmarking, 240/4, AS112, AMT and the rest of ipaddr.js's special ranges.
  return V4_RANGES[address.range()] ?? 'reserved';
}

function v4FromWords(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 255, low >> 8, low & 255]);
}

/** The stricter of two classes: a tunnel address is public only when both ends are. */
function worse(a: AddressClass, b: AddressClass): AddressClass {
  return a === 'public' ? b : a;
}

function classifyV6(address: ipaddr.IPv6): AddressClass {
  const words = address.parts;
  const bare = new ipaddr.IPv6(words).toString();
  if (METADATA_ADDRESSES.has(bare)) return 'metadata';
  const range = address.range();
  switch (range) {
    // ::ffff:a.b.c.d and ::ffff:0:a.b.c.d: the kernel connects to the IPv4 address itself.
    case 'ipv4Mapped':
    case 'rfc6145':
      return classifyV4(v4FromWords(words[6]!, words[7]!));
    case 'rfc6052':
      // The well-known NAT64 prefix 64:ff9b::/96 reaches the embedded IPv4 address; the local-use
      // prefix 64:ff9b:1::/48 is a site's own translator, never a public destination.
      return words[2] === 0 ? classifyV4(v4FromWords(words[6]!, words[7]!)) : 'reserved';
    case '6to4':
      return classifyV4(v4FromWords(words[1]!, words[2]!));
    case 'teredo':
      // Server in bits 32-64, client (inverted) in the last 32 bits.
      return worse(classifyV4(v4FromWords(words[2]!, words[3]!)), classifyV4(v4FromWords(words[6]! ^ 0xffff, words[7]! ^ 0xffff)));
  }
  const known = V6_RANGES[range];
  if (known !== 'public') return known ?? 'reserved';
  // IPv4-compatible ::a.b.c.d (deprecated): named by what it embeds, never reached.
  if (words.slice(0, 6).every((w) => w === 0)) return worse(classifyV4(v4FromWords(words[6]!, words[7]!)), 'reserved');
  // Global unicast is 2000::/3; the rest of the space is unassigned.
  return (words[0]! & 0xe000) === 0x2000 ? 'public' : 'reserved';
}

/**
 * The class of an IP address in any spelling ipaddr.js reads: dotted, decimal (2130706433),
 * octal (0177.0.0.1), hex (0x7f.1), short (127.1), IPv6 compressed or not, upper case, with a zone,
 * in brackets. Anything else is 'not an address'.
 */
export function classifyAddress(text: string): AddressClass {
  let bare = text.replace(/^\[(.*)\]$/, '$1');
  if (bare.includes(':')) {
    // The zone names an interface, not another address. The URL parser writes embedded dotted
    // IPv4 as hex words (ipaddr.js would read "::8.8.8.8" as IPv4-mapped).
    bare = bare.replace(/%.*$/, '');
    try {
      bare = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
    } catch {
      return 'not an address';
    }
  }
  if (!ipaddr.isValid(bare)) return 'not an address';
  const address = ipaddr.parse(bare);
  return address.kind() === 'ipv4' ? classifyV4(address as ipaddr.IPv4) : classifyV6(address as ipaddr.IPv6);
}

export function isPublicAddress(text: string): boolean {
  return classifyAddress(text) === 'public';
}

/**
 * A host as the WHATWG URL parser reads it (so "0x7f.1", "127.0.0.1." and full-width digits become
 * 127.0.0.1), lower case, without IPv6 brackets or a trailing dot.
 */
export function canonicalHost(host: string): string {
  let canonical = host.toLowerCase();
  try {
    canonical = new URL(`http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}/`).hostname;
  } catch {
    // Not a URL host (a zone id, say): classified as it is.
  }
  return canonical.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
}

/** The class of a host that is an IP literal in any spelling; null for a name (DNS decides). */
export function classifyLiteral(host: string): AddressClass | null {
  for (const candidate of [host.replace(/^\[(.*)\]$/, '$1'), canonicalHost(host)]) {
    const found = classifyAddress(candidate);
    if (found !== 'not an address') return found;
  }
  return null;
}

/** Whether a name is refused whatever it resolves to (the host itself, metadata services). */
export function isBlockedName(host: string): boolean {
  const name = canonicalHost(host);
  return BLOCKED_NAMES.has(name) || BLOCKED_SUFFIXES.some((suffix) => name.endsWith(suffix));
}

export type RefusalReason = Exclude<AddressClass, 'public'> | 'blocked name' | 'not https' | 'unsupported scheme';

/** A refused destination. The message names the host and class for the server log only. */
export class AddressNotAllowedError extends Error {
  readonly code = 'ERR_OUTBOUND_ADDRESS_NOT_ALLOWED';
  readonly host: string;
  readonly addressClass: RefusalReason;
  constructor(host: string, addressClass: RefusalReason) {
    super(`outbound connection to ${host} refused: ${addressClass}`);
    this.name = 'AddressNotAllowedError';
    this.host = host;
    this.addressClass = addressClass;
  }
}

/** Name resolution: every address of a name (replaceable in tests). */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses)));
  });

/** Classes an allow-list range covers only when it names them on purpose (allowedBy). */
const EXPLICIT_ONLY: ReadonlySet<AddressClass> = new Set(['loopback', 'metadata', 'this network']);

/**
 * The operator's allow-list (CPS_OUTBOUND_ALLOW): address ranges and host names the service may
 * reach over http or https in production although they are not public.
 *
 * Loopback, "this network" and metadata addresses are covered only by an entry that names them: a
 * range wholly inside 127.0.0.0/8 or 0.0.0.0/8 (at least /8 and starting there), ::1/128, or the
 * metadata address itself; a wide range such as 10.0.0.0/8 or 0.0.0.0/0 never covers them, and
 * neither does a listed name (its addresses must be listed too).
 */
export class OutboundAllowList {
  readonly entries: readonly string[];
  readonly #ranges: [ipaddr.IPv4 | ipaddr.IPv6, number][] = [];
  readonly #names = new Set<string>();

  /** Throws Error naming the first entry that is neither an address, a CIDR range nor a host name. */
  constructor(entries: readonly string[]) {
    this.entries = entries;
    for (const entry of entries) {
      // An IPv6 address may come bracketed as in a URL, alone or with its prefix: [fd12::1], [fd12::]/16.
      const text = entry.replace(/^\[([^\]]*)\](\/\d+)?$/, '$1$2');
      if (entry.includes('/') || ipaddr.isValid(text)) {
        try {
          const [address, prefix] = text.includes('/') ? ipaddr.parseCIDR(text) : [ipaddr.parse(text), -1];
          const bits = address.kind() === 'ipv4' ? 32 : 128;
          this.#ranges.push([unmapped(address), prefix === -1 ? bits : prefix]);
        } catch {
          throw new Error(`"${entry}" is not an address or CIDR range`);
        }
        continue;
      }
      const name = canonicalHost(entry);
      if (!/^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/.test(name)) {
        throw new Error(`"${entry}" is not an address, CIDR range or host name`);
      }
      this.#names.add(name);
    }
  }

  get empty(): boolean {
    return this.entries.length === 0;
  }

  /** Whether a host name (not an IP literal) is listed. */
  namesHost(host: string): boolean {
    return this.#names.has(canonicalHost(host));
  }

  /** Whether an address of the given class lies in a listed range that may cover it. */
  covers(text: string, addressClass: AddressClass): boolean {
    let address: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      address = unmapped(ipaddr.parse(canonicalHost(text).replace(/%.*$/, '')));
    } catch {
      return false;
    }
    return this.#ranges.some(([network, prefix]) => {
      if (network.kind() !== address.kind() || !address.match(network, prefix)) return false;
      if (!EXPLICIT_ONLY.has(addressClass)) return true;
      if (addressClass === 'metadata' || network.kind() === 'ipv6') return prefix === (network.kind() === 'ipv4' ? 32 : 128);
      return prefix >= 8 && classifyAddress(network.toString()) === addressClass;
    });
  }
}

/** An IPv4-mapped IPv6 address as the IPv4 address it reaches. */
function unmapped(address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() ? (address as ipaddr.IPv6).toIPv4Address() : address;
}

export interface PolicyOptions {
  /** Production: https to public addresses, and what `allow` lists. Development: anything. */
  publicOnly: boolean;
  /** CPS_OUTBOUND_ALLOW's entries (production only). */
  allow?: readonly string[];
  resolve?: Resolver;
}

type Scheme = 'http:' | 'https:';

export class OutboundPolicy {
  readonly publicOnly: boolean;
  readonly allow: OutboundAllowList;
  readonly resolve: Resolver;
  /** The socket's DNS lookup for https: refuses a name when any of its addresses is not allowed. */
  readonly lookup: LookupFunction;
  /** The same for plain http, which production allows only to listed destinations. */
  readonly httpLookup: LookupFunction;

  constructor(options: PolicyOptions) {
    this.publicOnly = options.publicOnly;
    this.allow = new OutboundAllowList(options.allow ?? []);
    this.resolve = options.resolve ?? systemResolver;
    this.lookup = this.#lookupFor('https:');
    this.httpLookup = this.#lookupFor('http:');
  }

  #lookupFor(scheme: Scheme): LookupFunction {
    return ((hostname: string, lookupOptions: { all?: boolean }, callback: (...args: unknown[]) => void) => {
      this.resolveAllowed(hostname, scheme).then(
        (addresses) => {
          if (lookupOptions.all) callback(null, addresses);
          else callback(null, addresses[0]!.address, addresses[0]!.family);
        },
        (error: unknown) => callback(error),
      );
    }) as LookupFunction;
  }

  /** Whether one address may be reached over the scheme; the reason when not. */
  #refusal(address: string, addressClass: AddressClass, scheme: Scheme, listedName: boolean): RefusalReason | null {
    if (this.allow.covers(address, addressClass)) return null;
    if (listedName && !EXPLICIT_ONLY.has(addressClass)) return null;
    if (addressClass !== 'public') return addressClass;
    return scheme === 'https:' ? null : 'not https';
  }

  /**
   * What may be known of a URL without DNS: the scheme (https in production, unless the host may be
   * listed) and a host that is an IP literal or a blocked name. Throws AddressNotAllowedError; used
   * before every request.
   */
  assertStatic(url: URL): void {
    if (!this.publicOnly) return;
    const host = url.hostname;
    const scheme = url.protocol as Scheme;
    const literal = classifyLiteral(host);
    if (literal !== null) {
      const refused = this.#refusal(host, literal, scheme, false);
      if (refused !== null) throw new AddressNotAllowedError(host, refused);
      return;
    }
    if (this.allow.namesHost(host)) return;
    if (isBlockedName(host)) throw new AddressNotAllowedError(host, 'blocked name');
    // An unlisted name over http may still resolve into a listed range: its lookup decides.
    if (scheme !== 'https:' && this.allow.empty) throw new AddressNotAllowedError(host, 'not https');
  }

  /**
   * The registration check: the static rules, then the name's current addresses. A name that does
   * not resolve now passes (every connection checks again).
   */
  async check(url: URL): Promise<AddressNotAllowedError | null> {
    if (!this.publicOnly) return null;
    try {
      this.assertStatic(url);
      if (classifyLiteral(url.hostname) === null) await this.resolveAllowed(url.hostname, url.protocol as Scheme);
    } catch (error) {
      if (error instanceof AddressNotAllowedError) return error;
    }
    return null;
  }

  /** The addresses to connect to over the scheme: all of them allowed, or AddressNotAllowedError. */
  async resolveAllowed(hostname: string, scheme: Scheme = 'https:'): Promise<LookupAddress[]> {
    const literal = classifyLiteral(hostname);
    const listedName = literal === null && this.allow.namesHost(hostname);
    if (this.publicOnly) {
      if (literal !== null) {
        const refused = this.#refusal(hostname, literal, scheme, false);
        if (refused !== null) throw new AddressNotAllowedError(hostname, refused);
      } else if (!listedName && isBlockedName(hostname)) throw new AddressNotAllowedError(hostname, 'blocked name');
    }
    const addresses = await this.resolve(hostname);
    if (addresses.length === 0) throw Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' });
    if (this.publicOnly) {
      for (const { address } of addresses) {
        const refused = this.#refusal(address, classifyAddress(address), scheme, listedName);
        if (refused !== null) throw new AddressNotAllowedError(hostname, refused);
      }
    }
    return addresses;
  }
}
