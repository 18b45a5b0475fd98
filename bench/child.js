'use strict';
// The child's end of the one protocol between a benchmark and the processes it starts
// (bench/children.js is the parent's): a server (the simulated clusters of bench/clusters/, a
// Backstage backend) says { type: 'ready', … } and answers each request { id, cmd, … } with a
// message of the same id; a worker, forked as `<file> --worker <config JSON>`, measures once,
// may ask its parent { type: 'ask', id, … } meanwhile, and ends with { type: 'result', result }.
// Either goes when its parent does.

/**
 * Serves the parent: `started` resolves to `{ ready, commands, stop }`; `ready` goes with the
 * ready message, `commands[cmd](msg)` answers each request (awaited), `stop()` runs before the
 * process exits on { cmd: 'stop' } (5 s at most: a connection that will not close must not keep
 * the run waiting).
 */
async function serve(started) {
  process.on('disconnect', () => process.exit(0));
  try {
    const { ready = {}, commands = {}, stop } = await started;
    process.on('message', async (msg) => {
      if (msg.cmd === 'stop') {
        setTimeout(() => process.exit(0), 5000).unref();
        await stop?.();
        process.exit(0);
      }
      const answer = commands[msg.cmd] ? await commands[msg.cmd](msg) : { error: `unknown ${msg.cmd}` };
      if (process.connected) process.send({ ...answer, id: msg.id });
    });
    process.send({ type: 'ready', ...ready });
  } catch (err) {
    console.error(err);
    process.exit(1);
  }
}

/**
 * When this process was forked as a worker, runs `measure(config)` and sends what it resolves to
 * as the result (a failure as `{ error: { detail } }`), then exits. Returns whether it was.
 */
function runAsWorker(measure) {
  if (process.argv[2] !== '--worker') return false;
  process.on('disconnect', () => process.exit(3));
  const end = (result, code) => process.send({ type: 'result', result }, () => process.exit(code));
  Promise.resolve()
    .then(() => measure(JSON.parse(process.argv[3])))
    .then(
      (result) => end(result, 0),
      (err) => end({ error: { detail: String(err?.stack ?? err) } }, 1),
    );
  return true;
}

let asked = 0;
/** Asks the parent `question`; resolves with its answer. */
function ask(question) {
  const id = ++asked;
  return new Promise((resolve) => {
    const onMessage = (msg) => {
      if (msg.id !== id) return;
      process.off('message', onMessage);
      resolve(msg.answer);
    };
    process.on('message', onMessage);
    process.send({ ...question, type: 'ask', id });
  });
}

/** The parent's next message. */
const nextMessage = () => new Promise((resolve) => process.once('message', resolve));

/** Tells the parent this worker is ready (`figures` with it); resolves with the parent's 'go'. */
function ready(figures = {}) {
  const go = nextMessage();
  process.send({ ...figures, type: 'ready' });
  return go;
}

/** Exits (1, saying so as `name`) if still running after `seconds`: a hung measurement fails. */
function giveUpAfter(name, seconds) {
  setTimeout(() => {
    console.error(`${name}: gave up after ${seconds} s`);
    process.exit(1);
  }, seconds * 1000).unref();
}

/** A watcher of the package in directory `pkg`; its warnings and errors go to stderr. */
function stderrWatcher(pkg, options = {}) {
  const { NativeKubernetesWatcher } = require(pkg);
  const say = (m) => console.error(m);
  return new NativeKubernetesWatcher({ logger: { warn: say, error: say }, ...options });
}

module.exports = { serve, runAsWorker, ask, ready, nextMessage, giveUpAfter, stderrWatcher };
