'use strict';
/**
 * Exec credential plugins (kubeconfig `users[].user.exec`), as client-go runs them: the
 * command (`aws eks get-token`, `gke-gcloud-auth-plugin`, `kubelogin`, ...) prints an
 * `ExecCredential` whose `status` holds a bearer token or a client certificate and key.
 *
 * - `apiVersion` `client.authentication.k8s.io/v1` or `/v1beta1`; the plugin must answer in
 *   the same version.
 * - `command` is looked up on PATH, unless it contains a `/`: then it is relative to the
 *   directory of the kubeconfig file that defined the user (client-go's rule).
 * - The plugin's environment is ours, plus `env`, plus `KUBERNETES_EXEC_INFO` (always; with
 *   `spec.cluster` when `provideClusterInfo` is true: server, CA data, `tls-server-name`,
 *   `proxy-url`, and the cluster's `client.authentication.k8s.io/exec` extension as `config`).
 * - `interactiveMode`: `Never` never gives the plugin our terminal; `IfAvailable` (v1beta1's
 *   default) gives it stdin and stderr when stdin is a terminal; `Always` needs one and fails
 *   clearly without. Without the terminal, stdin is closed and stderr is captured: its last
 *   line becomes part of a failure's message, the way `kubectl` shows it.
 * - The credential is cached until `status.expirationTimestamp` (less a margin, so it is
 *   renewed before the server starts refusing it), or for the life of the process when there
 *   is none; `get({ forceRefresh: true })` (after a 401) runs the plugin again regardless.
 * - Bounded: a plugin that does not finish within the timeout is killed, and its output is
 *   capped. Errors name the context, the command and the reason; they never contain the
 *   plugin's stdout (where the token is) or its arguments and environment values.
 *
 * The first credential can be had synchronously (`getSync`, with `spawnSync`), so that
 * `loadKubeconfig` stays synchronous; later ones asynchronously (`get`), without blocking
 * the event loop of a long-running watcher.
 */

const { spawn, spawnSync } = require('node:child_process');
const path = require('node:path');

const API_VERSIONS = new Set(['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1']);
const INTERACTIVE_MODES = new Set(['Never', 'IfAvailable', 'Always']);
/** The cluster extension whose value reaches the plugin as `spec.cluster.config`. */
const EXEC_EXTENSION = 'client.authentication.k8s.io/exec';
/** A plugin may print at most this much; an ExecCredential is a few kilobytes. */
const MAX_OUTPUT_BYTES = 1024 * 1024;
/** Default time limits: a non-interactive plugin, and one the user may be typing into. */
const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_INTERACTIVE_TIMEOUT_MS = 300_000;
/** Renew this long before expiry at most (less for short-lived credentials: a fifth of their life). */
const MAX_RENEW_MARGIN_MS = 60_000;
const INSTALL_DOCS =
  'https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins';

/**
 * Reads and checks the `exec` mapping of a kubeconfig user. Throws `makeError(message)`.
 * @param {object} exec the mapping, as parsed with YAML's failsafe schema (all strings)
 * @param {{ what: string, dir: string, makeError: (m: string) => Error, bool: Function }} ctx
 */
