/**
 * One typed configuration, read from the environment once at start-up. A bad value stops the
 * process with a message naming the variable; every variable has a development default (listed
 * in .env.example), and the development secrets are refused in production. Each connector's
 * settings are read by its own loader (shared/providers/<name>/settings.ts), composed here from
 * the connector table (shared/providers/table.ts, docs/adding-a-connector.md).
 */

import { parseDailyTime } from './rules/settlement';
import { abovePortBase, bool, ConfigError, int, portDefault, url, type Env } from './env';
import { DIRECTIONS, OPERATORS, type Direction, type Operator } from './vocabulary';
import {
  CONNECTORS,
  LIVE_CARD,
  LIVE_MOBILE_MONEY,
  loadConnectorSettings,
  type ConnectorSettings,
  type ConnectorName,
  type LiveMobileMoneyName,
} from './providers/table';

export { ConfigError } from './env';
export { DEV_CARD_CALLBACK_SECRET, DEV_SANDBOX_CALLBACK_SECRET } from './env';
export { DEV_CARD_VAULT_API_KEY } from './providers/cardSandbox/settings';

// development secrets that ship with the code (public): production refuses each of them
export const DEV_SECRETS_KEY = 'dev:ZGV2ZWxvcG1lbnQtb25seS1rZXktZG8tbm90LXVzZSE=';
export const DEV_ADMIN_API_TOKEN = 'dev-admin-token-change-me';
/** The spec's webhook delays (6.5), in seconds; attempt n+1 follows failed attempt n by delay n. */
export const SPEC_WEBHOOK_DELAYS_S = [1, 5, 30, 300, 1800, 7200, 21600, 86400];
/** Requests per minute per API key (docs/decisions.md#merchant-pipeline, docs/settings.md#settings). */
export const SPEC_RATE_LIMIT_PER_MINUTE = 100;

export type SecretsKey = { id: string; key: Buffer };

/** The process's configuration (loadConfig): each setting is documented where it is read. */
export type Config = ReturnType<typeof loadConfig>;

/**
 * Operator availability (GET /v1/availability): an operator's direction is `delayed` when, over
 * the last `windowMs` of provider calls in that environment, at least `minCalls` were made and
 * at least half of them failed (timeout, unreachable, 5xx) or took `slowMs` or more.
 */
export type AvailabilityConfig = Config['availability'];

/**
 * Graceful overload (docs/operating.md#overload): while the work behind the API falls behind, POST
 * /v1/payments and POST /v1/payouts answer 503 service-unavailable at once instead of queueing
 * work that will be late. 0 turns a threshold off.
 */
export interface OverloadConfig {
  /** OVERLOAD_MAX_WAITING: jobs waiting in any one queue above which creation is refused; default 10000. */
  maxWaiting: number;
  /** OVERLOAD_MAX_WAIT_MS: age of a queue's oldest waiting job above which creation is refused; default 1000 (accepted work completes within about a second). */
  maxWaitMs: number;
  /**
   * OVERLOAD_MAX_IN_FLIGHT: merchant API requests a web process is handling (received, not yet
   * answered; provider callbacks are not counted) above which creation is refused; default 64.
   * It catches the overload the queues cannot show: a machine so busy that the work is late
   * before it reaches a queue (the web answers slowly).
   */
  maxInFlight: number;
  /**
   * OVERLOAD_MAX_LAG_MS: the web process's event-loop delay (p90 over the last OVERLOAD_SAMPLE_MS)
   * above which creation is refused while more than a quarter of OVERLOAD_MAX_IN_FLIGHT requests
   * are in hand (a late loop that keeps up refuses nothing: 100/s on a slow 2-core sitting saw
   * 0.8-3 % refused without that floor, 0.2 % with it); default 50. Past saturation the loop is
   * late before the queues are: this refuses at once, before the body is read, and keeps GETs and callbacks fast.
   * bench:e2e's overload step (twice the sustainable rate) chose it: at 200 (p99) with 256 in
   * flight and a 5 s queue wait, accepted POSTs waited seconds and some got no answer within
   * 10 s; at 50 (p99) ordinary load (100/s on a busy 2-core machine) saw 1 % refused; at 50 (p90)
   * with 64 in flight and 1 s, none at 100/s, and under overload no timeout and accepted POSTs
   * answered within 0.35 s (p99).
   */
  maxLagMs: number;
  /** OVERLOAD_SAMPLE_MS: how often a web process reads the queues and its event-loop delay (a cached sample between reads); default 500. */
  sampleMs: number;
  /** OVERLOAD_RETRY_AFTER_S: the Retry-After of a refused request, seconds; default 5. */
  retryAfterS: number;
}

