/**
 * The chaos drill's comparison of each operation's final status with what the sandbox provider
 * says it did, asked as the service asks it (shared/providers/sandbox/connector.ts, `ask`):
 * GET {sandbox}/{operator}/v1/transactions/{our id}, 404 when it never took the request. The
 * sandbox also counts the create requests it received for each id.
 */

export interface Operation {
  id: string;
  status: string;
  operator: string;
}

export interface ProviderComparison {
  /** final operations asked about */
  asked: number;
  /** "pay_…: service failed, provider succeeded", for each disagreement */
  mismatches: string[];
  /** operations by the number of create requests the provider received for them: 1, more, none */
  requests: { once: number; more: number; none: number };
}

/** What a final status of ours means happened at the provider; undefined while still open (the lost count covers those). */
function serviceOutcome(status: string): 'succeeded' | 'failed' | undefined {
  if (status === 'succeeded' || status === 'refunded') return 'succeeded';
  if (status === 'failed' || status === 'cancelled') return 'failed';
  return undefined;
}

/** The provider's answer as an outcome: failed, cancelled, expired or never taken all mean no money moved. */
function providerOutcome(status: string): 'succeeded' | 'failed' | 'pending' {
  if (status === 'succeeded') return 'succeeded';
  return status === 'pending' ? 'pending' : 'failed';
}

async function askSandbox(
  sandboxUrl: string,
  apiKey: string,
  op: Operation,
): Promise<{ status: string; requests: number }> {
  const res = await fetch(`${sandboxUrl}/${op.operator}/v1/transactions/${encodeURIComponent(op.id)}`, {
    headers: { Authorization: `Bearer ${apiKey}` },
  });
  if (res.status === 404) return { status: 'not-found', requests: 0 };
  if (!res.ok) throw new Error(`sandbox provider: ${res.status} asking about ${op.id}`);
  const body = (await res.json()) as { status: string; sandbox: { requests: number } };
  return { status: body.status, requests: body.sandbox.requests };
}

export async function compareWithProvider(
  sandboxUrl: string,
  apiKey: string,
  operations: Operation[],
  concurrency = 8,
): Promise<ProviderComparison> {
  const result: ProviderComparison = { asked: 0, mismatches: [], requests: { once: 0, more: 0, none: 0 } };
  const final = operations.filter((op) => serviceOutcome(op.status));
  let next = 0;
  const worker = async () => {
    while (next < final.length) {
      const op = final[next++];
      const provider = await askSandbox(sandboxUrl, apiKey, op);
      result.asked++;
      if (providerOutcome(provider.status) !== serviceOutcome(op.status))
        result.mismatches.push(`${op.id}: service ${op.status}, provider ${provider.status}`);
      if (provider.requests === 1) result.requests.once++;
      else if (provider.requests > 1) result.requests.more++;
      else result.requests.none++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return result;
}