function parseExecConfig(exec, { what, dir, makeError, bool }) {
  const isNull = (v) => v === undefined || v === null || /^(~|null|Null|NULL)?$/.test(v);
  const str = (v) => (typeof v === 'string' && !isNull(v) ? v : '');
  const command = str(exec.command);
  if (!command) throw makeError(`${what}: exec has no command`);
  const apiVersion = str(exec.apiVersion);
  if (!API_VERSIONS.has(apiVersion)) {
    throw makeError(
      `${what}: exec apiVersion ${apiVersion ? `"${apiVersion}"` : 'is not set; it'} must be ` +
        'client.authentication.k8s.io/v1 or client.authentication.k8s.io/v1beta1',
    );
  }
  const args = isNull(exec.args) ? [] : exec.args;
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string')) {
    throw makeError(`${what}: exec args must be a list of strings`);
  }
  const env = {};
  const envList = isNull(exec.env) ? [] : exec.env;
  if (!Array.isArray(envList)) throw makeError(`${what}: exec env must be a list of {name, value}`);
  envList.forEach((entry, i) => {
    const name = entry && typeof entry === 'object' ? str(entry.name) : '';
    if (!name) throw makeError(`${what}: exec env[${i}] has no name`);
    // Values are never echoed: they are often secrets (AWS keys, client secrets).
    env[name] = typeof entry.value === 'string' ? entry.value : '';
  });
  let interactiveMode = str(exec.interactiveMode);
  if (!interactiveMode) {
    // client-go: v1 must say; v1beta1 defaults to IfAvailable.
    if (apiVersion.endsWith('/v1')) {
      throw makeError(
        `${what}: exec interactiveMode must be set (Never, IfAvailable or Always) for ${apiVersion}`,
      );
    }
    interactiveMode = 'IfAvailable';
  }
  if (!INTERACTIVE_MODES.has(interactiveMode)) {
    throw makeError(
      `${what}: exec interactiveMode "${interactiveMode}" must be Never, IfAvailable or Always`,
    );
  }
  return {
    command,
    // A command with a path separator is a file relative to the kubeconfig; a bare name is on PATH.
    file: command.includes('/') ? path.resolve(dir, command) : command,
    args,
    env,
    apiVersion,
    interactiveMode,
    provideClusterInfo: bool(exec.provideClusterInfo, `${what}: exec provideClusterInfo`),
    installHint: str(exec.installHint),
  };
}

/** An error from running a plugin; `message` is safe to print. */
function pluginError(makeError, prefix, reason) {
  return makeError(`${prefix} ${reason}`);
}

class ExecPlugin {
  /**
   * @param {object} config from parseExecConfig
   * @param {object} options
   * @param {string} options.contextName
   * @param {object|undefined} options.cluster `spec.cluster` for KUBERNETES_EXEC_INFO (provideClusterInfo)
   * @param {Record<string, string|undefined>} options.env the environment the plugin inherits
   * @param {boolean} options.terminal whether stdin is a terminal the plugin may use
   * @param {number} [options.timeoutMs]
   * @param {(m: string) => Error} options.makeError
   * @param {() => number} [options.now]
   */
  constructor(config, options) {
    this.config = config;
    this.contextName = options.contextName;
    this.cluster = options.cluster;
    this.baseEnv = options.env;
    this.terminal = Boolean(options.terminal);
    this.makeError = options.makeError;
    this.now = options.now || Date.now;
    this.interactive =
      this.terminal && (config.interactiveMode === 'IfAvailable' || config.interactiveMode === 'Always');
    this.timeoutMs =
      options.timeoutMs ?? (this.interactive ? DEFAULT_INTERACTIVE_TIMEOUT_MS : DEFAULT_TIMEOUT_MS);
    this.prefix = `context "${this.contextName}": exec plugin "${config.command}"`;
    /** @type {{ credential: object, renewAt: number } | null} */
    this.cached = null;
    /** One run at a time: concurrent callers share it. */
    this.running = null;
    /** How many times the plugin ran (for debugging and tests). */
    this.runs = 0;
  }

  /** The cached credential when still good, else null. */
  fresh() {
    return this.cached && this.now() < this.cached.renewAt ? this.cached.credential : null;
  }

  /** Synchronously: the cached credential, or a new one from running the plugin now. */
  getSync() {
    const hit = this.fresh();
    if (hit) return hit;
    const spec = this.prepare();
    this.runs++;
    const r = spawnSync(spec.file, this.config.args, {
      env: spec.env,
      stdio: spec.stdio,
      timeout: this.timeoutMs,
      killSignal: 'SIGKILL',
      maxBuffer: MAX_OUTPUT_BYTES,
      windowsHide: true,
    });
    const outcome = {
      error: r.error,
      timedOut: Boolean(r.error && r.error.code === 'ETIMEDOUT'),
      tooLarge: Boolean(r.error && r.error.code === 'ENOBUFS'),
      status: r.status,
      signal: r.signal,
      stdout: r.stdout ? r.stdout.toString('utf8') : '',
      stderr: r.stderr ? r.stderr.toString('utf8') : '',
    };
    return this.store(this.interpret(outcome));
  }

