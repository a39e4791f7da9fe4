/**
 * Loaded by .mocharc.json for every run. Mocha runs without --exit, so that a test leaving a
 * server, a child process or a timer behind is noticed. Noticed, not waited for forever: once
 * every test and hook has run, a process still alive after EXIT_GRACE_MS lists what keeps it
 * alive and exits 1. A failed test that left its load running (a timed-out test's loops go on)
 * then fails the run at once instead of holding CI until its time runs out.
 */
/** how long a finished run may stay alive; MOCHA_EXIT_GRACE_MS sets it (the test of this file) */
const EXIT_GRACE_MS = Number(process.env.MOCHA_EXIT_GRACE_MS) || 30_000;

export function mochaGlobalTeardown(): void {
  setTimeout(() => {
    const alive = process.getActiveResourcesInfo().join(', ');
    process.stderr.write(
      `\nthe test run ended ${EXIT_GRACE_MS / 1000} s ago and the process is still alive (${alive}): ` +
        'a test left work running; exiting 1\n',
    );
    // mocha sets the exit code to its failure count on exit; this listener, added after it, has the last word
    process.on('exit', () => {
      process.exitCode = 1;
    });
    process.exit(1);
  }, EXIT_GRACE_MS).unref();
}
