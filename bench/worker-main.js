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

module.exports = { runAsWorker };