export function loadOverloadConfig(env: Env): OverloadConfig {
  return {
    maxWaiting: int(env, 'OVERLOAD_MAX_WAITING', 10_000, 0),
    maxWaitMs: int(env, 'OVERLOAD_MAX_WAIT_MS', 1000, 0),
    maxInFlight: int(env, 'OVERLOAD_MAX_IN_FLIGHT', 64, 0),
    maxLagMs: int(env, 'OVERLOAD_MAX_LAG_MS', 50, 0),
    sampleMs: int(env, 'OVERLOAD_SAMPLE_MS', 500, 10, 60_000),
    retryAfterS: int(env, 'OVERLOAD_RETRY_AFTER_S', 5, 1, 3600),
  };
}

/** The daily settlement (docs/decisions.md#balance-and-settlement). */
function loadSettlementConfig(env: Env) {
  const time = env.SETTLEMENT_TIME_UTC || '00:00';
  // minutes after midnight UTC
  const cutoffMinutesUtc = parseDailyTime(time);
  if (cutoffMinutesUtc === null)
    throw new ConfigError(`SETTLEMENT_TIME_UTC must be HH:MM (UTC, 00:00 to 23:59), got "${time}"`);
  // how often the settlement pool checks whether the cut-off has passed
  return { cutoffMinutesUtc, checkIntervalMs: int(env, 'SETTLEMENT_CHECK_INTERVAL_MS', 60_000, 50, 3_600_000) };
}

/**
 * Daily reconciliation against the providers' statements (docs/reconciliation.md): the business
 * day's time zone, how long after a day's end its statement is final, the wallet difference
 * flagged, the fee each connector's contract sets, the largest report file accepted, how
 * often the settlement pool checks for a day to reconcile, and how often a run asks whether a
 * statement is ready when no statement callback wakes it first.
 */
function loadReconciliationConfig(env: Env) {
  const timeZone = env.RECONCILIATION_TIME_ZONE || 'Africa/Kinshasa';
  try {
    new Intl.DateTimeFormat('en', { timeZone });
  } catch {
    throw new ConfigError(`RECONCILIATION_TIME_ZONE must be an IANA time zone, got "${timeZone}"`);
  }
  // "pawapay=150,airtel=100": the provider's fee in basis points of the amount, per connector
  const contractFeesBps: Record<string, number> = {};
  for (const part of (env.RECONCILIATION_CONTRACT_FEES_BPS || '').split(',').filter((x) => x.trim())) {
    const m = /^\s*([a-z0-9-]+)\s*=\s*([0-9]{1,5})\s*$/.exec(part);
    if (!m || Number(m[2]) > 10_000)
      throw new ConfigError(`RECONCILIATION_CONTRACT_FEES_BPS must be connector=bps,... (0 to 10000), got "${part}"`);
    contractFeesBps[m[1]] = Number(m[2]);
  }
  return {
    timeZone,
    lagMs: int(env, 'RECONCILIATION_LAG_MS', 3_600_000, 0, 86_400_000),
    balanceThreshold: int(env, 'RECONCILIATION_BALANCE_THRESHOLD', 100, 0),
    contractFeesBps,
    maxReportBytes: int(env, 'RECONCILIATION_MAX_REPORT_BYTES', 512 * 1024 * 1024, 1024),
    checkIntervalMs: int(env, 'RECONCILIATION_CHECK_INTERVAL_MS', 600_000, 50, 86_400_000),
    statementPollMs: int(env, 'RECONCILIATION_STATEMENT_POLL_MS', 30_000, 50, 600_000),
  };
}

export const SPEC_WEBHOOK_TIMEOUT_MS = 10_000;
export const SPEC_WEBHOOK_BREAKER_PAUSE_MS = 3_600_000;

