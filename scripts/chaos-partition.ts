import type { ClientResponse } from '../shared/client/signing';

/**
 * The chaos drill's requests during a Postgres partition, each timed. docs/decisions.md#bounded-waits:
 * no request waits more than 5 s for Postgres; past that it is 503 `service-unavailable`
 * with Retry-After. Every request must have an answer within ANSWER_BOUND_MS: a success, a
 * refusal (4xx), or that 503; any other 5xx is a wrong answer.
 */

/** The spec's 5 s, plus 2 s of slack. */
export const ANSWER_BOUND_MS = 7000;
/** A request still unanswered after this long is counted as hung. */
const HUNG_AFTER_MS = 60_000;

export interface PartitionProbes {
  total: number;
  /** answered acceptably within ANSWER_BOUND_MS */
  withinBound: number;
  maxAnswerMs: number;
  /** no answer within HUNG_AFTER_MS */
  hung: number;
  /** the connection closed without an answer */
  dropped: number;
  /** answers by request, status and code */
  answers: Map<string, number>;
}

type Probe = () => Promise<ClientResponse>;

function acceptable(res: ClientResponse): boolean {
  if (res.status < 500) return true;
  return res.status === 503 && res.body?.error?.code === 'service-unavailable' && !!res.headers.get('retry-after');
}

/** The answer; 'dropped' when the connection closed without one, 'hung' when none came within `ms`. */
function answerWithin(request: Promise<ClientResponse>, ms: number): Promise<ClientResponse | 'dropped' | 'hung'> {
  let timer: NodeJS.Timeout;
  const late = new Promise<'hung'>((r) => (timer = setTimeout(r, ms, 'hung')));
  return Promise.race([request.catch(() => 'dropped' as const), late]).finally(() => clearTimeout(timer));
}

/** Sends every probe once a second until `over` resolves, then waits for every answer. */
export async function probeUntil(over: Promise<void>, probes: Record<string, Probe>): Promise<PartitionProbes> {
  const result: PartitionProbes = { total: 0, withinBound: 0, maxAnswerMs: 0, hung: 0, dropped: 0, answers: new Map() };
  const timed = async (name: string, probe: Probe) => {
    result.total++;
    const started = Date.now();
    const res = await answerWithin(probe(), HUNG_AFTER_MS);
    const ms = Date.now() - started;
    const what = `${name} ${typeof res === 'string' ? res : `${res.status} ${res.body?.error?.code ?? ''}`.trim()}`;
    result.answers.set(what, (result.answers.get(what) ?? 0) + 1);
    if (typeof res === 'string') return void result[res]++;
    result.maxAnswerMs = Math.max(result.maxAnswerMs, ms);
    if (ms <= ANSWER_BOUND_MS && acceptable(res)) result.withinBound++;
  };
  let ended = false;
  void over.then(() => (ended = true));
  const sent: Promise<void>[] = [];
  while (!ended) {
    for (const [name, probe] of Object.entries(probes)) sent.push(timed(name, probe));
    await Promise.race([over, new Promise((r) => setTimeout(r, 1000))]);
  }
  await Promise.all(sent);
  return result;
}
