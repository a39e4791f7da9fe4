import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync } from 'node:fs';
import path from 'node:path';
import { sleep } from './lib/processes';

/**
 * The topology drill's network cut of one node from Redis and Postgres, done by the kernel, as a
 * partition of two machines would be. Every process of a node runs in a cgroup v2 folder of its
 * own, chaos-<p>/<node> (cluster.ts startNode's `cgroup`: the node's supervisor joins it before
 * its first instruction, and every process it starts, and every socket of theirs, belongs to
 * it). For the cut, an iptables chain of the drill's (CHAOS-CUT-<p>), jumped to from INPUT and
 * OUTPUT, drops every TCP packet from a socket of that cgroup to the given ports (the Redis
 * Cluster's, PgBouncer's, Postgres's) and every packet from those ports to a socket of it
 * (`-m cgroup --path`). Open connections stay open and what is sent on them waits (TCP
 * retransmits); new ones get no answer; when the rules go, TCP delivers what waited. Nothing
 * else of the node is touched: HAProxy's health checks, the webhook receiver and the providers
 * still reach it and it them, and every other process of the machine is untouched.
 *
 * Redirects of the Redis Cluster (MOVED, ASK) name the real addresses, 127.0.0.1:<port>, which
 * is why this is done on the node's packets rather than with a proxy per node.
 */

/** Where cgroup v2 is mounted: /sys/fs/cgroup on a pure v2 machine, /sys/fs/cgroup/unified on a hybrid one. */
function cgroup2Mount(): string | undefined {
  for (const line of readFileSync('/proc/self/mounts', 'utf8').split('\n')) {
    const [, mountPoint, type] = line.split(' ');
    if (type === 'cgroup2') return mountPoint;
  }
  return undefined;
}

function iptables(...args: string[]): void {
  execFileSync('iptables', ['-w', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
}
const iptablesOk = (...args: string[]) => spawnSync('iptables', ['-w', ...args], { stdio: 'ignore' }).status === 0;

/** The pids in a cgroup folder (every process of the node started in it). */
export function processesIn(cgroup: string): number[] {
  try {
    return readFileSync(path.join(cgroup, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

export class NodeCutoffs {
  private readonly chain: string;
  /** the drill's cgroup folder, relative to the cgroup v2 root (as iptables names it) and absolute */
  private readonly relative: string;
  private readonly root: string;

  private constructor(mount: string, base: number) {
    this.chain = `CHAOS-CUT-${base}`;
    this.relative = `chaos-${base}`;
    this.root = path.join(mount, this.relative);
  }

  /**
   * The cut-offs of the drill on base port `base`: its cgroup folder and its (empty, unhooked)
   * iptables chain, made after a trial rule; throws why they cannot be done on this machine.
   */
  static prepare(base: number): NodeCutoffs {
    if (process.getuid?.() !== 0) throw new Error('cutting a node off needs root (iptables, cgroups)');
    if (spawnSync('iptables', ['-V'], { stdio: 'ignore' }).status !== 0)
      throw new Error('iptables is not installed: apt-get install -y iptables');
    const mount = cgroup2Mount();
    if (!mount) throw new Error('no cgroup v2 hierarchy is mounted (iptables -m cgroup --path needs one)');
    const cutoffs = new NodeCutoffs(mount, base);
    mkdirSync(cutoffs.root, { recursive: true });
    cutoffs.removeChain(); // left by a drill that was killed
    iptables('-N', cutoffs.chain);
    try {
      iptables('-A', cutoffs.chain, '-p', 'tcp', '-m', 'cgroup', '--path', cutoffs.relative, '-j', 'DROP');
      iptables('-F', cutoffs.chain);
    } catch (err) {
      cutoffs.release();
      throw new Error(
        `iptables refuses a cgroup match (-m cgroup --path): ${(err as { stderr?: Buffer }).stderr?.toString().trim() ?? (err as Error).message}`,
        { cause: err },
      );
    }
    return cutoffs;
  }

  /** The cgroup folder that the processes of `node` run in (made if needed). */
  cgroupOf(node: string): string {
    const dir = path.join(this.root, node);
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  /** Cuts every socket of `node` off from `ports` for `ms`; resolves once the rules are gone again. */
  async cut(node: string, ports: number[], ms: number): Promise<void> {
    const cgroup = `${this.relative}/${node}`;
    const list = [...new Set(ports)].join(',');
    for (const direction of ['--dports', '--sports'])
      iptables(
        '-A',
        this.chain,
        '-p',
        'tcp',
        '-m',
        'multiport',
        direction,
        list,
        '-m',
        'cgroup',
        '--path',
        cgroup,
        '-j',
        'DROP',
      );
    try {
      this.hook();
      await sleep(ms);
    } finally {
      this.unhook();
      iptables('-F', this.chain);
    }
  }

  /** Removes the chain and the cgroup folders (empty once the nodes are stopped); safe to call more than once. */
  release(): void {
    this.removeChain();
    if (!existsSync(this.root)) return;
    for (const entry of readdirSync(this.root, { withFileTypes: true }))
      if (entry.isDirectory()) rmdirQuietly(path.join(this.root, entry.name));
    rmdirQuietly(this.root);
  }

  private hook(): void {
    for (const builtin of ['OUTPUT', 'INPUT']) iptables('-I', builtin, '1', '-j', this.chain);
  }

  private unhook(): void {
    for (const builtin of ['OUTPUT', 'INPUT']) while (iptablesOk('-D', builtin, '-j', this.chain));
  }

  private removeChain(): void {
    if (!iptablesOk('-n', '-L', this.chain)) return;
    this.unhook();
    iptables('-F', this.chain);
    iptables('-X', this.chain);
  }
}

/** rmdir of a cgroup folder; one still holding a process stays (and is said). */
function rmdirQuietly(dir: string): void {
  try {
    rmdirSync(dir);
  } catch (err) {
    process.stderr.write(`chaos: ${dir} not removed: ${(err as Error).message}\n`);
  }
}
