import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { v1Document } from '../../api/v1';
import type { OpenApiDocument } from '../../api/openapi/document';
import type { ResponseInfo } from '../../shared/client/signing';

/**
 * The response half of the contract test: every answer a test's merchant client receives is
 * checked against the OpenAPI document (the status is documented for the operation, the body
 * matches the documented schema, an error's code is one the operation lists). Installed on the
 * clients of test/helpers/env.ts, so the integration tests' real responses are the evidence.
 * A mismatch throws where the test made the request.
 */

interface Operation {
  method: string;
  template: string;
  regexp: RegExp;
  responses: Record<string, { content?: Record<string, { schema: unknown }>; 'x-error-codes'?: string[] }>;
}

export class ContractChecker {
  private readonly operations: Operation[] = [];
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly errorBody: ValidateFunction;
  /** Operations seen answering, by `METHOD template status` (for coverage reports). */
  readonly seen = new Set<string>();
  /** Error answers seen, by `METHOD template status code` (for coverage reports). */
  readonly seenCodes = new Set<string>();

  constructor(readonly doc: OpenApiDocument = v1Document()) {
    addFormats(this.ajv);
    this.ajv.addSchema({ $id: 'openapi.json', components: doc.components });
    for (const [template, item] of Object.entries(doc.paths)) {
      // a literal segment matches as the router matches: case-insensitive, a trailing slash allowed
      const pattern = template
        .split(/\{[^}]+\}/)
        .map((s) => s.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))
        .join('[^/]+');
      for (const [method, op] of Object.entries(item)) {
        this.operations.push({
          method: method.toUpperCase(),
          template,
          regexp: new RegExp(`^${pattern}/?$`, 'i'),
          responses: op.responses,
        });
      }
    }
    this.errorBody = this.compile({ $ref: 'openapi.json#/components/schemas/Error' });
  }

  private compile(schema: unknown): ValidateFunction {
    // references inside the document point at its own components
    const rebased = JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"openapi.json#/components/'));
    const key = JSON.stringify(rebased);
    let v = this.validators.get(key);
    if (!v) {
      v = this.ajv.compile(rebased);
      this.validators.set(key, v);
    }
    return v;
  }

  /** The documented operation a request reaches, if any. */
  operationOf(method: string, path: string): Operation | undefined {
    const m = method.toUpperCase() === 'HEAD' ? 'GET' : method.toUpperCase();
    return this.operations.find((o) => o.method === m && o.regexp.test(path));
  }

  /** What is wrong with this answer, by the document; empty when it conforms. */
  problems(r: ResponseInfo): string[] {
    const path = r.path.split('?')[0];
    const op = this.operationOf(r.method, path);
    const status = String(r.status);
    const json = /^application\/json/i.test(r.headers.get('content-type') ?? '');
    if (!op) {
      // an undocumented request (unknown route or method): only the error body can be checked
      if (r.status < 400) return [`${r.method} ${path} answered ${status} but the document has no such operation`];
      if (r.method === 'HEAD') return [];
      return json && !this.errorBody(r.body)
        ? [`${r.method} ${path} ${status}: error body ${this.ajv.errorsText(this.errorBody.errors)}`]
        : [];
    }
    const where = `${r.method} ${op.template} ${status}`;
    this.seen.add(where);
    const documented = op.responses[status];
    if (!documented)
      return [
        `${where}: status not documented (documented: ${Object.keys(op.responses).join(', ')}); body ${r.text.slice(0, 300)}`,
      ];
    if (!r.headers.get('x-request-id')) return [`${where}: no X-Request-Id`];
    if (r.method === 'HEAD') return [];
    const problems: string[] = [];
    const content = documented.content;
    if (content) {
      const type = (r.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
      const media = content[type];
      if (!media)
        return [`${where}: content type ${type || '(none)'} not documented (${Object.keys(content).join(', ')})`];
      if (type === 'application/json') {
        const validate = this.compile(media.schema);
        if (!validate(r.body))
          problems.push(`${where}: body does not match the document: ${this.ajv.errorsText(validate.errors)}`);
      }
    }
    const codes = documented['x-error-codes'];
    const code = (r.body as { error?: { code?: string } } | undefined)?.error?.code;
    if (code !== undefined) this.seenCodes.add(`${where} ${code}`);
    if (codes && code !== undefined && !codes.includes(code))
      problems.push(`${where}: error code ${code} not documented for this operation (${codes.join(', ')})`);
    return problems;
  }

  /** ServiceClient's onResponse hook: throws at the request that broke the contract. */
  readonly check = (r: ResponseInfo): void => {
    const problems = this.problems(r);
    if (problems.length) throw new Error(`API contract (shared/client/openapi.json) broken:\n${problems.join('\n')}`);
  };
}

let shared: ContractChecker | null = null;

/**
 * One checker per test process (the document is built once). With CONTRACT_COVERAGE=1 the
 * process prints, when it ends, the documented operations no test's checked client received a
 * success from (e.g. `CONTRACT_COVERAGE=1 npm run test:integration`).
 */
export function contract(): ContractChecker {
  if (!shared) {
    const checker = new ContractChecker();
    shared = checker;
    if (process.env.CONTRACT_COVERAGE) process.on('exit', () => process.stderr.write(`${coverageReport(checker)}\n`));
  }
  return shared;
}

/** The operations, statuses and error codes the checked clients received, and the operations never answered 2xx. */
export function coverageReport(c: ContractChecker): string {
  const ops = Object.entries(c.doc.paths).flatMap(([template, item]) =>
    Object.keys(item).map((m) => `${m.toUpperCase()} ${template}`),
  );
  const succeeded = (op: string) => [...c.seen].some((s) => s.startsWith(`${op} 2`));
  const missing = ops.filter((op) => !succeeded(op));
  return [
    `contract coverage: ${ops.length - missing.length}/${ops.length} operations answered 2xx to a checked client; ${c.seen.size} operation-status pairs and ${c.seenCodes.size} operation-error-code pairs seen (each checked against the document as received)`,
    ...missing.map((m) => `  never 2xx: ${m}`),
  ].join('\n');
}
