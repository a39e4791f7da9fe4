import type { Model, ModelClass } from 'objection';
import type { Executor, Trx } from '../db/knex';
import type { StatusHistory } from '../db/models';
import type { OutboxWriter } from '../db/transact';
import type { Config } from '../config';
import type { IdKind } from '../ids';
import type { ProviderError } from '../providers/errors';
import type { ProviderAccepted, ProviderObjectKind } from '../providers/types';
import type { Connector, OperationRef } from '../providers/connector';
import type { QueueName } from '../queues/names';
import type { Posting } from '../rules/ledger';
import type { OperationRow } from '../db/rows';
import { operationSql, type OperationSql } from './writer';
import { traceparentNow } from '../tracing/spans';
import type { LedgerEffect, Machine, Trigger } from './stateMachine';

/**
 * A kind of provider operation: a table entry of the kernel (README.md in this folder). The
 * kernel sends, applies, transitions and sweeps every kind the same way; the kind says only
 * what differs: its table, its statuses, its provider call, its postings, its event object, and
 * what ends it at the window's end.
 */

/** Why a trigger happened, and what the provider said with it. */
export interface TriggerDetails {
  /** for the status history: created, provider-accepted, provider-callback, provider-refused, provider-asked, ... */
  reason: string;
  /** when it happened, from the process's clock (ms): the change's stamps (updated_at, sent_at, completed, its event's created) */
  at: number;
  providerRef?: string | null;
  failureCode?: string | null;
  failureMessage?: string | null;
}

/** What the sweep knows when an operation's window is over. */
export type WindowAnswer =
  | {
      kind: 'status';
      state: 'pending' | 'not_found' | 'expired' | 'succeeded' | 'failed' | 'cancelled';
      providerRef: string | null;
      failureCode?: string;
      failureMessage?: string;
    }
  | { kind: 'unreachable'; error: Error }
  | { kind: 'no-provider' };

/** What the sweep does about it: a trigger, or ask again at a later sweep. */
export type WindowVerdict = { trigger: Trigger; details: Omit<TriggerDetails, 'at'> } | 'ask-again';

/** What the provider's acceptance of a request does: a trigger (default `sent`), with what it reported. */
export interface AcceptedStep<R> {
  trigger: Trigger;
  details?: Partial<TriggerDetails>;
  /** columns the answer sets beside the status (what the provider reported about the operation) */
  patch?: Partial<R>;
}

