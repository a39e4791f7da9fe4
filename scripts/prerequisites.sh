#!/usr/bin/env bash
# What `npm test` needs beyond node_modules, in one place (npm's pretest runs it; so does .ci/run
# through npm test). Each prerequisite is a program and the Debian package that brings it. Missing
# ones are installed from Debian's packages when this runs as root; otherwise it stops at once
# with the one `apt-get install` line to run. Postgres and Redis are started when they are
# installed but not answering (never when TEST_DATABASE_SERVER_URL or REDIS_URL point elsewhere).
set -euo pipefail

log() { printf '[prerequisites] %s\n' "$*" >&2; }

# program (a name on PATH, or an absolute path) → Debian package, and what needs it
PREREQUISITES=(
  "/usr/lib/postgresql/15/bin/postgres postgresql-15 the test databases, and Patroni's members (test/integration/ha-failover.test.ts)"
  "redis-server redis-server queues and rate limits; Redis Cluster (test/integration/cluster.test.ts)"
  "redis-cli redis-tools Redis Cluster's set-up"
  "${CHROMIUM_PATH:-/usr/bin/chromium} chromium the browser tests (test/e2e)"
  "promtool prometheus the alert rules' tests (test/unit/ops-rules.test.ts)"
  "pgbouncer pgbouncer transaction pooling (test/integration/cluster.test.ts)"
  "haproxy haproxy the TLS edge (test/integration/edge-tls.test.ts)"
  "openssl openssl the edge's test certificate"
  "etcd etcd-server Patroni's store (test/integration/ha-failover.test.ts)"
  "patroni patroni highly available Postgres (test/integration/ha-failover.test.ts)"
)

have() {
  case "$1" in
    /*) [ -x "$1" ] ;;
    *) command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] ;;
  esac
}

missing=()
for entry in "${PREREQUISITES[@]}"; do
  read -r program package why <<<"$entry"
  if ! have "$program"; then
    log "missing $program (Debian package $package): $why"
    missing+=("$package")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  line="apt-get install -y --no-install-recommends ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    log "run this once as root, then npm test again:"
    printf '\n    sudo %s\n\n' "$line" >&2
    exit 1
  fi
  log "installing from Debian's packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  $line -qq >/dev/null
  # a server Debian just installed asks for passwords on TCP: the tests connect as postgres over 127.0.0.1, trusted
  for hba in /etc/postgresql/*/main/pg_hba.conf; do
    [ -f "$hba" ] || continue
    grep -qE '^host\s+all\s+all\s+127\.0\.0\.1/32\s+trust' "$hba" && continue
    case " ${missing[*]} " in *" postgresql-15 "*) ;; *) continue ;; esac
    log "trusting local TCP connections in $hba (a test machine's fresh server)"
    sed -i '1i host all all 127.0.0.1/32 trust' "$hba"
    pg_ctlcluster --skip-systemctl-redirect "$(basename "$(dirname "$(dirname "$hba")")")" main reload 2>/dev/null || true
  done
fi

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
wait_for() { for _ in $(seq 1 30); do "$1" && return 0; sleep 1; done; return 1; }

if [ -z "${TEST_DATABASE_SERVER_URL:-}" ] && ! pg_up; then
  cluster="$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1)"
  if [ -z "$cluster" ] || [ "$(id -u)" -ne 0 ]; then
    log "Postgres does not answer on 127.0.0.1:5432 (user postgres, trust); start it, or set TEST_DATABASE_SERVER_URL:"
    printf '\n    sudo pg_ctlcluster --skip-systemctl-redirect %s main start\n\n' "${cluster:-15}" >&2
    exit 1
  fi
  log "starting PostgreSQL $cluster"
  pg_ctlcluster --skip-systemctl-redirect "$cluster" main start || true
  wait_for pg_up || { log "PostgreSQL did not start"; exit 1; }
fi

if [ -z "${REDIS_URL:-}" ] && ! redis_up; then
  log "starting Redis on 127.0.0.1:6379 (nothing kept on disk)"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
  wait_for redis_up || { log "Redis did not start"; exit 1; }
fi
