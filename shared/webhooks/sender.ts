import type { ServiceContext } from '../context';
import { SigningSecrets, webhookSecretFor } from '../merchants/webhookSecrets';
import { signatureHeader, standardSignatureHeader } from '../client/webhooks';
import {
  claimAttempts,
  finishAttempts,
  releaseProbe,
  takeProbe,
  type AttemptOutcome,
  type ClaimedAttempt,
} from './deliveries';
import { diagnose, markDead } from '../db/sql/webhookDeliveries';
import { Coalescer } from '../db/coalescer';
import { eventEnvelope } from '../events/read';
import { makeAgents, postWebhook, type AttemptResult } from './http';
import { afterAttempt, isSuccess, MAX_ATTEMPTS } from './rules';
import { EndpointSemaphore } from './semaphore';

/**
 * One run of a delivery job: take an endpoint slot, claim the next attempt in Postgres, POST, record
 * the outcome. Whatever stops a claim (not due, breaker open, endpoint full) is a wait, no attempt spent.
 */

export type DeliveryOutcome = { kind: 'done'; reason: string } | { kind: 'wait'; delayMs: number; reason: string };

const USER_AGENT = 'Service-Webhook/1.0';
/** How long past its deadline an attempt's lease lasts before its sender is presumed dead. */
const LEASE_MARGIN_MS = 5000;
/** While another delivery probes a half-open endpoint, the others look again this often. */
const PROBE_RECHECK_MS = 1000;

const done = (reason: string): DeliveryOutcome => ({ kind: 'done', reason });
const wait = (delayMs: number, reason: string): DeliveryOutcome => ({
  kind: 'wait',
  delayMs: Math.max(1, Math.round(delayMs)),
  reason,
});

