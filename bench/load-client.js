'use strict';
// Starts the load server (bench/load-server.js) in a child process and talks to it over IPC
// (the messages are listed in its header).

const { fork } = require('node:child_process');
const path = require('node:path');

/** How long the server may take to start, and to answer one request. */
const WAIT_MS = 20000;

/**
 * Forks the load server and resolves once it listens. `onChild(child)` runs as soon as the
 * process exists, so the caller can track it (and kill it with itself) before anything else.
 */
async function startLoadServer(onChild = () => {}) {
  const child = fork(path.join(__dirname, 'load-server.js'), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  onChild(child);
  const pending = new Map();
  const ready = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('load server did not start')), WAIT_MS);
    child.on('message', (msg) => {
      if (msg.type === 'ready') {
        clearTimeout(timer);
        resolve(msg);
      } else pending.get(msg.id)?.(msg);
    });
  });
  let nextId = 0;
  /** Sends `msg` ({ cmd, … }) and resolves with the server's answer. */
  const request = (msg) =>
    new Promise((resolve, reject) => {
      const id = ++nextId;
      const timer = setTimeout(() => reject(new Error(`load server did not answer ${msg.cmd}`)), WAIT_MS);
      pending.set(id, (answer) => {
        clearTimeout(timer);
        pending.delete(id);
        resolve(answer);
      });
      child.send({ ...msg, id });
    });
  return {
    child,
    /** { httpPort, httpsPort } */
    ready,
    /** The server's origin for 'http' or 'https'. */
    origin: (proto) =>
      proto === 'https' ? `https://127.0.0.1:${ready.httpsPort}` : `http://127.0.0.1:${ready.httpPort}`,
    request,
    stop: () => child.send({ cmd: 'stop' }),
  };
}

module.exports = { startLoadServer };
