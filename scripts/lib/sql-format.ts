/**
 * A small, deterministic SQL layout for reading statements in a diff (shared/operations/statements.sql):
 * one clause per line (select, from, where, join, set, returning, on conflict, ...), each `and`/`or`
 * of a condition on its own line, one common table expression after another, a parenthesis that
 * does not fit on its line opened at the line's end and closed on a line of its own, and a
 * comma list that does not fit one item a line. It changes only whitespace outside literals:
 * `sqlTokens` of its output are those of its input (test/unit/operations-statements.test.ts).
 */

const WIDTH = 100;
/** a parenthesis whose content is longer than this is laid out over lines */
const INLINE_GROUP = 60;
const INDENT = '  ';

interface Token {
  text: string;
  /** whitespace came before it in the input */
  spaced: boolean;
}
interface Group {
  body: Item[];
  spaced: boolean;
}
type Item = Token | Group;

const isGroup = (i: Item): i is Group => 'body' in i;

/** The statement's tokens: literals and quoted names whole, each parenthesis and comma alone. */
export function sqlTokens(sql: string): Token[] {
  const re =
    /\s+|'(?:[^']|'')*'|"(?:[^"]|"")*"|[(),]|[A-Za-z_][A-Za-z0-9_$]*|\$\d+|\d+(?:\.\d+)?|::|[<>!=]=|<>|\|\||[-+*/%<>=.;:[\]]/y;
  const out: Token[] = [];
  let spaced = false;
  while (re.lastIndex < sql.length) {
    const at = re.lastIndex;
    const m = re.exec(sql);
    if (!m) throw new Error(`sql-format: no token at ${sql.slice(at, at + 20)}`);
    if (/^\s/.test(m[0])) spaced = true;
    else {
      out.push({ text: m[0], spaced });
      spaced = false;
    }
  }
  return out;
}

function tree(tokens: Token[]): Item[] {
  const stack: Item[][] = [[]];
  const spacedOpen: boolean[] = [];
  for (const t of tokens) {
    if (t.text === '(') {
      stack.push([]);
      spacedOpen.push(t.spaced);
    } else if (t.text === ')') {
      const body = stack.pop()!;
      if (stack.length === 0) throw new Error('sql-format: unbalanced )');
      stack[stack.length - 1].push({ body, spaced: spacedOpen.pop()! });
    } else stack[stack.length - 1].push(t);
  }
  if (stack.length !== 1) throw new Error('sql-format: unbalanced (');
  return stack[0];
}

const word = (i: Item | undefined) => (i && !isGroup(i) ? i.text.toLowerCase() : undefined);

/** Joins items on one line as the input spaced them (one space where it had whitespace). */
function flat(items: Item[]): string {
  let out = '';
  for (const [n, i] of items.entries()) {
    if (n > 0 && i.spaced) out += ' ';
    out += isGroup(i) ? `(${flat(i.body)})` : i.text;
  }
  return out;
}

const CLAUSES = new Set([
  'select',
  'from',
  'where',
  'join',
  'returning',
  'set',
  'limit',
  'having',
  'union',
  'values',
  'insert',
  'update',
  'delete',
]);
const JOIN_KINDS = new Set(['cross', 'left', 'right', 'inner', 'full']);

/** Whether a new clause starts at items[n] (of a list laid out over lines). */
function startsClause(items: Item[], n: number): boolean {
  const w = word(items[n]);
  if (!w || n === 0) return false;
  const before = word(items[n - 1]);
  const after = word(items[n + 1]);
  if (w === 'join') return !JOIN_KINDS.has(before ?? '');
  if (JOIN_KINDS.has(w)) return after === 'join';
  if (w === 'order' || w === 'group') return after === 'by';
  if (w === 'on') return after === 'conflict';
  if (w === 'for') return after === 'update';
  // `do update set`, `for update`, `insert into ... select`: the clause goes on
  if (w === 'update') return before !== 'do' && before !== 'for';
  if (w === 'set') return before !== 'update';
  return CLAUSES.has(w);
}

/** A common table expression begins at items[n]: after a comma, `name as [materialized] (`. */
function startsCte(items: Item[], n: number): boolean {
  if (n === 0 || word(items[n - 1]) !== ',' || word(items[n]) === undefined || word(items[n + 1]) !== 'as')
    return false;
  const body = word(items[n + 2]) === 'materialized' ? items[n + 3] : items[n + 2];
  return body !== undefined && isGroup(body);
}

/** Splits a list laid out over lines into its lines: [indent step, items]. */
function lines(items: Item[]): [number, Item[]][] {
  const out: [number, Item[]][] = [];
  let current: Item[] = [];
  let step = 0;
  for (const [n, i] of items.entries()) {
    const w = word(i);
    const breaks = current.length > 0 && (startsClause(items, n) || startsCte(items, n) || w === 'and' || w === 'or');
    if (breaks) {
      out.push([step, current]);
      current = [];
      step = w === 'and' || w === 'or' ? 1 : 0;
    }
    current.push(i);
  }
  if (current.length) out.push([step, current]);
  return out;
}

/** Splits a line's items at its top-level commas, each comma kept with the item before it. */
function commaItems(items: Item[]): Item[][] {
  const out: Item[][] = [[]];
  for (const i of items) {
    out[out.length - 1].push(i);
    if (word(i) === ',') out.push([]);
  }
  return out.filter((p) => p.length > 0);
}

/** Lays out one line's items from `indent`: groups that do not fit are opened here and closed on a line of their own. */
function layoutLine(items: Item[], indent: string, out: string[]): void {
  const text = flat(items);
  const parts = indent.length + text.length > WIDTH ? commaItems(items) : [items];
  for (const [p, part] of parts.entries()) {
    const pad = p === 0 ? indent : indent + INDENT;
    let line = '';
    for (const [n, i] of part.entries()) {
      const space = n > 0 && i.spaced ? ' ' : '';
      if (isGroup(i) && flat(i.body).length > INLINE_GROUP) {
        out.push(`${pad}${line}${space}(`);
        layoutList(i.body, pad + INDENT, out);
        // what follows the group goes on its closing line
        line = ')';
      } else line += space + (isGroup(i) ? `(${flat(i.body)})` : i.text);
    }
    out.push(pad + line);
  }
}

function layoutList(items: Item[], indent: string, out: string[]): void {
  // a list of plain items (a column list) is laid out by its commas alone
  const hasClauses = items.some((_, n) => startsClause(items, n) || startsCte(items, n));
  const first = word(items[0]);
  if (!hasClauses && !CLAUSES.has(first ?? '') && first !== 'with') {
    const parts = commaItems(items);
    if (indent.length + flat(items).length <= WIDTH) out.push(indent + flat(items));
    // a long condition: one `and`/`or` a line
    else if (parts.length === 1)
      for (const [step, line] of lines(items)) layoutLine(line, indent + INDENT.repeat(step), out);
    else for (const part of parts) layoutLine(part, indent, out);
    return;
  }
  for (const [step, line] of lines(items)) layoutLine(line, indent + INDENT.repeat(step), out);
}

/** The statement laid out over lines (no trailing newline). */
export function formatSql(sql: string): string {
  const out: string[] = [];
  layoutList(tree(sqlTokens(sql)), '', out);
  return out.map((l) => l.trimEnd()).join('\n');
}