export interface OperationKind<R extends OperationRow = OperationRow, S extends string = string, P = Connector> {
  /** the provider's word for it (callbacks and asks name it) */
  name: ProviderObjectKind;
  /** the id kind of its rows, when it is not `name` (a card payment is a `pay_`) */
  idKind?: IdKind;
  /** its table's model (shared/db/models.ts), for the kernel's single-table reads and writes off the hot path */
  model: ModelClass<Model & R>;
  /** when kinds share a table: the column values of this kind's rows (a card payment: method = card) */
  scope?: Record<string, string>;
  /** its status history's model (shared/db/models.ts): the table, and the column naming the row */
  history: Pick<StatusHistory, 'tableName' | 'column'>;
  machine: Machine<S>;
  /** the queue and job that send it to the provider, and the job's id field */
  send: { queue: QueueName; job: string; idField: string };
  /** the provider_ref is part of the object: its first appearance is a change (version + 1) */
  providerRefVisible: boolean;
  /** the request to the provider, with our id as its idempotency key */
  request(provider: P, row: R, db: Executor): Promise<ProviderAccepted>;
  /** what an ask about a row tells its provider beyond the row's own fields (a card payment's last checkout attempt) */
  askContext?(row: R, db: Executor, now: number): Promise<Partial<Pick<OperationRef, 'card'>>>;
  /** what the provider is asked to move: compared with an amount its callback or status answer echoes */
  moved(row: R): { amount: number; currency: string };
  /** what the provider's acceptance does (default: the `sent` trigger); e.g. a card charge may ask for 3-D Secure */
  accepted?(row: R, answer: ProviderAccepted, at: { config: Config; now: number }): AcceptedStep<R>;
  /**
   * A permanent refusal the client can correct (a card token refused): the operation stays as it
   * was, open and unsent, with these columns written; null (or absent): the refusal fails it.
   */
  correctable?(row: R, err: ProviderError): Partial<R> | null;
  /** whether the kernel may send it at `now` (e.g. mobile money only, card payments are charged otherwise) */
  sendable(row: R, now: number): boolean;
  /**
   * True while the operation was never sent to its provider (a card payment whose checkout posted
   * no token and that was never charged): a provider's report about it is recorded, listed in
   * GET /admin/attention and not applied (docs/decisions.md#late-success). Absent: a report may
   * overtake the recording of the acceptance (a mobile-money callback before the push's answer).
   */
  neverSent?(row: R): boolean;
  /** the trigger of a provider's reported status */
  reported(status: 'succeeded' | 'failed' | 'cancelled'): Trigger;
  /** an unsent operation at its window's end: sent again (money out), or asked about */
  unsentAtWindowEnd: 'resend' | 'ask';
  /**
   * Rows in these statuses are asked about from `beforeEndMs` before their window ends, not only
   * once it is over (a card payment in its 3-D Secure challenge: docs/decisions.md#cards-hosted-checkout).
   * Before the window's end only the provider's own outcome (succeeded, failed, cancelled) is
   * applied; anything else waits for the next ask, and the window's end decides as ever.
   */
  askEarly?(config: Config): { statuses: readonly S[]; beforeEndMs: number } | null;
  /** what ends it when its window is over (a payment may be cancelled; money out is asked again, never guessed) */
  atWindowEnd(row: R, answer: WindowAnswer): WindowVerdict;
  /** the object its events carry */
  eventObject(row: R): Record<string, unknown>;
  /**
   * The posting of a ledger effect as data, for a kind whose postings are one balanced posting
   * each (a payment's credit): a credit is written by the writer with the change itself.
   */
  posting?(row: R, effect: LedgerEffect): Posting;
  /** writes the posting of a ledger effect, for a kind without `posting` (money out reverses what it took) */
  post?(trx: Trx, row: R, effect: LedgerEffect): Promise<void>;
  /** its statements (its reads and the writer's: writer.ts), built with the kind (defineKind) */
  sql: OperationSql;
  /** what a move changes beyond its own row (a refund's payment), in the same transaction, before the event */
  afterMove?(trx: Trx, outbox: OutboxWriter, row: R, to: S, at: number): Promise<void>;
}

/**
 * A kind with its statements: its table's `columns` (shared/db/rows.ts), and the order its new
 * rows are inserted in when a unique value other than the id could be shared by two batches.
 */
export function defineKind<R extends OperationRow, S extends string, P = Connector>(
  spec: Omit<OperationKind<R, S, P>, 'sql'>,
  columns: readonly string[],
  insertOrder: readonly string[] = ['id'],
): OperationKind<R, S, P> {
  const tables = {
    name: spec.name,
    table: spec.model.tableName,
    scope: spec.scope,
    history: { table: spec.history.tableName, column: spec.history.column },
    columns,
    insertOrder: insertOrder.map((c) => `r.${c}`).join(', '),
  };
  return { ...spec, sql: operationSql(tables) };
}

/** The kernel's columns of a new operation: not sent yet, no outcome, version 1, its provider window from `now` (the process's clock). */
export function newOperationFields(windowMs: number, now: number) {
  return {
    provider_ref: null,
    failure_code: null,
    failure_message: null,
    version: 1,
    completed: null,
    sent_at: null,
    window_ends_at: new Date(now + windowMs),
    asked_at: null,
    asks: 0,
    traceparent: traceparentNow(),
  };
}
