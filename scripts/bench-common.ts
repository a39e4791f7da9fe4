import { randomBytes } from 'node:crypto';

/**
 * What every bench script shares: the environment of a throwaway service (its own database and
 * queue prefix, the rate limit out of the way), and the entry that runs this file as the load
 * generator or, in a child process, as one of the servers it measures.
 */

export function benchEnv(databaseUrl: string, logLevel = 'silent'): Record<string, string> {
  return {
    ...(process.env as Record<string, string>),
    NODE_ENV: 'development',
    DATABASE_URL: databaseUrl,
    QUEUE_PREFIX: `{bench${randomBytes(3).toString('hex')}}`,
    // the bench's one merchant would otherwise stop at 100 requests a minute (refused in production)
    RATE_LIMIT_PER_MINUTE: String(1_000_000_000),
    LOG_LEVEL: logLevel,
  };
}

/** Runs the role named on the command line (`--serve`, `--web`, …), else the load generator. */
export function runBench(roles: Record<string, () => unknown>, bench: () => Promise<void>): void {
  const role = Object.keys(roles).find((flag) => process.argv.includes(flag));
  if (role) {
    Promise.resolve(roles[role]()).catch((err) => {
      console.error(err);
      process.exit(1);
    });
    return;
  }
  bench().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