  /**
   * The cached credential, or a new one from running the plugin (without blocking).
   * @param {{ forceRefresh?: boolean }} [options] forceRefresh: the server refused the
   *   current credential (401), so run the plugin even if it has not expired
   */
  async get({ forceRefresh = false } = {}) {
    if (!forceRefresh) {
      const hit = this.fresh();
      if (hit) return hit;
    } else if (!this.running) {
      this.cached = null;
    }
    if (!this.running) {
      this.running = this.runAsync().finally(() => {
        this.running = null;
      });
    }
    return this.running;
  }

  async runAsync() {
    const spec = this.prepare();
    this.runs++;
    const outcome = await new Promise((resolve) => {
      const out = { stdout: [], stderr: [], bytes: 0 };
      let child;
      try {
        child = spawn(spec.file, this.config.args, {
          env: spec.env,
          stdio: spec.stdio,
          // Its own process group, so a timeout kills whatever it started too; not when it
          // shares our terminal, where a new session would take the terminal away from it.
          detached: !this.interactive && process.platform !== 'win32',
          windowsHide: true,
        });
      } catch (error) {
        resolve({ error });
        return;
      }
      let timedOut = false;
      let tooLarge = false;
      const kill = () => {
        try {
          if (child.pid && !this.interactive && process.platform !== 'win32')
            process.kill(-child.pid, 'SIGKILL');
          else child.kill('SIGKILL');
        } catch {
          // Already gone.
        }
      };
      const timer = setTimeout(() => {
        timedOut = true;
        kill();
      }, this.timeoutMs);
      const collect = (which) => (chunk) => {
        out.bytes += chunk.length;
        if (out.bytes > MAX_OUTPUT_BYTES) {
          tooLarge = true;
          kill();
          return;
        }
        out[which].push(chunk);
      };
      if (child.stdout) child.stdout.on('data', collect('stdout'));
      if (child.stderr) child.stderr.on('data', collect('stderr'));
      let spawnError;
      child.on('error', (error) => {
        spawnError = error;
      });
      child.on('close', (status, signal) => {
        clearTimeout(timer);
        resolve({
          error: spawnError,
          timedOut,
          tooLarge,
          status,
          signal,
          stdout: Buffer.concat(out.stdout).toString('utf8'),
          stderr: Buffer.concat(out.stderr).toString('utf8'),
        });
      });
    });
    return this.store(this.interpret(outcome));
  }

  /** The plugin's environment and stdio, or a thrown error when it cannot run as configured. */
  prepare() {
    const { config } = this;
    if (config.interactiveMode === 'Always' && !this.terminal) {
      throw pluginError(
        this.makeError,
        this.prefix,
        'needs a terminal (interactiveMode: Always), but standard input is not a terminal; ' +
          'run it once in a terminal, or use a non-interactive login for this context',
      );
    }
    const spec = {
      apiVersion: config.apiVersion,
      kind: 'ExecCredential',
      spec: { interactive: this.interactive },
    };
    if (config.provideClusterInfo && this.cluster) spec.spec.cluster = this.cluster;
    const env = { ...this.baseEnv, ...config.env, KUBERNETES_EXEC_INFO: JSON.stringify(spec) };
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
    return {
      file: config.file,
      env,
      // With the terminal: the plugin may prompt (stdin) and talk to the user (stderr).
      stdio: this.interactive ? ['inherit', 'pipe', 'inherit'] : ['ignore', 'pipe', 'pipe'],
    };
  }