/** Webhook delivery settings beside webhookRetryDelaysMs (docs/decisions.md#webhooks). */
function loadWebhooksConfig(env: Env, production: boolean) {
  // one attempt's deadline (docs/decisions.md: 10 s)
  const timeoutMs = int(env, 'WEBHOOK_TIMEOUT_MS', SPEC_WEBHOOK_TIMEOUT_MS, 100, 120_000);
  // how long an open circuit breaker holds an endpoint's deliveries (spec: 1 hour)
  const breakerPauseMs = int(env, 'WEBHOOK_BREAKER_PAUSE_MS', SPEC_WEBHOOK_BREAKER_PAUSE_MS, 100);
  if (production && timeoutMs !== SPEC_WEBHOOK_TIMEOUT_MS) {
    throw new ConfigError(
      `WEBHOOK_TIMEOUT_MS is fixed at ${SPEC_WEBHOOK_TIMEOUT_MS} by docs/decisions.md in production`,
    );
  }
  if (production && breakerPauseMs !== SPEC_WEBHOOK_BREAKER_PAUSE_MS) {
    throw new ConfigError(
      `WEBHOOK_BREAKER_PAUSE_MS is fixed at ${SPEC_WEBHOOK_BREAKER_PAUSE_MS} by the spec in production`,
    );
  }
  return {
    timeoutMs,
    breakerPauseMs,
    /** attempts in flight at once to one endpoint, across every sender process */
    endpointConcurrency: int(env, 'WEBHOOK_ENDPOINT_CONCURRENCY', 16, 1, 1000),
  };
}

/**
 * Live routing (docs/decisions.md#live-providers, docs/adding-a-connector.md): (method, operator,
 * direction) → a live connector of the table (shared/providers/table.ts). LIVE_<OPERATOR>=<connector>
 * routes every direction of an operator, LIVE_<OPERATOR>_<DIRECTION> overrides one; LIVE_CARD=<card
 * connector> routes live card payments. What has no route is closed in live. Test keys always reach
 * the sandboxes, whatever is set here. A route to a connector that is not configured, or that
 * cannot serve it, stops the process.
 */
function loadRoutes(env: Env, connectors: ConnectorSettings) {
  const mobileMoney: Partial<Record<Operator, Partial<Record<Direction, LiveMobileMoneyName>>>> = {};
  for (const operator of OPERATORS) {
    for (const direction of DIRECTIONS) {
      const own = `LIVE_${operator.toUpperCase()}_${direction.toUpperCase()}`;
      const name = env[own] !== undefined ? own : `LIVE_${operator.toUpperCase()}`;
      const given = env[name];
      if (!given) continue;
      if (!(LIVE_MOBILE_MONEY as string[]).includes(given))
        throw new ConfigError(`${name} must be one of ${LIVE_MOBILE_MONEY.join(', ')}, got "${given}"`);
      const connector = given as LiveMobileMoneyName;
      const entry = CONNECTORS[connector];
      if (!(entry.reach as readonly string[]).includes(operator))
        throw new ConfigError(`${own}: ${connector} does not reach ${operator}`);
      const settings = connectors[connector];
      if (settings === null)
        throw new ConfigError(
          `${own} routes ${operator} to ${connector}, which is not configured (its ${connector.toUpperCase()}_ settings are missing)`,
        );
      const refused = 'refuseRoute' in entry ? entry.refuseRoute(settings as never, direction) : null;
      if (refused) throw new ConfigError(`${own}: ${refused}`);
      (mobileMoney[operator] ??= {})[direction] = connector;
    }
  }
  // a name of LIVE_CARD (typed as any connector's name: the table may hold no live card connector yet)
  let card: ConnectorName | null = null;
  const given = env.LIVE_CARD;
  if (given) {
    if (!(LIVE_CARD as string[]).includes(given))
      throw new ConfigError(
        `LIVE_CARD must name a live card connector (${LIVE_CARD.join(', ') || 'none yet'}), got "${given}"`,
      );
    card = given as ConnectorName;
    if (connectors[card] === null)
      throw new ConfigError(`LIVE_CARD routes cards to ${given}, which is not configured (its settings are missing)`);
  }
  return { mobileMoney, card };
}

/** Payment flow settings beside the connectors: provider calls and the jobs that make them. */
function loadPaymentsConfig(env: Env) {
  return {
    /** timeout of one call to a provider */
    providerTimeoutMs: int(env, 'PROVIDER_TIMEOUT_MS', 10_000, 100, 120_000),
    /** BullMQ lock of a provider-push / callback-reconciler job: a killed worker's job is retried after it */
    paymentJobLockMs: int(env, 'PAYMENT_JOB_LOCK_MS', 30_000, 500),
  };
}

