/**
 * Text the service refuses at its edges, because it could not keep it as sent:
 * - invalid UTF-8 (a lenient decode would silently replace it with U+FFFD);
 * - U+0000 (Postgres text and jsonb cannot store it: a later write would fail);
 * - a lone UTF-16 surrogate such as the JSON escape "\ud800" (encoded to UTF-8 on its way to
 *   Postgres it silently becomes U+FFFD, so the stored value would differ from the one sent).
 */

/** Decodes UTF-8 and throws on any invalid sequence (a BOM is kept, so JSON.parse refuses it). */
export const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export type TextProblem = 'nul' | 'lone-surrogate';

export function textProblem(s: string): TextProblem | null {
  if (s.includes('\0')) return 'nul';
  if (LONE_SURROGATE.test(s)) return 'lone-surrogate';
  return null;
}

export const TEXT_PROBLEM_MESSAGE: Record<TextProblem, string> = {
  nul: 'must not contain the NUL character',
  'lone-surrogate': 'must not contain a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape)',
};

/**
 * The first string or key of a parsed JSON value that holds a refused character: its dotted path
 * ('' for the root) and the problem; null when every string is fine. Walked with an explicit
 * stack: a deeply nested body must not overflow the call stack.
 */
export function badText(root: unknown): { path: string; problem: TextProblem } | null {
  // the root's path is undefined: a key directly under it is its own path, even ''
  const stack: { value: unknown; path?: string }[] = [{ value: root }];
  while (stack.length) {
    const { value, path } = stack.pop()!;
    if (typeof value === 'string') {
      const problem = textProblem(value);
      if (problem) return { path: path ?? '', problem };
    } else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        const child = path === undefined ? k : `${path}.${k}`;
        const problem = textProblem(k);
        if (problem) return { path: child, problem };
        stack.push({ value: v, path: child });
      }
    }
  }
  return null;
}
