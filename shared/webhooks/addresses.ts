import { isIP } from 'node:net';

/**
 * Which IP addresses a live endpoint may reach (docs/decisions.md#webhooks: never loopback, private, link-local
 * or cloud metadata). Pure: the caller resolves names. IPv6 forms that embed an IPv4 address
 * (embeddedV4 below) are judged by the address they carry, in any spelling.
 */

type Range = [bytes: number[], prefixBits: number, why: string];

const V4_BLOCKED: Range[] = [
  [[0, 0, 0, 0], 8, 'this network'],
  [[10, 0, 0, 0], 8, 'private'],
  [[100, 64, 0, 0], 10, 'carrier-grade NAT'],
  [[127, 0, 0, 0], 8, 'loopback'],
  [[169, 254, 0, 0], 16, 'link-local or cloud metadata'],
  [[172, 16, 0, 0], 12, 'private'],
  [[192, 0, 0, 0], 24, 'IETF protocol assignments'],
  [[192, 0, 2, 0], 24, 'documentation'],
  [[192, 88, 99, 0], 24, '6to4 relay'],
  [[192, 168, 0, 0], 16, 'private'],
  [[198, 18, 0, 0], 15, 'benchmarking'],
  [[198, 51, 100, 0], 24, 'documentation'],
  [[203, 0, 113, 0], 24, 'documentation'],
  [[224, 0, 0, 0], 4, 'multicast'],
  [[240, 0, 0, 0], 4, 'reserved or broadcast'],
];

const V6_BLOCKED: Range[] = [
  [[0xfc], 7, 'unique local'],
  [[0xfe, 0x80], 10, 'link-local'],
  [[0xfe, 0xc0], 10, 'site-local'],
  [[0xff], 8, 'multicast'],
  [[0x20, 0x01, 0x0d, 0xb8], 32, 'documentation'],
  [[0x01, 0, 0, 0, 0, 0, 0, 0], 64, 'discard-only'],
];

function inRange(bytes: number[], [base, bits]: Range): boolean {
  for (let i = 0; i < bits; i += 8) {
    const take = Math.min(8, bits - i);
    const mask = (0xff << (8 - take)) & 0xff;
    if ((bytes[i / 8] & mask) !== ((base[i / 8] ?? 0) & mask)) return false;
  }
  return true;
}

/** 16 bytes of an IPv6 address in any textual form (with `::`, with a trailing dotted quad). */
function v6Bytes(ip: string): number[] {
  // a trailing dotted quad is two groups written in decimal: rewrite it as hex first
  const text = ip
    .toLowerCase()
    .replace(/%.*$/, '')
    .replace(
      /(\d+)\.(\d+)\.(\d+)\.(\d+)$/,
      (_m, a, b, c, d) => `${((+a << 8) | +b).toString(16)}:${((+c << 8) | +d).toString(16)}`,
    );
  const groups = (s: string) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const [head, tail] = text.includes('::') ? text.split('::').map(groups) : [groups(text), []];
  const all = [...head, ...new Array(8 - head.length - tail.length).fill(0), ...tail];
  return all.flatMap((g) => [(g >> 8) & 0xff, g & 0xff]);
}

function v4Problem(bytes: number[]): string | null {
  for (const range of V4_BLOCKED) if (inRange(bytes, range)) return range[2];
  return null;
}

/** The IPv4 address an IPv6 address stands for, when it embeds one. */
function embeddedV4(b: number[]): number[] | null {
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return b.slice(12); // ::ffff:a.b.c.d (mapped)
  if (zero(0, 8) && b[8] === 0xff && b[9] === 0xff && b[10] === 0 && b[11] === 0) return b.slice(12); // ::ffff:0:a.b.c.d (translated, RFC 2765)
  if (zero(0, 12)) return b.slice(12); // ::a.b.c.d (compatible), also :: and ::1 (judged below)
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b) return b.slice(12); // 64:ff9b::/96 NAT64, 64:ff9b:1::/48 local NAT64
  if (b[0] === 0x20 && b[1] === 0x02) return b.slice(2, 6); // 2002::/16 6to4
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0 && b[3] === 0) return b.slice(12).map((x) => x ^ 0xff); // Teredo client
  return null;
}

/** Why a live endpoint may not reach `ip`, or null when it is a public unicast address. */
export function addressProblem(ip: string): string | null {
  const family = isIP(ip.replace(/%.*$/, ''));
  if (family === 4) return v4Problem(ip.split('.').map(Number));
  if (family !== 6) return 'not an IP address';
  const b = v6Bytes(ip);
  if (b.every((x) => x === 0)) return 'unspecified';
  if (b.slice(0, 15).every((x) => x === 0) && b[15] === 1) return 'loopback';
  for (const range of V6_BLOCKED) if (inRange(b, range)) return range[2];
  const v4 = embeddedV4(b);
  if (v4) {
    const why = v4Problem(v4);
    if (why) return `${why} (embedded in IPv6)`;
  }
  return null;
}
