/**
 * Coalesces concurrent calls into batches (group commit): a call runs at once when fewer than
 * `maxInFlight` batches are running, otherwise it waits and joins the next batch. An idle
 * caller pays no extra latency; a busy one turns many statements into one. Used by the webhook
 * sender (claims, outcomes), the kernel (reads, the writer, marks: shared/operations), the web's
 * callback store (shared/providers/inbox.ts) and the outbox publisher (shared/queues/outbox.ts).
 * `run` answers each input at its position; an error fails every call of its batch.
 */
export class Coalescer<I, O> {
  private waiting: { input: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  private inFlight = 0;

  constructor(
    private readonly run: (inputs: I[]) => Promise<O[]>,
    private readonly maxInFlight = 2,
    private readonly maxBatch = 100,
  ) {}

  call(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ input, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.maxBatch);
      this.inFlight++;
      this.run(batch.map((b) => b.input))
        .then(
          (outputs) => batch.forEach((b, i) => b.resolve(outputs[i])),
          (err) => batch.forEach((b) => b.reject(err)),
        )
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
  }
}

/**
 * The named coalescers of one process (its service context's `batches`): the jobs and requests of
 * a process share each, and a second service context (tests) has its own.
 */
export class Batches {
  private readonly named = new Map<string, Coalescer<any, any>>();

  /** The coalescer `name`, built with `run` on first use. */
  get<I, O>(name: string, run: (inputs: I[]) => Promise<O[]>): Coalescer<I, O> {
    let c = this.named.get(name) as Coalescer<I, O> | undefined;
    if (!c) this.named.set(name, (c = new Coalescer(run)));
    return c;
  }
}
