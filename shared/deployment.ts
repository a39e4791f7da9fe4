import type { Config } from './config';
import { checkPooler } from './db/pooler';
import { checkClusterNodes } from './queues/connection';

/**
 * Refuses a bad deployment before start, saying what to change (docs/operating.md#scaling): prepared statements
 * behind PgBouncer, a dead Redis Cluster node. A module of its own: the supervisor asks it
 * without loading the service's whole context.
 */
export async function checkDeployment(config: Config): Promise<void> {
  await Promise.all([checkPooler(config.databaseUrl, config.dbPreparedStatements), checkClusterNodes(config.redisUrl)]);
}