function nodeName(env: Env): string | null {
  const name = env.NODE_NAME?.trim();
  if (!name) return null;
  // a label value from a closed set: the operator's own short name
  if (!/^[A-Za-z0-9_.-]{1,40}$/.test(name))
    throw new ConfigError('NODE_NAME must be 1 to 40 letters, digits, dots, dashes or underscores');
  return name;
}

/**
 * REDIS_URL: one Redis (`redis://host:port/db`, `rediss://…`) or a Redis Cluster
 * (`redis-cluster://h1:p1,h2:p2,h3:p3`: any of its nodes; shared/queues/connection.ts).
 */
function redisUrl(env: Env): string {
  const raw = env.REDIS_URL || 'redis://127.0.0.1:6379';
  if (!raw.startsWith('redis-cluster://')) return url(env, 'REDIS_URL', raw, ['redis:', 'rediss:']);
  if (clusterNodes(raw).some((n) => !n.host || !Number.isInteger(n.port) || n.port < 1 || n.port > 65_535)) {
    throw new ConfigError('REDIS_URL redis-cluster://host:port,host:port,… must list its nodes as host:port');
  }
  return raw;
}

/** The nodes a redis-cluster:// URL lists. */
export function clusterNodes(redisUrl: string): { host: string; port: number }[] {
  return redisUrl
    .slice('redis-cluster://'.length)
    .split(',')
    .map((hp) => {
      const [host, port] = hp.trim().replace(/\/$/, '').split(':');
      return { host, port: Number(port) };
    });
}

/**
 * QUEUE_PREFIX: the namespace of every Redis key. Each queue's keys are under `<prefix>:{<queue>}`
 * (shared/queues/names.ts), one slot per queue on a Redis Cluster; a hash-tag prefix would put
 * every queue in one slot, and is refused on a cluster.
 */
function queuePrefix(env: Env): string {
  const prefix = env.QUEUE_PREFIX || 'svc';
  if ((env.REDIS_URL ?? '').startsWith('redis-cluster://') && /[{}]/.test(prefix)) {
    throw new ConfigError(
      `QUEUE_PREFIX ${prefix} holds a hash tag: on a Redis Cluster every queue takes its own ({queue}), so the prefix must have none`,
    );
  }
  return prefix;
}

export function parseSecretsKeys(raw: string): SecretsKey[] {
  const keys = raw.split(',').map((part) => {
    const m = /^([A-Za-z0-9_-]{1,32}):([A-Za-z0-9+/=]+)$/.exec(part.trim());
    if (!m) throw new ConfigError('SECRETS_KEY must be "<key id>:<base64 32-byte key>[,<older id>:<key>...]"');
    const key = Buffer.from(m[2], 'base64');
    if (key.length !== 32) throw new ConfigError(`SECRETS_KEY "${m[1]}" must decode to 32 bytes, got ${key.length}`);
    return { id: m[1], key };
  });
  if (new Set(keys.map((k) => k.id)).size !== keys.length) throw new ConfigError('SECRETS_KEY ids must be unique');
  return keys;
}

function delays(env: Env, production: boolean): number[] {
  const raw = env.WEBHOOK_RETRY_DELAYS_MS;
  const spec = SPEC_WEBHOOK_DELAYS_S.map((s) => s * 1000);
  if (!raw) return spec;
  const list = raw.split(',').map((s) => s.trim());
  if (list.length !== spec.length || list.some((s) => !/^\d+$/.test(s))) {
    throw new ConfigError(`WEBHOOK_RETRY_DELAYS_MS must be ${spec.length} comma-separated integers (milliseconds)`);
  }
  const parsed = list.map(Number);
  if (production && parsed.some((d, i) => d < spec[i])) {
    throw new ConfigError('WEBHOOK_RETRY_DELAYS_MS may not shorten the retry schedule in production');
  }
  return parsed;
}

