'use strict';
// Shared by the suites that run the `kube-watch` CLI as a child process: a kubeconfig for the
// simulator, and a run of the CLI to its end under a time limit.

const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const certs = require('../packages/kube-watch-native/sim/certs');

const BIN = path.join(__dirname, '..', 'packages', 'kube-watch-native', 'bin', 'kube-watch.js');

/**
 * Writes a kubeconfig for the simulator at `server` to `file` and returns `file`: one cluster
 * `cluster` (with the test CA when the server is https and `ca`, then `clusterLines`), one user
 * (`userLines`, the YAML under `user:`), and a context per entry of `contexts`, the first one
 * current.
 */
function writeKubeconfig(
  file,
  {
    server,
    userLines,
    ca = true,
    cluster = 'sim',
    clusterLines = [],
    contexts = [{ name: 'sim', namespace: 'default' }],
  },
) {
  fs.writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      `current-context: ${contexts[0].name}`,
      'clusters:',
      `- name: ${cluster}`,
      '  cluster:',
      `    server: ${server}`,
      ...(server.startsWith('https') && ca ? [`    certificate-authority: ${certs.paths.ca}`] : []),
      ...clusterLines.map((l) => `    ${l}`),
      'users:',
      '- name: sim-user',
      '  user:',
      ...userLines.map((l) => `    ${l}`),
      'contexts:',
      ...contexts.map(
        ({ name, namespace }) =>
          `- name: ${name}\n  context: { cluster: ${cluster}, user: sim-user, namespace: ${namespace} }`,
      ),
      '',
    ].join('\n'),
  );
  return file;
}

/**
 * Runs kube-watch with `args` to its end (killed after `limitMs`, which only bounds a hang: a
 * run takes a second or two, but under a loaded machine node startup, an exec plugin's own node
 * and the watch each slow down many times over) and resolves with
 * `{ code, signal, stdout, stderr }`. The environment is this process's with no KUBECONFIG and
 * no colour, then `env`, where `undefined` removes a variable.
 */
async function runKubeWatch(args, env = {}, { limitMs = 60_000 } = {}) {
  const childEnv = { ...process.env, KUBECONFIG: '', NO_COLOR: '1', ...env };
  for (const [name, value] of Object.entries(childEnv)) if (value === undefined) delete childEnv[name];
  return runNode([BIN, ...args], childEnv, limitMs);
}

/**
 * Runs `node <args>` in environment `env` to its end, killed after `limitMs` (a bound on a hang
 * only), and resolves with `{ code, signal, stdout, stderr }`.
 */
async function runNode(args, env, limitMs) {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  const killer = setTimeout(() => child.kill('SIGKILL'), limitMs);
  const [code, signal] = await new Promise((resolve) => child.once('close', (...r) => resolve(r)));
  clearTimeout(killer);
  return { code, signal, stdout, stderr };
}

module.exports = { BIN, writeKubeconfig, runKubeWatch, runNode };