/** The sender of a pool's deliveries, built once at start-up: `deliver` runs one job. */
export function webhookSender(ctx: ServiceContext) {
  const { webhooks } = ctx.config;
  const leaseMs = webhooks.timeoutMs + LEASE_MARGIN_MS;
  const semaphore = new EndpointSemaphore(ctx.redis, ctx.config.queuePrefix, webhooks.endpointConcurrency, leaseMs);
  const agents = makeAgents();
  const secrets = new SigningSecrets(ctx.config.secretsKeys);
  // claims and outcomes of concurrent jobs share statements (one commit for many deliveries)
  const claims = new Coalescer(async (ids: string[]) => {
    const claimed = await claimAttempts(ctx.db, ids, leaseMs, false);
    const byId = new Map(claimed.map((c) => [c.id, c]));
    // a delivery asked for twice in one batch (two jobs for it) is claimed once, by the first
    return ids.map((id) => {
      const c = byId.get(id) ?? null;
      byId.delete(id);
      return c;
    });
  });
  const outcomes = new Coalescer((items: AttemptOutcome[]) => finishAttempts(ctx.db, items, webhooks.breakerPauseMs));

  /** Claims the next attempt, or says what to do instead. */
  async function claimNext(deliveryId: string, webhookId: string): Promise<ClaimedAttempt | DeliveryOutcome> {
    const claimed = await claims.call(deliveryId);
    if (claimed) return claimed;
    const d = await diagnose(ctx.db, deliveryId);
    if (!d || d.status !== 'pending') return done('finished');
    // another sender is on it; if that one dies, its job is retried after the lease
    if (d.leased) return done('in-flight-elsewhere');
    if (d.attempts >= MAX_ATTEMPTS) {
      await markDead(ctx.db, deliveryId, 'interrupted');
      return done('dead');
    }
    if (d.not_due) return wait(d.next_attempt_in_ms, 'not-due');
    if (d.webhook_status !== 'enabled') {
      await markDead(ctx.db, deliveryId, 'endpoint-disabled');
      return done('endpoint-disabled');
    }
    // jitter spreads the endpoint's waiting deliveries once the pause ends
    if (d.breaker_open) return wait(Number(d.breaker_open_for_ms) + Math.random() * PROBE_RECHECK_MS, 'breaker-open');
    if (d.breaker_tripped) {
      if (d.probing || !(await takeProbe(ctx.db, webhookId, leaseMs)))
        return wait(PROBE_RECHECK_MS * (0.5 + Math.random()), 'breaker-probing');
      const [probe] = await claimAttempts(ctx.db, [deliveryId], leaseMs, true);
      if (probe) return probe;
      await releaseProbe(ctx.db, webhookId);
    }
    return wait(100, 'claim-raced');
  }

  async function send(claim: ClaimedAttempt): Promise<AttemptResult> {
    const body = JSON.stringify(
      eventEnvelope({
        id: claim.event_id,
        type: claim.event_type,
        created: claim.event_created,
        object_version: claim.object_version,
        body: claim.event_body,
      }),
    );
    // the receiver checks the signing time against its own wall clock (Standard Webhooks' tolerance)
    const timestamp = Math.floor(Date.now() / 1000);
    // signed with the secrets as the claim read them (a rotation applies to the next attempt):
    // the current one, and the replaced one while its overlap lasts
    const signing = secrets.of(claim) ?? [
      await webhookSecretFor(ctx.db, claim.merchant_id, claim.environment, ctx.config.secretsKeys),
    ];
    return postWebhook(agents, {
      url: claim.url,
      environment: claim.environment,
      timeoutMs: ctx.config.webhooks.timeoutMs,
      body,
      headers: {
        'Content-Type': 'application/json',
        'User-Agent': USER_AGENT,
        'X-Service-Event': claim.event_type,
        'X-Service-Delivery-Id': claim.id,
        'X-Service-Delivery-Attempt': String(claim.attempts),
        'X-Service-Timestamp': String(timestamp),
        'X-Service-Signature': signatureHeader(signing, timestamp, body),
        // Standard Webhooks, beside the spec's headers (docs/decisions.md#integrators-kit)
        'webhook-id': claim.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': standardSignatureHeader(signing, claim.id, timestamp, body),
      },
    });
  }

  async function record(claim: ClaimedAttempt, result: AttemptResult): Promise<DeliveryOutcome> {
    const verdict = afterAttempt(claim.attempts, isSuccess(result.statusCode), ctx.config.webhookRetryDelaysMs);
    const state = await outcomes.call({ claim, result, verdict });
    const fields = {
      deliveryId: claim.id,
      webhookId: claim.webhook_id,
      attempt: claim.attempts,
      statusCode: result.statusCode,
      error: result.error,
      latencyMs: result.latencyMs,
    };
    if (verdict.status === 'succeeded') ctx.log.debug(fields, 'webhook delivered');
    else ctx.log.info({ ...fields, next: verdict.status }, 'webhook attempt failed');
    if (!state) return done('lease-lost');
    return verdict.status === 'pending' ? wait(verdict.retryInMs, 'retry-scheduled') : done(verdict.status);
  }

  return async function deliver(deliveryId: string, webhookId: string): Promise<DeliveryOutcome> {
    const grant = await semaphore.acquire(webhookId, deliveryId);
    if (!grant.ok) return wait(grant.waitMs, 'endpoint-saturated');
    let released: Promise<void> | undefined;
    const release = (latencyMs: number) =>
      (released ??= semaphore
        .release(grant.slot, latencyMs)
        .catch((err: Error) =>
          ctx.log.warn(
            { webhookId, err: { message: err.message } },
            'webhook slot release failed; it expires with its lease',
          ),
        ));
    try {
      const claim = await claimNext(deliveryId, webhookId);
      if ('kind' in claim) return claim;
      const result = await send(claim);
      // the endpoint is free once it has answered: give the slot back while the outcome is written
      const [outcome] = await Promise.all([record(claim, result), release(result.latencyMs)]);
      return outcome;
    } finally {
      await release(-1);
    }
  };
}
