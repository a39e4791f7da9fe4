import { raw } from 'objection';
import type { Executor } from './db/knex';
import { Setting } from './db/models';

export interface MaintenanceFlag {
  enabled: boolean;
  retry_after: number;
}

const MAINTENANCE_KEY = 'maintenance';
const OFF: MaintenanceFlag = { enabled: false, retry_after: 300 };

export async function getMaintenance(db: Executor): Promise<MaintenanceFlag> {
  const row = await Setting.query(db).findById(MAINTENANCE_KEY).select('value');
  return row ? { ...OFF, ...row.value } : OFF;
}

export async function setMaintenance(db: Executor, flag: MaintenanceFlag): Promise<MaintenanceFlag> {
  await Setting.query(db)
    .insert({ key: MAINTENANCE_KEY, value: { ...flag }, updated_at: raw('now()') })
    .onConflict('key')
    .merge();
  return flag;
}
