'use strict';
// Long life: 10 000 start/cancel cycles and 10 000 complete short watches leave RSS within
// 20 MiB of where it settled after the first 1 000, and file descriptors, sockets and native
// threads where they were. Runs in a child process so the simulator's own sockets and memory
// are not counted.

const test = require('node:test');
const assert = require('node:assert/strict');
const { fork } = require('node:child_process');
const path = require('node:path');
const { createSimulator } = require('../packages/kube-watch-native/sim');

const CYCLES = Number(process.env.KWN_LONGEVITY_CYCLES || 10_000);
const MiB = 1024 * 1024;
const line = JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'p', resourceVersion: '1' } } });

test(
  `${CYCLES} start/cancel cycles and ${CYCLES} complete watches leak nothing`,
  { timeout: 240_000 },
  async () => {
    const sim = await createSimulator({});
    try {
      const child = fork(path.join(__dirname, 'fixtures/longevity/child.js'), [sim.url, String(CYCLES)], {
        execArgv: ['--expose-gc'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      const report = await new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error('longevity child timed out'));
        }, 230_000);
        child.on('message', (message) => {
          if (message.phase === 'start-cancel') sim.setFault({ rawLines: [line], then: 'stall' });
          if (message.phase === 'complete') sim.setFault({ rawLines: [line], then: 'end' });
          if (message.phase) child.send('go');
          if (message.report) {
            clearTimeout(timer);
            resolve(message.report);
          }
        });
        child.on('exit', (code) => code !== 0 && reject(new Error(`longevity child exited ${code}`)));
      });
      console.log(JSON.stringify(report));
      for (const name of ['startCancel', 'complete']) {
        const { settled, final } = report[name];
        const growth = final.rss - settled.rss;
        assert.ok(
          growth < 20 * MiB,
          `${name}: RSS grew ${(growth / MiB).toFixed(1)} MiB after the first 10%`,
        );
        assert.equal(final.threads, settled.threads, `${name}: native threads constant`);
        // Completed watches hand their HTTP/1.1 connection back to the pooled client, which keeps
        // at most one idle connection per host for the next watch: that one socket (and its fd)
        // may come and go between samples; anything that grows with the cycle count is a leak.
        assert.ok(final.fds <= settled.fds + 1, `${name}: fds ${settled.fds} -> ${final.fds}`);
        assert.ok(
          final.sockets <= settled.sockets + 1,
          `${name}: sockets ${settled.sockets} -> ${final.sockets}`,
        );
        assert.ok(
          final.sockets <= report.start.sockets + 1,
          `${name}: sockets ${report.start.sockets} at the start -> ${final.sockets}`,
        );
      }
      assert.ok(
        await sim.waitForSocketsClosed(3000),
        'the server sees every connection closed once the child is gone',
      );
    } finally {
      sim.setFault(null);
      await sim.close();
    }
  },
);
