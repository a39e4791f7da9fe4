/**
 * The one list of BullMQ queues; each is consumed by one worker pool. The outbox-relay and
 * settlement pools run timers only (their work is found in Postgres), so they have no queue.
 */
export const QUEUES = {
  providerPush: 'provider-push',
  cardCharge: 'card-charge',
  callbackReconciler: 'callback-reconciler',
  refund: 'refund',
  payout: 'payout',
  webhookSender: 'webhook-sender',
} as const;

export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];
export const ALL_QUEUES: QueueName[] = Object.values(QUEUES);

/** Every job carries ids only (job data sits in clear text in Redis) plus the request id for logs. */
export interface JobData {
  requestId?: string;
  [key: string]: string | number | boolean | null | undefined;
}

/**
 * The field of a job's payload naming the piece of work it does, which has at most one live job
 * whoever adds it (the writer after commit, the outbox relay, the re-drive). Callbacks stored
 * together (`callbackIds`) and batches (batch.ts) have no key: should the re-drive give one of
 * their elements a job of its own, the later run finds it done.
 */
const WORK_FIELD: Record<QueueName, string> = {
  [QUEUES.providerPush]: 'paymentId',
  [QUEUES.cardCharge]: 'paymentId',
  [QUEUES.callbackReconciler]: 'callbackId',
  [QUEUES.refund]: 'refundId',
  [QUEUES.payout]: 'payoutId',
  [QUEUES.webhookSender]: 'deliveryId',
};

/** The key of the work a job does (its BullMQ deduplication id), or undefined for a payload without one. */
export function workKey(queue: QueueName, data: JobData): string | undefined {
  const id = data[WORK_FIELD[queue]];
  if (typeof id !== 'string' || id === '') return undefined;
  // an operator's replay starts a new round of a delivery: a job of its own
  return queue === QUEUES.webhookSender ? `${id}.${typeof data.round === 'number' ? data.round : 1}` : id;
}

/**
 * The prefix of a queue's Redis keys: the deployment's prefix and the queue's own hash tag, so
 * that on a Redis Cluster all of one queue's keys (BullMQ's and ours beside them) share a slot
 * and different queues spread over the shards.
 */
export const queueKeyPrefix = (prefix: string, queue: QueueName) => `${prefix}:{${queue}}`;
