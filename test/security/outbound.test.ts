import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { describe, it } from 'node:test';
import {
  AddressNotAllowedError,
  OutboundAllowList,
  OutboundPolicy,
  canonicalHost,
  classifyAddress,
  classifyLiteral,
  isBlockedName,
  isPublicAddress,
  systemResolver,
  type AddressClass,
} from '../../src/security/outbound.ts';
import { stubResolver } from './support.ts';

/** [spelling, class]: every address form the policy must read, each with the class it must get. */
const ADDRESSES: Array<[string, AddressClass]> = [
  // IPv4 loopback in every spelling inet_aton and ipaddr.js read.
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['2130706433', 'loopback'],
  ['0177.0.0.1', 'loopback'],
  ['0x7f.1', 'loopback'],
  ['0x7F.0.0.1', 'loopback'],
  ['0x7f000001', 'loopback'],
  ['127.1', 'loopback'],
  ['127.0.1', 'loopback'],
  // RFC 1918.
  ['10.0.0.1', 'private'],
  ['012.0.0.1', 'private'],
  ['167772161', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.1.1', 'private'],
  ['0xc0a80101', 'private'],
  // Link-local and metadata.
  ['169.254.1.1', 'link-local'],
  ['169.254.169.254', 'metadata'],
  ['0xa9fea9fe', 'metadata'],
  ['2852039166', 'metadata'],
  ['169.254.170.2', 'metadata'],
  ['100.100.100.200', 'metadata'],
  ['168.63.129.16', 'metadata'],
  ['fd00:ec2::254', 'metadata'],
  ['FD00:EC2:0:0:0:0:0:254', 'metadata'],
  // CGNAT, multicast, broadcast, "this network".
  ['100.64.0.1', 'carrier-grade NAT'],
  ['100.127.255.255', 'carrier-grade NAT'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['255.255.255.255', 'broadcast'],
  ['0.0.0.0', 'this network'],
  ['0.1.2.3', 'this network'],
  ['0', 'this network'],
  // Reserved, benchmarking and documentation ranges.
  ['192.0.0.1', 'reserved'],
  ['192.0.0.192', 'reserved'],
  ['192.0.2.1', 'reserved'],
  ['198.51.100.1', 'reserved'],
  ['203.0.113.1', 'reserved'],
  ['198.18.0.1', 'reserved'],
  ['198.19.255.255', 'reserved'],
  ['192.88.99.1', 'reserved'],
  ['240.0.0.1', 'reserved'],
  // IPv6 loopback, unspecified, link-local, ULA, site-local, multicast.
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['[::1]', 'loopback'],
  ['::', 'this network'],
  ['fe80::1', 'link-local'],
  ['FE80::1%eth0', 'link-local'],
  ['febf::1', 'link-local'],
  ['fc00::1', 'unique-local'],
  ['fd12:3456:789a::1', 'unique-local'],
  ['fec0::1', 'site-local'],
  ['ff02::1', 'multicast'],
  ['FF05::2', 'multicast'],
  // IPv4-mapped, dotted and hex, compressed or not, upper case.
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['0:0:0:0:0:FFFF:7F00:0001', 'loopback'],
  ['[::FFFF:127.0.0.1]', 'loopback'],
  ['::ffff:10.0.0.1', 'private'],
  ['::ffff:a9fe:a9fe', 'metadata'],
  ['::ffff:169.254.169.254', 'metadata'],
  ['::ffff:0:7f00:1', 'loopback'],
  // IPv4-compatible (deprecated): named by what it embeds, and never public.
  ['::127.0.0.1', 'loopback'],
  ['::7f00:1', 'loopback'],
  ['::a00:1', 'private'],
  ['::8.8.8.8', 'reserved'],
  // NAT64: the well-known prefix reaches the embedded address; local-use is never public.
  ['64:ff9b::127.0.0.1', 'loopback'],
  ['64:ff9b::7f00:1', 'loopback'],
  ['64:FF9B:0:0:0:0:A9FE:A9FE', 'metadata'],
  ['64:ff9b::a00:1', 'private'],
  ['64:ff9b:1::808:808', 'reserved'],
  ['64:ff9b:1:abcd::1', 'reserved'],
  // 6to4: the IPv4 address in bits 16-48.
  ['2002:7f00:1::', 'loopback'],
  ['2002:7f00:0001:0:0:0:0:1', 'loopback'],
  ['2002:a9fe:a9fe::1', 'metadata'],
  ['2002:c0a8:101::1', 'private'],
  // Teredo: server in bits 32-64, client inverted in the last 32 bits.
  ['2001:0:7f00:1::f7f7:f7f7', 'loopback'],
  ['2001:0:808:808::80ff:fffe', 'loopback'],
  ['2001:0:808:808::5601:5601', 'metadata'],
  ['2001:0:a00:1::fefe:fefe', 'private'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'],
  // Other special and unassigned IPv6 space.
  ['2001:db8::1', 'reserved'],
  ['2001:2::1', 'reserved'],
  ['100::1', 'reserved'],
  ['3fff::1', 'reserved'],
  ['4000::1', 'reserved'],
  ['5f00::1', 'reserved'],
  // Public.
  ['8.8.8.8', 'public'],
  ['93.184.215.14', 'public'],
  ['1.1.1.1', 'public'],
  ['0x08080808', 'public'],
  ['134744072', 'public'],
  ['100.63.255.255', 'public'],
  ['100.128.0.0', 'public'],
  ['172.32.0.1', 'public'],
  ['2606:4700:4700::1111', 'public'],
  ['2001:4860:4860::8888', 'public'],
  ['[2606:4700:4700::1111]', 'public'],
  ['::ffff:8.8.8.8', 'public'],
  ['64:ff9b::808:808', 'public'],
  ['2002:808:808::1', 'public'],
  ['2001:0:808:808::fefe:fefe', 'public'],
  // Not addresses: names are decided by DNS.
  ['example.com', 'not an address'],
  ['', 'not an address'],
  ['1.2.3.4.5', 'not an address'],
  ['08.1.1.1', 'not an address'],
];

describe('outbound address classifier', () => {
  for (const [spelling, expected] of ADDRESSES) {
    it(`${spelling || '(empty)'} is ${expected}`, () => {
      assert.equal(classifyAddress(spelling), expected);
    });
  }

  it('reads hosts the way URLs and the resolver do: trailing dots, full-width digits, percent-encoding', () => {
    assert.equal(canonicalHost('LOCALHOST.'), 'localhost');
    assert.equal(canonicalHost('127.0.0.1.'), '127.0.0.1');
    assert.equal(canonicalHost('１２７.０.０.１'), '127.0.0.1');
    assert.equal(canonicalHost('[::FFFF:7F00:1]'), '::ffff:7f00:1');
    assert.equal(classifyLiteral('127.0.0.1.'), 'loopback');
    assert.equal(classifyLiteral('0x7f.1.'), 'loopback');
    assert.equal(classifyLiteral('１２７.０.０.１'), 'loopback');
    assert.equal(classifyLiteral('%31%32%37.0.0.1'), 'loopback');
    assert.equal(classifyLiteral('::ffff:127.0.0.1'), 'loopback');
    assert.equal(classifyLiteral('api.example.com'), null);
  });

  it('the WHATWG URL parser hands the policy the normalised IPv4 form', () => {
    for (const spelling of ['2130706433', '0177.0.0.1', '0x7f.1', '127.1', '127.0.0.1.', '0x7f000001']) {
      const url = new URL(`https://${spelling}/hook`);
      assert.equal(url.hostname, '127.0.0.1', spelling);
      assert.equal(classifyLiteral(url.hostname), 'loopback');
    }
    assert.equal(new URL('https://[0:0:0:0:0:FFFF:7F00:1]/').hostname, '[::ffff:7f00:1]');
    assert.equal(classifyLiteral(new URL('https://[0:0:0:0:0:FFFF:7F00:1]/').hostname), 'loopback');
  });

  it('refuses the host itself and metadata names whatever they resolve to', () => {
    for (const name of [
      'localhost',
      'LOCALHOST.',
      'api.localhost',
      'metadata.google.internal',
      'METADATA.GOOGLE.INTERNAL.',
      'metadata.goog',
      'metadata',
      'instance-data',
      'ip-10-0-0-1.ec2.internal',
    ]) {
      assert.equal(isBlockedName(name), true, name);
    }
    for (const name of ['example.com', 'localhost.example.com', 'internal.example.com', 'metadata.example.com']) {
      assert.equal(isBlockedName(name), false, name);
    }
  });
});

/** The socket lookup, called as net.connect calls it; resolves with its answer or its error. */
function lookup(policy: OutboundPolicy, host: string, all: boolean): Promise<{ error?: Error; answer?: unknown }> {
  return new Promise((resolve) => {
    (policy.lookup as (h: string, o: { all: boolean }, cb: (...args: unknown[]) => void) => void)(host, { all }, (error, ...answer) => {
      resolve(error ? { error: error as Error } : { answer: all ? answer[0] : answer });
    });
  });
}

describe('outbound policy (production)', () => {
  it('registration: literals and blocked names refused without DNS, names by all their current answers', async () => {
    const dns = stubResolver({
      'public.test': ['93.184.215.14', '2606:4700:4700::1111'],
      'mixed.test': ['93.184.215.14', '10.0.0.5'],
      'mapped.test': ['::ffff:169.254.169.254'],
      'nat64.test': ['64:ff9b::7f00:1'],
    });
    const policy = new OutboundPolicy({ publicOnly: true, resolve: dns.resolve });
    const refused = async (url: string) => (await policy.check(new URL(url)))?.addressClass ?? null;

    assert.equal(await refused('https://public.test/hook'), null);
    assert.equal(await refused('https://unknown.test/hook'), null, 'a name that does not resolve yet is checked at connect time');
    assert.equal(await refused('https://mixed.test/hook'), 'private', 'one private answer refuses the name');
    assert.equal(await refused('https://mapped.test/hook'), 'metadata');
    assert.equal(await refused('https://nat64.test/hook'), 'loopback');
    assert.equal(await refused('http://public.test/hook'), 'not https');
    const asked = dns.asked.length;
    assert.equal(await refused('https://2130706433/hook'), 'loopback');
    assert.equal(await refused('https://0x7f.1:8443/hook'), 'loopback');
    assert.equal(await refused('https://[::ffff:7f00:1]/hook'), 'loopback');
    assert.equal(await refused('https://[fd00:ec2::254]/'), 'metadata');
    assert.equal(await refused('https://169.254.169.254/latest/meta-data'), 'metadata');
    assert.equal(await refused('https://metadata.google.internal./computeMetadata/v1/'), 'blocked name');
    assert.equal(await refused('https://localhost./'), 'blocked name');
    assert.equal(await refused('https://8.8.8.8/'), null);
    assert.equal(dns.asked.length, asked, 'literals and blocked names never reach DNS');
  });

  it('connect time: the lookup refuses any non-public answer, so the address checked is the address dialled', async () => {
    const dns = stubResolver({ 'rebind.test': ['93.184.215.14'] });
    const policy = new OutboundPolicy({ publicOnly: true, resolve: dns.resolve });
    assert.equal(await policy.check(new URL('https://rebind.test/hook')), null, 'public at registration');

    // Only the lookup's answer is inspected here: no socket is opened.
    assert.deepEqual((await lookup(policy, 'rebind.test', true)).answer, [{ address: '93.184.215.14', family: 4 }]);
    assert.deepEqual((await lookup(policy, 'rebind.test', false)).answer, ['93.184.215.14', 4]);
    for (const answers of [
      ['127.0.0.1'],
      ['10.0.0.5'],
      ['169.254.169.254'],
      ['::1'],
      ['::ffff:7f00:1'],
      ['2002:a9fe:a9fe::'],
      ['93.184.215.14', 'fe80::1'],
    ]) {
      dns.answer('rebind.test', answers);
      const { error } = await lookup(policy, 'rebind.test', true);
      assert.ok(error instanceof AddressNotAllowedError, answers.join(','));
      assert.equal((error as AddressNotAllowedError).code, 'ERR_OUTBOUND_ADDRESS_NOT_ALLOWED');
    }
  });

  it('connect time: a raw host string is classified as a literal, else checked by its answers', async () => {
    const dns = stubResolver({ 'sneaky.test': ['::ffff:127.0.0.1'], '127.0.0.1.nip.test': ['127.0.0.1'] });
    const policy = new OutboundPolicy({ publicOnly: true, resolve: dns.resolve });
    for (const raw of ['0x7f.1', '0177.0.0.1', '2130706433', '127.1', '127.0.0.1.', 'LOCALHOST', 'metadata.google.internal.']) {
      assert.ok((await lookup(policy, raw, true)).error instanceof AddressNotAllowedError, raw);
    }
    assert.deepEqual(dns.asked, [], 'refused before any DNS question');
    for (const raw of ['sneaky.test', '127.0.0.1.nip.test']) {
      assert.ok((await lookup(policy, raw, false)).error instanceof AddressNotAllowedError, raw);
    }
    assert.deepEqual(dns.asked, ['sneaky.test', '127.0.0.1.nip.test']);
    const missing = await lookup(policy, 'nowhere.test', true);
    assert.equal((missing.error as { code?: string }).code, 'ENOTFOUND');
  });

  it('assertStatic refuses plain http, other schemes and literals up front', () => {
    const policy = new OutboundPolicy({ publicOnly: true, resolve: stubResolver().resolve });
    assert.throws(() => policy.assertStatic(new URL('http://example.test/')), AddressNotAllowedError);
    assert.throws(() => policy.assertStatic(new URL('https://[::1]/')), AddressNotAllowedError);
    assert.doesNotThrow(() => policy.assertStatic(new URL('https://example.test/')));
  });
});

describe('outbound policy (production) with the operator allow-list', () => {
  const httpLookup = (policy: OutboundPolicy, host: string): Promise<{ error?: Error; answer?: unknown }> =>
    new Promise((resolve) => {
      (policy.httpLookup as (h: string, o: { all: boolean }, cb: (...args: unknown[]) => void) => void)(host, { all: true }, (error, answer) =>
        resolve(error ? { error: error as Error } : { answer }),
      );
    });

  it('allows listed ranges and names over http and https, and nothing else that is not public', async () => {
    const dns = stubResolver({
      'receiver.clinic.test': ['192.168.1.20'],
      'inrange.test': ['10.8.0.7'],
      'outofrange.test': ['10.9.0.7'],
      'public.test': ['93.184.215.14'],
      'ehr.corp.internal': ['172.16.4.2'],
      'loopy.test': ['127.0.0.1'],
    });
    const policy = new OutboundPolicy({
      publicOnly: true,
      allow: ['192.168.1.0/24', '10.8.0.0/16', 'fd12:3456::/32', 'loopy.test', 'ehr.corp.internal'],
      resolve: dns.resolve,
    });
    const refused = async (url: string) => (await policy.check(new URL(url)))?.addressClass ?? null;

    assert.equal(await refused('http://192.168.1.20:8080/hook'), null, 'a literal in a listed range, over http');
    assert.equal(await refused('https://192.168.1.20/hook'), null);
    assert.equal(await refused('http://[fd12:3456::9]/hook'), null);
    assert.equal(await refused('http://[::ffff:192.168.1.9]/hook'), null, 'an IPv4-mapped spelling of a listed address');
    assert.equal(await refused('http://receiver.clinic.test/hook'), null, 'an unlisted name whose answers are all listed');
    assert.equal(await refused('http://inrange.test/hook'), null);
    assert.equal(await refused('https://ehr.corp.internal/hook'), null, 'a listed name lifts the blocked suffix');
    assert.equal(await refused('http://192.168.2.1/hook'), 'private', 'outside every range');
    assert.equal(await refused('http://outofrange.test/hook'), 'private');
    assert.equal(await refused('http://public.test/hook'), 'not https', 'plain http to an unlisted public address');
    assert.equal(await refused('https://public.test/hook'), null);
    assert.equal(await refused('https://loopy.test/hook'), 'loopback', 'a listed name does not cover loopback answers');
    assert.equal(await refused('https://localhost/hook'), 'blocked name');

    assert.deepEqual((await httpLookup(policy, 'receiver.clinic.test')).answer, [{ address: '192.168.1.20', family: 4 }]);
    assert.ok((await httpLookup(policy, 'public.test')).error instanceof AddressNotAllowedError, 'http lookup needs a listed destination');
    assert.doesNotThrow(() => policy.assertStatic(new URL('http://unlisted.test/')), 'an unlisted name over http is for its lookup to decide');
    assert.throws(() => policy.assertStatic(new URL('http://192.168.2.1/')), AddressNotAllowedError);
  });

  it('keeps loopback, "this network" and metadata refused unless an entry names them', async () => {
    const wide = new OutboundPolicy({
      publicOnly: true,
      allow: ['0.0.0.0/0', '::/0', '169.254.0.0/16', '127.0.0.0/4'],
      resolve: stubResolver().resolve,
    });
    for (const url of [
      'https://127.0.0.1/',
      'https://0.0.0.0/',
      'https://169.254.169.254/latest',
      'https://[::1]/',
      'https://[fd00:ec2::254]/',
      'https://100.100.100.200/',
    ]) {
      assert.notEqual(await wide.check(new URL(url)), null, url);
    }
    assert.equal(await wide.check(new URL('http://10.1.2.3/')), null, 'a wide range covers private addresses');
    assert.equal(await wide.check(new URL('http://169.254.10.1/')), null, 'and link-local ones');

    const named = new OutboundPolicy({ publicOnly: true, allow: ['127.0.0.1', '::1', '169.254.169.254'], resolve: stubResolver().resolve });
    assert.equal(await named.check(new URL('http://127.0.0.1:8080/')), null);
    assert.equal(await named.check(new URL('http://[::1]:8080/')), null);
    assert.equal(await named.check(new URL('http://169.254.169.254/')), null);
    assert.notEqual(await named.check(new URL('http://127.0.0.2/')), null, 'only what is named');
  });

  it('rejects entries that are neither addresses, ranges nor names', () => {
    for (const entry of ['10.0.0.0/33', '300.1.1.1/8', 'http://x.test', 'a b', '-x.test']) {
      assert.throws(() => new OutboundAllowList([entry]), new RegExp(entry.replace(/[./]/g, '\\$&').replace('-', '\\-')), entry);
    }
  });
});

describe('outbound policy (development)', () => {
  it('allows loopback, private addresses and plain http, so local receivers work', async () => {
    const dns = stubResolver({ 'dev.test': ['127.0.0.1'] });
    const policy = new OutboundPolicy({ publicOnly: false, resolve: dns.resolve });
    assert.equal(await policy.check(new URL('http://127.0.0.1:9/hook')), null);
    assert.equal(await policy.check(new URL('http://localhost/hook')), null);
    assert.doesNotThrow(() => policy.assertStatic(new URL('http://10.0.0.1/')));
    assert.deepEqual((await lookup(policy, 'dev.test', true)).answer, [{ address: '127.0.0.1', family: 4 } satisfies LookupAddress]);
  });
});

describe('outbound address rules, one table each', () => {
  it('classifies the IPv4 address a translated (rfc6145) spelling embeds, and refuses text with a colon that is no address', () => {
    const cases: Array<[string, AddressClass]> = [
      ['::ffff:0:7f00:1', 'loopback'],
      ['::ffff:0:808:808', 'public'],
      ['::ffff:0:a00:1', 'private'],
      ['not:an:address', 'not an address'],
      ['[::1', 'not an address'],
      ['1[.2.3.4]', 'not an address'],
      ['[1.2.3.]4', 'not an address'],
      ['::1%a\nb', 'not an address'],
      ['::ffff:0x7f.0.0.1', 'not an address'],
      ['::ffff:0177.0.0.1', 'not an address'],
    ];
    for (const [spelling, expected] of cases) assert.equal(classifyAddress(spelling), expected, spelling);
  });

  it('says an address is public only for the public class', () => {
    const cases: Array<[string, boolean]> = [
      ['8.8.8.8', true],
      ['2606:4700::1111', true],
      ['127.0.0.1', false],
      ['10.0.0.1', false],
      ['example.com', false],
    ];
    for (const [address, isPublic] of cases) assert.equal(isPublicAddress(address), isPublic, address);
  });

  it('writes a host in its canonical form: lower case, IPv6 shortened and unbracketed, other text as it is', () => {
    const cases: Array<[string, string]> = [
      ['0:0:0:0:0:0:0:1', '::1'],
      ['[0:0::1]', '::1'],
      ['FE80::1%ETH0', 'fe80::1%eth0'],
      ['[FE80::1%ETH0]', 'fe80::1%eth0'],
      ['Api.Example.COM.', 'api.example.com'],
      ['x[1]', 'x[1]'],
      ['[1]x', '[1]x'],
    ];
    for (const [host, canonical] of cases) assert.equal(canonicalHost(host), canonical, host);
    for (const host of ['1[.2.3.4]', '[1.2.3.]4', 'x[::1]']) assert.equal(classifyLiteral(host), null, host);
  });

  it('names the host and the reason in a refusal, for the server log', () => {
    const error = new AddressNotAllowedError('10.0.0.1', 'private');
    assert.equal(error.message, 'outbound connection to 10.0.0.1 refused: private');
    assert.equal(error.name, 'AddressNotAllowedError');
    assert.equal(error.code, 'ERR_OUTBOUND_ADDRESS_NOT_ALLOWED');
    assert.equal(error.host, '10.0.0.1');
    assert.equal(error.addressClass, 'private');
  });

  it('resolves with the system resolver every address of a name, as a list (localhost, from the hosts file)', async () => {
    const addresses = await systemResolver('localhost');
    assert.ok(Array.isArray(addresses) && addresses.length > 0);
    for (const { address } of addresses) assert.equal(classifyAddress(address), 'loopback', address);
  });

  it('accepts allow-list names of one-letter labels, and refuses labels that start or end with a hyphen or are empty', () => {
    for (const entry of ['x', 'a.b.c', 'a-b.c_d', 'x1.test']) assert.doesNotThrow(() => new OutboundAllowList([entry]), entry);
    for (const entry of ['a-', 'a-.test', 'a..b', 'a.-b', '.a', '1[.2.3.4]', '[1.2.3.]4']) {
      assert.throws(() => new OutboundAllowList([entry]), /is not an address, CIDR range or host name/, entry);
    }
    for (const entry of ['1[.2.3.4/8]', '[1.2.3.]4/8'])
      assert.throws(() => new OutboundAllowList([entry]), /is not an address or CIDR range$/, entry);
  });

  it('reads an allow-list address in brackets as the address', () => {
    const list = new OutboundAllowList(['[::1]', '[fd12::5]']);
    assert.equal(list.covers('::1', 'loopback'), true);
    assert.equal(list.covers('fd12::5', 'unique-local'), true);
    assert.equal(list.covers('fd12::6', 'unique-local'), false);
  });

  it('reads a bracketed IPv6 range with its prefix outside the brackets as the range', () => {
    const list = new OutboundAllowList(['[fd12::]/16']);
    assert.equal(list.covers('fd12:3456::1', 'unique-local'), true);
    assert.equal(list.covers('fd13::1', 'unique-local'), false);
    assert.throws(() => new OutboundAllowList(['[fd12::]/200']), /is not an address or CIDR range$/);
  });

  it('covers an address with a range only where the range may cover its class', () => {
    const cases: Array<[string[], string, AddressClass, boolean]> = [
      [['10.0.0.0/8'], '10.1.2.3', 'private', true],
      [['10.0.0.0/8'], '11.1.2.3', 'public', false],
      [['fe80::/10'], 'fe80::1%eth0', 'link-local', true],
      [['fe80::/10'], 'FE80::1%ETH0', 'link-local', true],
      [['10.0.0.0/8'], 'not-an-address', 'not an address', false],
      [['10.0.0.0/8'], '::ffff:10.0.0.1', 'private', true],
      [['169.254.169.254'], '169.254.169.254', 'metadata', true],
      [['169.254.169.254/32'], '169.254.169.254', 'metadata', true],
      [['169.254.169.254/31'], '169.254.169.254', 'metadata', false],
      [['169.254.0.0/16'], '169.254.169.254', 'metadata', false],
      [['::1/128'], '::1', 'loopback', true],
      [['::1'], '::1', 'loopback', true],
      [['::0/127'], '::1', 'loopback', false],
      [['::/0'], '::1', 'loopback', false],
      [['::1/64'], '::1', 'loopback', false],
      [['10.0.0.0/8'], '10.0.0.1%eth0', 'private', true],
      [['fd00:ec2::254/128'], 'fd00:ec2::254', 'metadata', true],
      [['fd00:ec2::/32'], 'fd00:ec2::254', 'metadata', false],
      [['127.0.0.0/8'], '127.0.0.1', 'loopback', true],
      [['127.0.0.0/9'], '127.0.0.1', 'loopback', true],
      [['127.0.0.0/9'], '127.200.0.1', 'loopback', false],
      [['126.0.0.0/7'], '127.0.0.1', 'loopback', false],
      [['0.0.0.0/8'], '0.1.2.3', 'this network', true],
      [['0.0.0.0/0'], '0.1.2.3', 'this network', false],
      [['0.0.0.0/0'], '127.0.0.1', 'loopback', false],
      [['0.0.0.0/8'], '127.0.0.1', 'loopback', false],
      [['127.0.0.0/8'], '0.1.2.3', 'this network', false],
    ];
    for (const [entries, address, addressClass, covered] of cases) {
      assert.equal(new OutboundAllowList(entries).covers(address, addressClass), covered, `${entries} ${address}`);
    }
  });
});

describe('outbound policy, one rule per table', () => {
  it('refuses up front, without DNS, what the URL alone shows is not allowed (production)', () => {
    const dns = stubResolver();
    const policy = new OutboundPolicy({ publicOnly: true, resolve: dns.resolve });
    const cases: Array<[string, string | null]> = [
      ['https://example.test/', null],
      ['https://8.8.8.8/', null],
      ['https://localhost/', 'blocked name'],
      ['https://metadata.google.internal/', 'blocked name'],
      ['https://127.0.0.1/', 'loopback'],
      ['http://8.8.8.8/', 'not https'],
      ['http://example.test/', 'not https'],
    ];
    for (const [url, reason] of cases) {
      let refused: string | null = null;
      try {
        policy.assertStatic(new URL(url));
      } catch (error) {
        refused = (error as AddressNotAllowedError).addressClass;
      }
      assert.equal(refused, reason, url);
    }
    assert.deepEqual(dns.asked, []);
  });

  it('checks a registration: a literal without DNS, a name by its answers, and a name that does not resolve passes', async () => {
    const dns = stubResolver({ 'public.test': ['8.8.8.8'], 'private.test': ['10.0.0.1'] });
    const policy = new OutboundPolicy({ publicOnly: true, resolve: dns.resolve });
    const refused = async (url: string) => (await policy.check(new URL(url)))?.addressClass ?? null;
    assert.equal(await refused('https://8.8.8.8/'), null);
    assert.deepEqual(dns.asked, [], 'a literal is checked without DNS');
    assert.equal(await refused('https://public.test/'), null);
    assert.equal(await refused('https://private.test/'), 'private');
    assert.equal(await policy.check(new URL('https://unknown.test/')), null);
    assert.deepEqual(dns.asked, ['public.test', 'private.test', 'unknown.test']);
  });

  it('asks no DNS and refuses nothing at registration in development', async () => {
    const dns = stubResolver({ 'private.test': ['10.0.0.1'] });
    const policy = new OutboundPolicy({ publicOnly: false, resolve: dns.resolve });
    assert.equal(await policy.check(new URL('http://private.test/')), null);
    assert.deepEqual(dns.asked, []);
  });

  it('resolves a host to connect to: literals and blocked names refused before DNS in production, every answer checked', async () => {
    const dns = stubResolver({
      '8.8.8.8': ['8.8.8.8'],
      '127.0.0.1': ['127.0.0.1'],
      '10.0.0.1': ['10.0.0.1'],
      localhost: ['8.8.8.8'],
      'empty.test': [],
    });
    const production = new OutboundPolicy({ publicOnly: true, resolve: dns.resolve });
    const outcome = async (policy: OutboundPolicy, host: string, scheme?: 'http:' | 'https:') => {
      try {
        return (await policy.resolveAllowed(host, scheme)).map((a) => a.address).join(',');
      } catch (error) {
        return error instanceof AddressNotAllowedError
          ? `refused: ${error.addressClass}`
          : `failed: ${(error as { code?: string }).code} ${(error as Error).message}`;
      }
    };
    const cases: Array<[string, 'http:' | 'https:' | undefined, string]> = [
      ['8.8.8.8', undefined, '8.8.8.8'],
      ['8.8.8.8', 'http:', 'refused: not https'],
      ['127.0.0.1', undefined, 'refused: loopback'],
      ['10.0.0.1', undefined, 'refused: private'],
      ['localhost', undefined, 'refused: blocked name'],
      ['empty.test', undefined, 'failed: ENOTFOUND empty.test has no address'],
    ];
    for (const [host, scheme, expected] of cases) assert.equal(await outcome(production, host, scheme), expected, `${host} ${scheme}`);
    assert.deepEqual(dns.asked, ['8.8.8.8', 'empty.test'], 'refused literals and names never reach DNS');

    const development = new OutboundPolicy({ publicOnly: false, resolve: dns.resolve });
    assert.equal(await outcome(development, '127.0.0.1'), '127.0.0.1');
    assert.equal(await outcome(development, 'localhost', 'http:'), '8.8.8.8');
  });

  it('looks up for plain http only what the allow-list lets through, for https every public answer', async () => {
    const dns = stubResolver({ 'public.test': ['8.8.8.8'] });
    const policy = new OutboundPolicy({ publicOnly: true, resolve: dns.resolve });
    const viaLookup = (fn: OutboundPolicy['lookup']): Promise<string> =>
      new Promise((resolve) => {
        (fn as (h: string, o: { all: boolean }, cb: (...args: unknown[]) => void) => void)('public.test', { all: false }, (error, address) =>
          resolve(error ? `refused: ${(error as AddressNotAllowedError).addressClass}` : String(address)),
        );
      });
    assert.equal(await viaLookup(policy.lookup), '8.8.8.8');
    assert.equal(await viaLookup(policy.httpLookup), 'refused: not https');
  });
});
