import type { Readable } from 'node:stream';
import { ReportError } from './report';

/**
 * A streaming CSV reader (RFC 4180: quoted fields with commas, quotes doubled, line breaks; CRLF
 * or LF): yields one row at a time, with its line number, holding no more than the row being read.
 * A file that ends inside a quoted field is truncated; a row longer than `maxRowChars` is refused
 * (a file with no line breaks must not be held whole).
 */
export async function* csvRows(
  input: Readable,
  maxRowChars = 64 * 1024,
): AsyncGenerator<{ lineNo: number; fields: string[] }> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let fields: string[] = [];
  let field = '';
  let quoted = false;
  // the previous character closed a quoted section: a quote now is an escaped one
  let afterQuote = false;
  let rowChars = 0;
  let line = 1;
  let rowLine = 1;
  let sawAny = false;
  const decode = (chunk: Buffer | undefined) => {
    try {
      return chunk === undefined ? decoder.decode() : decoder.decode(chunk, { stream: true });
    } catch {
      throw new ReportError(line, 'the file is not UTF-8 text');
    }
  };
  const rows: { lineNo: number; fields: string[] }[] = [];
  const endRow = () => {
    fields.push(field);
    // a blank line is no row
    if (!(fields.length === 1 && fields[0] === '')) rows.push({ lineNo: rowLine, fields });
    fields = [];
    field = '';
    rowChars = 0;
  };
  const feed = (text: string) => {
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (!sawAny && c === '\ufeff') continue; // a byte-order mark
      sawAny = true;
      if (++rowChars > maxRowChars) throw new ReportError(rowLine, `a row is longer than ${maxRowChars} characters`);
      if (quoted) {
        if (c === '"') {
          quoted = false;
          afterQuote = true;
        } else {
          if (c === '\n') line++;
          field += c;
        }
        continue;
      }
      if (c === '"') {
        if (afterQuote) {
          field += '"';
          quoted = true;
          afterQuote = false;
        } else if (field === '') quoted = true;
        else throw new ReportError(line, 'a quote inside an unquoted field');
        continue;
      }
      afterQuote = false;
      if (c === ',') {
        fields.push(field);
        field = '';
      } else if (c === '\n') {
        endRow();
        line++;
        rowLine = line;
      } else if (c === '\r') {
        // CRLF: the LF ends the row
      } else field += c;
    }
  };
  for await (const chunk of input) {
    feed(decode(chunk as Buffer));
    yield* rows.splice(0);
  }
  feed(decode(undefined));
  if (quoted) throw new ReportError(rowLine, 'the file ends inside a quoted field (truncated)');
  if (field !== '' || fields.length > 0) endRow();
  yield* rows.splice(0);
}

/** Header names compared without case, spaces or punctuation: "Transaction ID" = "transactionId". */
export const headerKey = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, '');
