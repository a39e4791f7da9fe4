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
