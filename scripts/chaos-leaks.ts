import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

/**
 * The chaos drill's scan of every process's log for personal data and credentials written in
 * full (the logger must mask or drop them: shared/logger.ts). A line is read as written and with
 * its percent-escapes decoded (a path as the client sent it), ids (UUIDs) left out.
 */

/** Digits of a number as people write it may be split by spaces, dots, dashes or brackets. */
const SEP = String.raw`[\s.\-()]{0,2}`;
const PATTERNS: { kind: string; pattern: RegExp; valid?: (match: string) => boolean }[] = [
  // 243 + 9 digits, also +243… and 00243…
  { kind: 'phone number', pattern: new RegExp(String.raw`(?<![\w+])(?:\+|00)?243(?:${SEP}\d){9}(?!\w)`, 'g') },
  // the national form: 0 (or "(0)"), an 8x or 9x prefix, 7 digits; a bare "0." is a decimal, not a number
  {
    kind: 'phone number',
    pattern: new RegExp(String.raw`(?<![\w.])(?:\(0\)[\s.\-]?|0[\s\-]?)[89](?:${SEP}\d){8}(?!\w)`, 'g'),
  },
  // 13 to 19 digits starting as a card network's numbers do (22-27, 3-6: not a timestamp, nor a 20xx date), or grouped 4-4-4-4
  { kind: 'card number', pattern: /(?<!\w)(?:2[2-7]\d{11,17}|[3-6]\d{12,18})(?!\w)/g, valid: luhn },
  { kind: 'card number', pattern: /(?<![\w-])\d{4}([ -])\d{4}\1\d{4}\1\d{4}(?![\w-])/g, valid: luhn },
  { kind: 'API key', pattern: /\bsvc_(?:test|live)_[A-Za-z0-9_-]{8,}/g },
  { kind: 'secret', pattern: /\b(?:whsec|sk)_[A-Za-z0-9_+/=-]{8,}/g },
  { kind: 'signature', pattern: /signature["']?\s*[:=]\s*["']?(?:t=\d+,\s*)?(?:v1=)?[0-9a-f]{64}(?![0-9a-f])/gi },
];
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const HEX64 = /(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])/gi;

function luhn(match: string): boolean {
  const digits = match.replace(/\D/g, '');
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return sum % 10 === 0;
}

function percentDecoded(line: string): string {
  return line.replace(/(?:%[0-9A-Fa-f]{2})+/g, (s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  });
}

/** What the drill itself knows to be secret: its credentials, and every X-Signature it sent. */
export interface KnownSecrets {
  values: string[];
  signatures: Set<string>;
}

/** The line as read for the scan, and the sensitive values written in full in it. */
export function leaksIn(
  line: string,
  known: KnownSecrets,
): { readable: string; found: { kind: string; value: string }[] } {
  const readable = percentDecoded(line).replace(UUID, '<uuid>');
  const found: { kind: string; value: string }[] = [];
  for (const { kind, pattern, valid } of PATTERNS) {
    for (const [value] of readable.matchAll(pattern)) if (!valid || valid(value)) found.push({ kind, value });
  }
  for (const value of known.values) if (readable.includes(value)) found.push({ kind: 'credential', value });
  for (const [value] of readable.matchAll(HEX64))
    if (known.signatures.has(value.toLowerCase())) found.push({ kind: 'X-Signature sent', value });
  return { readable, found: found.filter((f, i) => found.findIndex((g) => g.value === f.value) === i) };
}

/** A value shown only by its first 4 and last 2 characters. */
function masked(value: string): string {
  return value.length <= 8
    ? '*'.repeat(value.length)
    : `${value.slice(0, 4)}${'*'.repeat(value.length - 6)}${value.slice(-2)}`;
}

export interface LeakScan {
  lines: number;
  leaks: number;
  /** the first offending lines, with what leaked masked */
  examples: string[];
}

export async function scanLogForLeaks(file: string, known: KnownSecrets, maxExamples = 5): Promise<LeakScan> {
  const scan: LeakScan = { lines: 0, leaks: 0, examples: [] };
  for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
    scan.lines++;
    const { readable, found } = leaksIn(line, known);
    if (found.length === 0) continue;
    scan.leaks += found.length;
    if (scan.examples.length < maxExamples) {
      const shown = found.reduce((text, { value }) => text.split(value).join(masked(value)), readable);
      scan.examples.push(`${[...new Set(found.map((f) => f.kind))].join(', ')}: ${shown.slice(0, 300)}`);
    }
  }
  return scan;
}

/** scanLogForLeaks over several logs (one per node of a topology), added up. */
export async function scanLogsForLeaks(files: string[], known: KnownSecrets, maxExamples = 5): Promise<LeakScan> {
  const total: LeakScan = { lines: 0, leaks: 0, examples: [] };
  for (const file of files) {
    const scan = await scanLogForLeaks(file, known, maxExamples - total.examples.length);
    total.lines += scan.lines;
    total.leaks += scan.leaks;
    total.examples.push(...scan.examples);
  }
  return total;
}
