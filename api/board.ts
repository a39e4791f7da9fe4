import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import type { Middleware } from 'koa';
import type { QueueRegistry } from '../shared/queues/registry';

export const BOARD_PATH = '/admin/queues';

/** Bull Board UI over every queue; mounted behind adminAuth by the app. */
export function boardMiddleware(queues: QueueRegistry): Middleware {
  const adapter = new KoaAdapter();
  adapter.setBasePath(BOARD_PATH);
  createBullBoard({ queues: queues.all().map((q) => new BullMQAdapter(q)), serverAdapter: adapter });
  return adapter.registerPlugin();
}
