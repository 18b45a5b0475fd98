'use strict';
// The worker half of a benchmark that forks itself (`node <file> --worker <config JSON>`), so
// that each measurement runs in a fresh process of its own.

/**
 * When this process was forked as such a worker, runs `worker(config)`, sends what it resolves
 * to the parent and exits (1, with the error printed, if it rejects). Returns whether it was.
 */
function runAsWorker(worker) {
  if (process.argv[2] !== '--worker') return false;
  worker(JSON.parse(process.argv[3])).then(
    (result) => {
      process.send(result);
      process.exit(0);
    },
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
  return true;
}

/**
 * Exits this worker (1, saying so on stderr as `name`) if it still runs after `seconds`, so a
 * hung measurement fails instead of holding up the run.
 */
function giveUpAfter(name, seconds) {
  setTimeout(() => {
    console.error(`${name}: gave up after ${seconds} s`);
    process.exit(1);
  }, seconds * 1000).unref();
}

/** A watcher of the package in directory `pkg` whose warnings and errors go to stderr. */
function stderrWatcher(pkg, options = {}) {
  const { NativeKubernetesWatcher } = require(pkg);
  const say = (m) => console.error(m);
  return new NativeKubernetesWatcher({ ...options, logger: { warn: say, error: say } });
}

/**
 * Tells the parent this worker is ready ({ cmd: 'ready' }) and resolves with the `changes` of
 * the message that answers it: how many changes the window that now opens will make.
 */
async function readyForChanges() {
  const go = new Promise((resolve) => process.once('message', resolve));
  process.send({ cmd: 'ready' });
  return (await go).changes;
}

module.exports = { runAsWorker, giveUpAfter, stderrWatcher, readyForChanges };
