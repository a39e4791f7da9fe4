import type { Executor } from './db/knex';

export interface MaintenanceFlag {
  enabled: boolean;
  retry_after: number;
}

const MAINTENANCE_KEY = 'maintenance';
const OFF: MaintenanceFlag = { enabled: false, retry_after: 300 };

export async function getMaintenance(db: Executor): Promise<MaintenanceFlag> {
  const row = await db('settings').where({ key: MAINTENANCE_KEY }).first('value');
  return row ? { ...OFF, ...row.value } : OFF;
}

export async function setMaintenance(db: Executor, flag: MaintenanceFlag): Promise<MaintenanceFlag> {
  await db('settings')
    .insert({ key: MAINTENANCE_KEY, value: JSON.stringify(flag), updated_at: db.fn.now() })
    .onConflict('key')
    .merge();
  return flag;
}