export function loadConfig(env: Env = process.env) {
  const nodeEnv = (env.NODE_ENV || 'development') as 'development' | 'test' | 'production';
  if (!['development', 'test', 'production'].includes(nodeEnv)) {
    throw new ConfigError(`NODE_ENV must be development, test or production, got "${nodeEnv}"`);
  }
  const production = nodeEnv === 'production';
  // renamed (one word for asking a provider): an old setting left in place must not fall back silently to the default
  if ('RECONCILE_INTERVAL_MS' in env) throw new ConfigError('RECONCILE_INTERVAL_MS is now ASK_INTERVAL_MS');
  // the public port: merchant API, provider callbacks, health
  const port = int(env, 'PORT', portDefault(env, 0, 3000), 0, 65535);
  // when set, the operator API (/admin/*), Bull Board and /metrics are served on this port only (and answer 404 on PORT);
  // `+N`: PORT_BASE + N
  const adminPort = env.ADMIN_PORT ? (abovePortBase(env, 'ADMIN_PORT') ?? int(env, 'ADMIN_PORT', 0, 0, 65535)) : null;
  if (adminPort !== null && adminPort !== 0 && adminPort === port) {
    throw new ConfigError(`ADMIN_PORT must differ from PORT (${port}): the operator API is served on its own port`);
  }
  const secretsKeyRaw = env.SECRETS_KEY || DEV_SECRETS_KEY;
  const adminApiToken = env.ADMIN_API_TOKEN || DEV_ADMIN_API_TOKEN;
  if (production && secretsKeyRaw.split(',').some((k) => k.trim() === DEV_SECRETS_KEY)) {
    throw new ConfigError('SECRETS_KEY must be set to a real key in production (the development key is refused)');
  }
  if (production && adminApiToken.trim() === DEV_ADMIN_API_TOKEN) {
    throw new ConfigError('ADMIN_API_TOKEN must be set in production (the development token is refused)');
  }
  if (production && adminApiToken.trim().length < 32)
    throw new ConfigError('ADMIN_API_TOKEN must be at least 32 characters in production');
  if (adminApiToken.length < 16) throw new ConfigError('ADMIN_API_TOKEN must be at least 16 characters');
  // requests per minute bucket per API key (100 by default: docs/settings.md#settings); only the bench raises it
  const rateLimitPerMinute = int(env, 'RATE_LIMIT_PER_MINUTE', SPEC_RATE_LIMIT_PER_MINUTE, 1);
  if (production && rateLimitPerMinute !== SPEC_RATE_LIMIT_PER_MINUTE) {
    throw new ConfigError(`RATE_LIMIT_PER_MINUTE is fixed at ${SPEC_RATE_LIMIT_PER_MINUTE} by the spec in production`);
  }
  // tests only: the process's clock is the system clock plus the offset a test writes in this file (shared/clock.ts, fileClock)
  const testClockFile = env.TEST_CLOCK_FILE || null;
  if (testClockFile && nodeEnv !== 'test')
    throw new ConfigError(`TEST_CLOCK_FILE moves the clock in tests only: refused with NODE_ENV=${nodeEnv}`);
  // every connector's settings, each read by its own loader (shared/providers/table.ts), and the routes to them
  const connectors = loadConnectorSettings(env, production);
  return {
    nodeEnv,
    port,
    adminPort,
    /** web processes sharing the port(s) through node:cluster (1: no cluster) */
    webConcurrency: int(env, 'WEB_CONCURRENCY', 1, 1, 64),
    /** which node (machine) of a deployment this process belongs to, as logs and metrics name it (`node`); unset on one machine */
    nodeName: nodeName(env),
    baseUrl: url(env, 'BASE_URL', `http://127.0.0.1:${port}`, ['http:', 'https:']),
    databaseUrl: url(env, 'DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/svc_payments', [
      'postgres:',
      'postgresql:',
    ]),
    /** shared/db/sql runs named prepared statements; false behind a transaction-mode pooler that does not track them (PgBouncer before 1.21, or without max_prepared_statements) */
    dbPreparedStatements: bool(env, 'DB_PREPARED_STATEMENTS', true),
    testClockFile,
    /** connections each pool keeps open when idle; with 0, a burst after a quiet spell first opens connections (a Postgres fork and a handshake each) */
    dbPoolMin: int(env, 'DB_POOL_MIN', 2, 0, 100),
    redisUrl: redisUrl(env),
    /** BullMQ key prefix */
    queuePrefix: queuePrefix(env),
    /** the first key encrypts; every listed key decrypts (rotation) */
    secretsKeys: parseSecretsKeys(secretsKeyRaw),
    adminApiToken,
    logLevel: env.LOG_LEVEL || (nodeEnv === 'test' ? 'warn' : 'info'),
    /** reverse proxies in front of the web process whose X-Forwarded-For is trusted (0: use the socket) */
    trustedProxies: int(env, 'TRUSTED_PROXIES', 0, 0, 10),
    workerConcurrency: int(env, 'WORKER_CONCURRENCY', 10, 1, 1000),
    shutdownTimeoutMs: int(env, 'SHUTDOWN_TIMEOUT_MS', 25_000, 100),
    /** slow clients (api/server.ts): headers and whole request within these; checked every second, so dropped at most a second late */
    webHeadersTimeoutMs: int(env, 'WEB_HEADERS_TIMEOUT_MS', 15_000, 500, 600_000),
    webRequestTimeoutMs: int(env, 'WEB_REQUEST_TIMEOUT_MS', 30_000, 500, 600_000),
    /** connections the kernel queues for accept (Node's default 511; capped by net.core.somaxconn): past it SYNs drop and clients retry 1, 3, 7, 15 s later */
    webListenBacklog: int(env, 'WEB_LISTEN_BACKLOG', 4096, 1, 65_535),
    outboxRelayIntervalMs: int(env, 'OUTBOX_RELAY_INTERVAL_MS', 5000, 10),
    /** how often each pool purges the log-like rows it owns past their retention (shared/retention.ts) */
    retentionIntervalMs: int(env, 'RETENTION_INTERVAL_MS', 60_000, 50, 86_400_000),
    /** how often the outbox-relay creates the history tables' partitions 12 months ahead (shared/db/partitions.ts); also once at its start */
    partitionsIntervalMs: int(env, 'PARTITIONS_INTERVAL_MS', 86_400_000, 50, 86_400_000),
    /** the re-drive (shared/queues/redrive.ts): every `intervalMs`, a job for each open piece of work older than `graceMs` that has none (Redis lost it) */
    redrive: {
      intervalMs: int(env, 'REDRIVE_INTERVAL_MS', 5000, 50, 60_000),
      graceMs: int(env, 'REDRIVE_GRACE_MS', 5000, 0, 60_000),
    },
    /** webhook retry delays in milliseconds (docs/decisions.md: attempt n+1 after delay n) */
    webhookRetryDelaysMs: delays(env, production),
    connectors,
    routes: loadRoutes(env, connectors),
    /** how long an operation may stay open before the sweep asks its provider */
    providerWindowMs: {
      live: int(env, 'PROVIDER_WINDOW_MS', 120_000, 1000),
      test: int(env, 'SANDBOX_PROVIDER_WINDOW_MS', 30_000, 100),
    },
    /** how often the sweeps look for open operations to ask their provider about, and the first wait between two asks */
    askIntervalMs: int(env, 'ASK_INTERVAL_MS', 5000, 50),
    payments: loadPaymentsConfig(env),
    rateLimitPerMinute,
    /** how long a web process keeps a looked-up credential (and its merchant status) in memory */
    credentialCacheMs: int(env, 'CREDENTIAL_CACHE_MS', 5000, 0, 60_000),
    /** how long a request waits for another request holding its Idempotency-Key before 409 idempotency-in-progress */
    idempotencyWaitMs: int(env, 'IDEMPOTENCY_WAIT_MS', 2000, 1, 30_000),
    webhooks: loadWebhooksConfig(env, production),
    settlement: loadSettlementConfig(env),
    reconciliation: loadReconciliationConfig(env),
    cards: {
      /** how long the client has for 3-D Secure (docs/decisions.md#cards-hosted-checkout) */
      threeDsWindowMs: int(env, 'CARD_3DS_WINDOW_MS', 10 * 60_000, 1000, 3_600_000),
      /** how long after a 3-D Secure challenge starts its acquirer is first asked, then at the sweep's growing intervals */
      threeDsFirstAskMs: int(env, 'CARD_3DS_FIRST_ASK_MS', 60_000, 1000, 3_600_000),
    },
    overload: loadOverloadConfig(env),
    availability: {
      /** how far back provider calls count */
      windowMs: int(env, 'AVAILABILITY_WINDOW_MS', 300_000, 10_000, 86_400_000),
      /** fewer calls than this in the window say nothing (operational) */
      minCalls: int(env, 'AVAILABILITY_MIN_CALLS', 3, 1, 1_000_000),
      /** a provider answer this slow counts against the operator */
      slowMs: int(env, 'AVAILABILITY_SLOW_MS', 5000, 1, 600_000),
    },
  };
}

/** The process's configuration, read from its environment; exits with a clear message on a bad value. */
export function getConfig(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${err.message}\n`);
      process.exit(78);
    }
    throw err;
  }
}