  /** Turns a finished run into a credential `{ credential, expiresAt }` or throws. */
  interpret({ error, timedOut, tooLarge, status, signal, stdout, stderr }) {
    const fail = (reason) => pluginError(this.makeError, this.prefix, reason);
    const { config } = this;
    if (error && (error.code === 'ENOENT' || error.code === 'EACCES') && !timedOut) {
      const how =
        error.code === 'EACCES'
          ? `cannot be run (${config.file} is not executable)`
          : config.file === config.command
            ? 'was not found on PATH'
            : `was not found (${config.file}, relative to the kubeconfig file)`;
      let message = `${this.prefix} ${how}`;
      if (config.installHint) {
        message += `\n\nIt looks like you are trying to use a client-go credential plugin that is not installed.\n${config.installHint.trim()}`;
      } else {
        message += `; install it, or see ${INSTALL_DOCS}`;
      }
      throw this.makeError(message);
    }
    if (timedOut) throw fail(`did not finish within ${formatMs(this.timeoutMs)} and was stopped`);
    if (tooLarge) throw fail(`printed more than ${MAX_OUTPUT_BYTES} bytes and was stopped`);
    if (error) throw fail(`could not be run (${error.code || error.message})`);
    if (signal) throw fail(`was killed by ${signal}${stderrTail(stderr)}`);
    if (status !== 0) throw fail(`exited with code ${status}${stderrTail(stderr)}`);

    // From here on the output may hold a token: messages describe it, never quote it.
    let doc;
    try {
      doc = JSON.parse(stdout);
    } catch {
      throw fail(
        `printed something that is not an ExecCredential (not JSON, ${Buffer.byteLength(stdout)} bytes)`,
      );
    }
    if (!doc || typeof doc !== 'object' || Array.isArray(doc)) {
      throw fail('printed something that is not an ExecCredential (not a JSON object)');
    }
    if (doc.kind !== 'ExecCredential') {
      throw fail('printed something that is not an ExecCredential (its kind is not ExecCredential)');
    }
    if (doc.apiVersion !== config.apiVersion) {
      throw fail(
        `answered in apiVersion ${describeVersion(doc.apiVersion)}, but the kubeconfig asks for ${config.apiVersion}`,
      );
    }
    const st = doc.status;
    if (!st || typeof st !== 'object' || Array.isArray(st))
      throw fail('returned an ExecCredential without a status');
    const token = typeof st.token === 'string' ? st.token : '';
    const cert = typeof st.clientCertificateData === 'string' ? st.clientCertificateData : '';
    const key = typeof st.clientKeyData === 'string' ? st.clientKeyData : '';
    if (Boolean(cert) !== Boolean(key)) {
      throw fail(
        `returned ${cert ? 'clientCertificateData without clientKeyData' : 'clientKeyData without clientCertificateData'}`,
      );
    }
    if (!token && !cert) throw fail('returned neither a token nor clientCertificateData and clientKeyData');
    if (cert && (!cert.includes('-----BEGIN') || !key.includes('-----BEGIN'))) {
      if (!token) throw fail('returned clientCertificateData or clientKeyData that is not PEM');
    }
    let expiresAt = Infinity;
    if (
      st.expirationTimestamp !== undefined &&
      st.expirationTimestamp !== null &&
      st.expirationTimestamp !== ''
    ) {
      const t =
        typeof st.expirationTimestamp === 'string' && /^\d{4}-\d\d-\d\dT/.test(st.expirationTimestamp)
          ? Date.parse(st.expirationTimestamp)
          : NaN;
      if (!Number.isFinite(t)) throw fail('returned an expirationTimestamp that is not an RFC 3339 time');
      expiresAt = t;
    }
    // The watcher sends one credential: a token wins over a certificate when a plugin gives both.
    const credential = token
      ? { type: 'bearer token', token }
      : { type: 'x509 client certificate', cert, key };
    return { credential, expiresAt };
  }

  store({ credential, expiresAt }) {
    const now = this.now();
    const margin = Number.isFinite(expiresAt)
      ? Math.min(MAX_RENEW_MARGIN_MS, Math.max(0, (expiresAt - now) / 5))
      : 0;
    this.cached = { credential, renewAt: expiresAt - margin };
    return credential;
  }
}

/** `: <last stderr line>` (bounded), or '' when the plugin said nothing on stderr. */
function stderrTail(stderr) {
  const lines = String(stderr || '')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  if (lines.length === 0) return '';
  const last = lines[lines.length - 1];
  return `: ${last.length > 300 ? `${last.slice(0, 300)}…` : last}`;
}

/** Only a version this API could have is quoted: anything else came from stdout, which stays private. */
function describeVersion(v) {
  if (typeof v === 'string' && /^client\.authentication\.k8s\.io\/v[0-9a-z]{1,12}$/.test(v)) return `"${v}"`;
  return v === undefined ? '(none)' : '(not a client.authentication.k8s.io version)';
}

function formatMs(ms) {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(1)}s`;
}

module.exports = { parseExecConfig, ExecPlugin, EXEC_EXTENSION, API_VERSIONS };
