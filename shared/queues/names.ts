/** The one list of BullMQ queues; each worker pool consumes exactly one of them. */
export const QUEUES = {
  providerPush: 'provider-push',
  callbackReconciler: 'callback-reconciler',
  refund: 'refund',
  payout: 'payout',
  webhookSender: 'webhook-sender',
  settlement: 'settlement',
} as const;

export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];
export const ALL_QUEUES: QueueName[] = Object.values(QUEUES);

/** Every job carries ids only (job data sits in clear text in Redis) plus the request id for logs. */
export interface JobData {
  requestId?: string;
  [key: string]: string | number | boolean | null | undefined;
}
