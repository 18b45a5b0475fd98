'use strict';
// A throwaway PostgreSQL cluster for the tests of several Backstage replicas on one database
// (replicas.test.js): initdb in a fresh temp dir, `postgres` on 127.0.0.1 and a free port, gone
// again on stop(). Nothing about it is durable: fsync is off, the dir is removed.

const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { spawn, execFileSync } = require('node:child_process');

const USER = 'postgres';
// Trust auth on 127.0.0.1 takes any password, but Backstage's pg config and `pg` are happier with
// one, and a test copying this connection elsewhere then has a complete one.
const PASSWORD = 'backstage';

/** The bin dir of the newest /usr/lib/postgresql/<version>, or a NO_POSTGRES error. */
function findBinDir() {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root) : [];
  const dirs = versions
    .sort((a, b) => Number(b) - Number(a))
    .map((v) => path.join(root, v, 'bin'))
    .filter((dir) => fs.existsSync(path.join(dir, 'postgres')) && fs.existsSync(path.join(dir, 'initdb')));
  if (dirs.length) return dirs[0];
  const error = new Error(
    'PostgreSQL is not installed: no initdb/postgres under /usr/lib/postgresql/*/bin (apt-get install postgresql)',
  );
  error.code = 'NO_POSTGRES';
  throw error;
}

/**
 * A port nobody listens on now, for a server that binds it later (postgres a moment later, a
 * replica seconds later and again after a restart). It is picked below the kernel's ephemeral
 * range: a port from the kernel's pick (listen on 0) can be taken in the meantime as the local
 * port of an outgoing connection (CI once saw a replica's port taken while another replica
 * started), and a port below that range is never handed out so.
 */
async function freePort() {
  const [low] = ephemeralRange();
  const floor = 10_000;
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = floor + Math.floor(Math.random() * (low - floor));
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port between ${floor} and ${low} after 50 tries`);
}

/** The kernel's range of local ports for outgoing connections (Linux; else IANA's 49152–65535). */
function ephemeralRange() {
  try {
    const text = require('node:fs').readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8');
    const [low, high] = text.trim().split(/\s+/).map(Number);
    if (low > 10_000 && high >= low) return [low, high];
  } catch {
    // not Linux
  }
  return [49152, 65535];
}

function canListen(port) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts a cluster. Postgres refuses to run as root, so as root initdb and postgres run as the
 * Debian `postgres` user through setpriv, which execs in place: the child's pid is postgres'
 * own, so stop()'s SIGINT reaches the postmaster itself (runuser would sit in between).
 * @returns {Promise<{ connection: { host: string, port: number, user: string, password: string, database: string }, dir: string, stop(): Promise<void> }>}
 */
async function startPostgres({ readyMs = 20_000 } = {}) {
  const bin = findBinDir();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-watch-pg-'));
  const data = path.join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  const hasSetpriv = fs.existsSync('/usr/bin/setpriv');
  const run = (cmd, args, { pdeathsig } = {}) => {
    const privs = asRoot ? ['--reuid', USER, '--regid', USER, '--init-groups'] : [];
    // A parent-death signal: killed outright (SIGKILL, or SIGTERM, which skips 'exit' handlers),
    // the test process still takes postgres with it (SIGINT: fast shutdown). Only the dir stays.
    if (pdeathsig && hasSetpriv) privs.push('--pdeathsig', pdeathsig);
    return privs.length ? ['setpriv', [...privs, cmd, ...args]] : [cmd, args];
  };
  let postmaster;
  let log = '';
  // Removed on the parent's exit too, whichever way the test ends (SIGQUIT: immediate shutdown,
  // the postmaster takes its backends with it).
  const onExit = () => {
    postmaster?.kill('SIGQUIT');
    fs.rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  try {
    fs.writeFileSync(path.join(dir, 'pwfile'), `${PASSWORD}\n`);
    if (asRoot) execFileSync('chown', ['-R', `${USER}:${USER}`, dir]);
    const [initdb, initArgs] = run(
      path.join(bin, 'initdb'),
      [
        ['-D', data],
        ['-U', USER],
        [`--pwfile=${path.join(dir, 'pwfile')}`],
        ['--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync', '--no-instructions'],
      ].flat(),
    );
    execFileSync(initdb, initArgs, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000 });

    // A port the kernel just handed out can be taken before postgres binds it: try a few.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const [cmd, args] = run(
        path.join(bin, 'postgres'),
        [
          ['-D', data, '-h', '127.0.0.1', '-p', String(port), '-k', dir],
          // Speed over durability; room for several replicas' pools, admin pools and LISTENers.
          ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'],
          ['-c', 'max_connections=300', '-c', 'shared_buffers=32MB'],
        ].flat(),
        { pdeathsig: 'SIGINT' },
      );
      log = '';
      postmaster = spawn(cmd, args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
      postmaster.stderr.on('data', (chunk) => (log = (log + chunk).slice(-4000)));
      const exited = new Promise((resolve) =>
        postmaster.once('exit', (code, signal) => resolve({ code, signal })),
      );
      const ready = await waitReady(bin, port, exited, readyMs);
      if (ready === true) {
        const child = postmaster;
        return {
          connection: { host: '127.0.0.1', port, user: USER, password: PASSWORD, database: 'postgres' },
          dir,
          /** Fast shutdown (SIGINT: ends sessions, no checkpoint wait), SIGKILL after 10 s, dir removed. */
          async stop() {
            process.removeListener('exit', onExit);
            if (child.exitCode === null && child.signalCode === null) {
              child.kill('SIGINT');
              const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
              await exited;
              clearTimeout(timer);
            }
            fs.rmSync(dir, { recursive: true, force: true });
          },
        };
      }
      postmaster.kill('SIGKILL');
      await exited;
      if (!/could not bind|already in use/i.test(log) || attempt === 3)
        throw new Error(`postgres did not start (${ready}): ${log.trim()}`);
    }
  } catch (error) {
    process.removeListener('exit', onExit);
    onExit();
    throw error;
  }
}

/** true once pg_isready says the server accepts connections; a reason string if it exits or `ms` pass. */
async function waitReady(bin, port, exited, ms) {
  let gone;
  exited.then((how) => (gone = how));
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (gone) return `exited with ${gone.code ?? gone.signal}`;
    try {
      execFileSync(path.join(bin, 'pg_isready'), ['-q', '-h', '127.0.0.1', '-p', String(port)], {
        stdio: 'ignore',
        timeout: 5000,
      });
      return true;
    } catch {
      await sleep(100);
    }
  }
  return `not accepting connections after ${ms} ms`;
}

/**
 * What `start()` resolves to; when it fails for want of PostgreSQL, test `t` is skipped
 * (undefined), or fails when KUBE_WATCH_REQUIRE_PG=1 (CI, where it must run).
 */
async function orSkipWithoutPostgres(t, start) {
  try {
    return await start();
  } catch (error) {
    if (error.code !== 'NO_POSTGRES' || process.env.KUBE_WATCH_REQUIRE_PG === '1') throw error;
    t.skip(error.message);
    return undefined;
  }
}

module.exports = { startPostgres, orSkipWithoutPostgres, findBinDir, freePort };
