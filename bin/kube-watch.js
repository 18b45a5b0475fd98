#!/usr/bin/env node
'use strict';
// kube-watch: `kubectl get -w` on top of NativeKubernetesWatcher.
// Exit codes: 0 the watch ended (server timeout, Ctrl-C, --demo-seconds); 1 it ended with
// an ERROR event; 2 usage or kubeconfig error.

const { parseArgs } = require('node:util');

const { loadKubeconfig, KubeconfigError } = require('../lib/kubeconfig');
const {
  parseResourceArg,
  splitResourceArg,
  resolveResource,
  ResourceArgError,
} = require('../lib/resource-arg');
const { discover, cacheDir, DiscoveryError } = require('../lib/discovery');
const {
  createLogger,
  createTableFormatter,
  formatWatchError,
  isCertificateProblem,
  kubeconfigHint,
  shouldColor,
} = require('../lib/cli-format');
const { MetricsReader, formatMetrics } = require('../lib/metrics');

/** How often `--stats` prints the figures. */
const STATS_INTERVAL_MS = 5000;

const USAGE = `Usage: kube-watch RESOURCE [options]
       kube-watch --demo [RESOURCE] [options]

Stream Kubernetes watch events, like \`kubectl get -w\`, through the native watcher.

RESOURCE
  pods, po, pod, Pod, deploy, svc, cm       plural, singular, kind or short name
  deployments.apps, deployments.v1.apps     with its group (and version)
  crontabs.stable.example.com, ct           custom resources and their short names
  apps/v1/deployments, v1/pods              group/version/plural
  The name is looked up in the server's API discovery (cached for 10 minutes in
  $KUBE_WATCH_CACHE_DIR, default ~/.cache/kube-watch/discovery), which also says
  whether the resource is namespaced: cluster-scoped ones are watched cluster-wide.

Options
  -n, --namespace NS          namespace to watch (default: the context's namespace)
  -A, --all-namespaces        watch every namespace
  -l, --selector SELECTOR     label selector, e.g. app=web,tier!=cache
      --field-selector SELECTOR
                              field selector, e.g. status.phase=Running,metadata.name=web-1
  -o, --output FORMAT         table (default) or json (one event per line, as yielded)
      --resource-version RV   start after this resourceVersion
      --bookmarks             ask for BOOKMARK events (allowWatchBookmarks)
      --send-initial-events   start with the current objects, then a bookmark
                              (implies --bookmarks and resourceVersionMatch=NotOlderThan)
      --informer              keep watching across faults (list, then watch, resume, relist
                              after 410): prints SYNCED lines and relists; reconnect
                              notices go to stderr
      --stats                 with --informer: print the metrics figures (kube_watch.*, as
                              OpenTelemetry reports them) on stderr every 5 s and at the end
      --timeout SECONDS       ask the server to end the watch after SECONDS
      --kubeconfig PATH       kubeconfig file (default: $KUBECONFIG, then ~/.kube/config,
                              then the in-cluster service account)
      --context NAME          kubeconfig context (default: current-context)
      --demo                  watch a simulated cluster with a generated workload
                              (no kubeconfig needed; pods in all namespaces by default)
      --demo-seconds N        stop the demo after N seconds (default 30)
  -v, --verbose               print debug logging on stderr
  -h, --help                  print this help
      --version               print the version

Exit status: 0 when the watch ends or is interrupted, 1 when it ends with an error
event, 2 for usage or kubeconfig errors.
`;

const OPTIONS = {
  namespace: { type: 'string', short: 'n' },
  'all-namespaces': { type: 'boolean', short: 'A' },
  selector: { type: 'string', short: 'l' },
  'field-selector': { type: 'string' },
  output: { type: 'string', short: 'o' },
  'resource-version': { type: 'string' },
  bookmarks: { type: 'boolean' },
  'send-initial-events': { type: 'boolean' },
  timeout: { type: 'string' },
  informer: { type: 'boolean' },
  stats: { type: 'boolean' },
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  demo: { type: 'boolean' },
  'demo-seconds': { type: 'string' },
  verbose: { type: 'boolean', short: 'v' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
};

/** A problem with the command line: message on stderr, exit 2. */
class UsageError extends Error {}

function parseCommandLine(argv) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    // parseArgs' unknown-option message goes on about positionals starting with '-'.
    const message = err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? err.message.split('. ')[0] : err.message;
    throw new UsageError(message);
  }
  const { values, positionals } = parsed;
  if (values.help || values.version) return { values, positionals };

  if (positionals.length > 1)
    throw new UsageError(`expected one resource, got ${positionals.length}: ${positionals.join(' ')}`);
  if (positionals.length === 0 && !values.demo)
    throw new UsageError('a resource type is required, e.g. kube-watch pods');
  const output = values.output ?? 'table';
  if (output !== 'table' && output !== 'json')
    throw new UsageError(`--output must be table or json, not "${output}"`);
  for (const name of [
    'namespace',
    'selector',
    'field-selector',
    'resource-version',
    'kubeconfig',
    'context',
  ]) {
    if (values[name] !== undefined && values[name].trim() === '')
      throw new UsageError(`--${name} needs a non-empty value`);
  }
  const timeout = values.timeout === undefined ? undefined : positiveInteger(values.timeout, '--timeout');
  const demoSeconds =
    values['demo-seconds'] === undefined ? 30 : positiveNumber(values['demo-seconds'], '--demo-seconds');
  if (values['demo-seconds'] !== undefined && !values.demo)
    throw new UsageError('--demo-seconds only applies with --demo');
  if (values.stats && !values.informer) throw new UsageError('--stats only applies with --informer');

  const resourceArg = positionals[0] ?? 'pods';
  try {
    splitResourceArg(resourceArg); // the form only; the name is resolved against the server
  } catch (err) {
    if (err instanceof ResourceArgError) throw new UsageError(err.message);
    throw err;
  }
  return { values, positionals, output, timeout, demoSeconds, resourceArg };
}

/**
 * `--stats`: the watcher's metrics figures on stderr every few seconds, one line per series,
 * and once more at `stop()`. The timer does not keep the process alive.
 */
function printStats(watcher, stderr) {
  const reader = new MetricsReader(watcher);
  const print = () => {
    for (const line of formatMetrics(reader.read())) stderr.write(`kube-watch: stats ${line}\n`);
  };
  const timer = setInterval(print, STATS_INTERVAL_MS);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      print();
    },
  };
}

function positiveInteger(text, flag) {
  if (!/^\d+$/.test(text) || Number(text) < 1)
    throw new UsageError(`${flag} must be a whole number of seconds (1 or more), not "${text}"`);
  return Number(text);
}

function positiveNumber(text, flag) {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n <= 0)
    throw new UsageError(`${flag} must be a positive number of seconds, not "${text}"`);
  return n;
}

/**
 * Runs the command; resolves to the exit code. Never calls process.exit itself except
 * on a second Ctrl-C or when something fails to let go of the event loop after an abort.
 */
async function main(argv) {
  const stdout = process.stdout;
  const stderr = process.stderr;

  let cmd;
  try {
    cmd = parseCommandLine(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    stderr.write(`kube-watch: ${err.message}\nRun kube-watch --help for usage.\n`);
    return 2;
  }
  if (cmd.values.help) {
    stdout.write(USAGE);
    return 0;
  }
  if (cmd.values.version) return printVersion(stdout, stderr);

  const session = startSession(cmd.values, stdout, stderr);
  try {
    return await watchCommand(cmd, session);
  } finally {
    await session.close();
  }
}

/** `--version`: the package version, then where the binary loaded came from (or why none loaded). */
function printVersion(stdout, stderr) {
  stdout.write(`kube-watch-native ${require('../package.json').version}\n`);
  try {
    const { version } = require('..');
    stdout.write(
      `target ${version.target} (${version.platform})\ncommit ${version.commit}\nbinary ${version.binary}\n`,
    );
  } catch (err) {
    stderr.write(`kube-watch: ${err.message}\n`);
    return 1;
  }
  return 0;
}

/**
 * What lives as long as one run of the command: the logger, the controller whose abort ends the
 * watch (Ctrl-C, SIGTERM, a closed stdout, the demo's timer), and what to undo at the end.
 */
function startSession(values, stdout, stderr) {
  const session = {
    stdout,
    stderr,
    logger: createLogger({ verbose: Boolean(values.verbose), stream: stderr }),
    controller: new AbortController(),
    cleanups: [],
    interrupted: false,
    stdoutOpen: true,
    /** One line of output, unless stdout has been closed under us. */
    write: (line) => {
      if (session.stdoutOpen) stdout.write(`${line}\n`);
    },
    close: async () => {
      for (const cleanup of session.cleanups.reverse()) {
        try {
          await cleanup();
        } catch (err) {
          session.logger.debug(`cleanup failed: ${err.message}`);
        }
      }
    },
  };
  stopOnSignals(session);
  stopOnClosedStdout(session);
  return session;
}

/** Ctrl-C / SIGTERM end the watch through its AbortSignal; a second one gives up waiting. */
function stopOnSignals(session) {
  const onSignal = (signal) => {
    if (session.interrupted) process.exit(130);
    session.interrupted = true;
    session.logger.debug(`${signal}: stopping the watch`);
    session.controller.abort();
    // The aborted watch must let the process go; if it does not, do not hang the terminal.
    setTimeout(() => process.exit(0), 3000).unref();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  session.cleanups.push(() => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  });
}

/** A closed pipe (`kube-watch pods | head`) ends the watch quietly. */
function stopOnClosedStdout(session) {
  const onStdoutError = (err) => {
    session.stdoutOpen = false;
    if (err.code !== 'EPIPE') session.stderr.write(`kube-watch: cannot write output: ${err.message}\n`);
    session.controller.abort();
  };
  session.stdout.on('error', onStdoutError);
  session.cleanups.push(() => session.stdout.off('error', onStdoutError));
}

/**
 * The command's steps once the session is up: the cluster, the resource, the namespace, the
 * addon, the options; then the watch or the informer prints until it ends. Resolves to the
 * exit code; every step that fails has said why on stderr.
 */
async function watchCommand(cmd, session) {
  const target = await loadTarget(cmd, session);
  if (!target) return 2;
  const credentials = credentialsOf(target, session.logger);
  const found = await findResource(cmd, target, credentials, session);
  if (!found) return 2;
  const { resource, discoveryError } = found;
  const namespace = namespaceOf(resource, cmd.values, target, session.logger);
  const addon = loadAddon(session.stderr);
  if (!addon) return 1;
  const options = watchOptions(cmd, namespace, session.controller.signal);
  session.logger.debug(
    `watching ${resource.display} (${resource.group || 'core'}/${resource.apiVersion}) ` +
      `${namespace ? `in namespace ${namespace}` : 'in all namespaces'} on ${target.clusterDetails.url} ` +
      `(context ${target.contextName})`,
  );
  const watch = {
    cmd,
    session,
    target,
    resource,
    namespace,
    credentials,
    options,
    Watcher: addon.NativeKubernetesWatcher,
    warnings: watchLoggerOf(session.logger, discoveryError),
    out: eventPrinter(cmd, resource, session),
  };
  return cmd.values.informer ? runInformer(watch) : runWatch(watch);
}

/** The demo's simulated cluster or the kubeconfig's; undefined after a kubeconfig error (said on stderr). */
async function loadTarget(cmd, session) {
  const { values } = cmd;
  if (values.demo) return startDemo(cmd, session);
  try {
    return loadKubeconfig({ path: values.kubeconfig, context: values.context });
  } catch (err) {
    if (!(err instanceof KubeconfigError)) throw err;
    const hint = kubeconfigHint(err);
    session.stderr.write(`kube-watch: ${err.message}\n${hint ? `  ${hint}\n` : ''}`);
    return undefined;
  }
}

/**
 * The credential to send, and `refresh()`, which asks for a fresh one (an exec plugin runs
 * again) and resolves whether it changed; a plugin that fails then is a warning, not the end.
 */
function credentialsOf(target, logger) {
  let credential = target.credential;
  const refresh = async () => {
    try {
      const fresh = await target.getCredential({ forceRefresh: true });
      const changed = JSON.stringify(fresh) !== JSON.stringify(credential);
      credential = fresh;
      return changed;
    } catch (err) {
      if (!(err instanceof KubeconfigError)) throw err;
      logger.warn(`could not renew the credential: ${err.message}`);
      return false;
    }
  };
  return { current: () => credential, refresh };
}

/** The resource argument resolved (see resolveResourceArg); undefined for an unknown name (said on stderr). */
async function findResource(cmd, target, credentials, session) {
  try {
    return await resolveResourceArg(cmd.resourceArg, target, credentials.current, {
      logger: session.logger,
      refreshCredential: credentials.refresh,
    });
  } catch (err) {
    if (!(err instanceof ResourceArgError)) throw err;
    session.stderr.write(`kube-watch: ${err.message}\n`);
    return undefined;
  }
}

/** The namespace to watch; undefined (every namespace) for -A and for a cluster-scoped resource. */
function namespaceOf(resource, values, target, logger) {
  if (!resource.namespaced) {
    if (values.namespace) logger.debug(`${resource.display} is cluster-scoped: ignoring --namespace`);
    return undefined;
  }
  return values['all-namespaces'] ? undefined : (values.namespace ?? target.namespace);
}

/** The package's exports, native addon loaded; undefined when it cannot be (said on stderr). */
function loadAddon(stderr) {
  try {
    return require('..');
  } catch (err) {
    stderr.write(`kube-watch: the native addon could not be loaded: ${err.message}\n`);
    return undefined;
  }
}

/** watchResource's options from the flags; the informer takes its namespace and selectors. */
function watchOptions(cmd, namespace, signal) {
  const { values } = cmd;
  const options = { signal };
  if (namespace) options.namespace = namespace;
  if (values.selector) options.labelSelector = values.selector;
  if (values['field-selector']) options.fieldSelector = values['field-selector'];
  if (values['resource-version']) options.resourceVersion = values['resource-version'];
  if (cmd.timeout) options.timeoutSeconds = cmd.timeout;
  if (values.bookmarks || values['send-initial-events']) options.allowWatchBookmarks = true;
  if (values['send-initial-events']) {
    options.sendInitialEvents = true;
    options.resourceVersionMatch = 'NotOlderThan';
  }
  return options;
}

/** watchResource's params, with the credential of the moment. */
function watchParams({ target, resource, credentials }) {
  return {
    clusterDetails: target.clusterDetails,
    credential: credentials.current(),
    group: resource.group,
    apiVersion: resource.apiVersion,
    plural: resource.plural,
  };
}

/**
 * The watcher's logger: warnings go to stderr as before; one about the server certificate (or
 * discovery failing for that reason) also sets `certificateProblem`, which shapes the hint.
 */
function watchLoggerOf(logger, discoveryError) {
  const warnings = {
    certificateProblem: Boolean(
      discoveryError && isCertificateProblem(discoveryError.code || discoveryError.message),
    ),
  };
  warnings.logger = {
    ...logger,
    warn: (message, extra) => {
      if (isCertificateProblem(message)) warnings.certificateProblem = true;
      logger.warn(message, extra);
    },
  };
  return warnings;
}

/**
 * Objects as table rows or JSON lines (`-o json`). Like kubectl, the header comes with the
 * first row: a watch that fails prints none.
 */
function eventPrinter(cmd, resource, session) {
  const json = cmd.output === 'json';
  const table = createTableFormatter({ plural: resource.plural, color: shouldColor(session.stdout) });
  let headerDone = json;
  return {
    json,
    event(ev) {
      if (!headerDone) {
        session.write(table.header());
        headerDone = true;
      }
      session.write(json ? JSON.stringify(ev) : table.line(ev));
    },
  };
}

/**
 * `--informer`: list, then watch, across faults, printing SYNCED lines; reconnect notices and
 * retried faults go to stderr. Exit code 1 when it gave up after a fault.
 */
async function runInformer(watch) {
  const { cmd, session, out, options } = watch;
  const { stderr } = session;
  const notices = new watch.Watcher({
    logger: { ...watch.warnings.logger, info: (message) => stderr.write(`kube-watch: ${message}\n`) },
  });
  const informer = notices.informer(
    { ...watchParams(watch), credential: undefined, getCredential: watch.credentials.current },
    {
      namespace: options.namespace,
      labelSelector: options.labelSelector,
      fieldSelector: options.fieldSelector,
      signal: session.controller.signal,
    },
  );
  const stats = cmd.values.stats ? printStats(notices, stderr) : null;
  let failed = false;
  for await (const ev of informer) {
    if (ev.type === 'ERROR') {
      stderr.write(
        `kube-watch: ${ev.retrying ? 'retrying after' : 'giving up after'} ${ev.error.errorType} ` +
          `(HTTP ${ev.error.statusCode}) on ${ev.error.resourcePath}\n`,
      );
      if (out.json) session.write(JSON.stringify(ev));
      if (!ev.retrying) failed = true;
      continue;
    }
    if (ev.type === 'SYNCED') {
      session.write(
        out.json
          ? JSON.stringify(ev)
          : `SYNCED at resourceVersion ${ev.resourceVersion}${ev.relist ? ' (relist)' : ''}`,
      );
      continue;
    }
    out.event(ev);
  }
  stats?.stop();
  informer.close();
  if (session.interrupted) session.logger.debug('informer stopped');
  return failed ? 1 : 0;
}

/**
 * The watch, until it ends; exit code 1 when it ended with an ERROR. A 401 before any event:
 * the credential may have expired or been revoked. Ask for a fresh one (an exec plugin runs
 * again) and, when it differs, watch once more.
 */
async function runWatch(watch) {
  const { session, out } = watch;
  const watcher = new watch.Watcher({ logger: watch.warnings.logger });
  let retried = false;
  let sawEvent = false;
  let failed = false;
  for (;;) {
    let retry = false;
    for await (const ev of watcher.watchResource(watchParams(watch), watch.options)) {
      if (ev.type !== 'ERROR') {
        sawEvent = true;
        out.event(ev);
        continue;
      }
      if (
        ev.error &&
        ev.error.statusCode === 401 &&
        !retried &&
        !sawEvent &&
        !session.controller.signal.aborted
      ) {
        retried = true;
        if (await watch.credentials.refresh()) {
          session.logger.debug('401: running the watch again with a renewed credential');
          retry = true;
          break;
        }
      }
      if (out.json) session.write(JSON.stringify(ev));
      session.stderr.write(`${describeWatchError(watch, ev)}\n`);
      failed = true;
      break; // the watcher ends the stream after an ERROR anyway
    }
    if (!retry) break;
  }
  if (session.interrupted) session.logger.debug('watch stopped');
  return failed ? 1 : 0;
}

/** The ERROR event as the user reads it: what failed, where, and a hint. */
function describeWatchError({ target, resource, namespace, credentials, warnings }, ev) {
  return formatWatchError(ev, {
    display: resource.display,
    clusterUrl: target.clusterDetails.url,
    clusterName: target.clusterDetails.name,
    contextName: target.contextName,
    namespace,
    credentialKind: describeCredential(credentials.current()),
    certificateProblem: warnings.certificateProblem,
  });
}

/**
 * Resolves the resource argument with the server's discovery documents; when discovery
 * cannot be had (unreachable, refused, a proxy in the way), with the built-in table, and the
 * watch then reports what went wrong.
 */
async function resolveResourceArg(arg, target, getCredential, { logger, refreshCredential }) {
  const ask = (refresh) =>
    discover(
      { clusterDetails: target.clusterDetails, credential: getCredential() },
      // The demo's simulated cluster lives on a new port each time: nothing worth caching.
      { dir: target.contextName === 'demo' ? null : cacheDir(), refresh },
    );
  let found;
  try {
    try {
      found = await ask(false);
    } catch (err) {
      if (!(err instanceof DiscoveryError) || err.statusCode !== 401 || !(await refreshCredential()))
        throw err;
      found = await ask(true);
    }
  } catch (err) {
    if (!(err instanceof DiscoveryError)) throw err;
    // A server that cannot be reached or refuses us fails the watch too, which reports it; one
    // that answers discovery with something else (a proxy's page, another service) may well
    // serve the watch, so the user is told here why their names are read from the table.
    if (err.unexpectedDocument)
      logger.warn(`API discovery: ${err.message}; using the built-in table of well-known resources`);
    else logger.debug(`API discovery failed (${err.message}); using the built-in resource table`);
    return { resource: parseResourceArg(arg), discoveryError: err };
  }
  logger.debug(
    `API discovery: ${found.resources.length} resources (${found.aggregated ? 'aggregated' : 'legacy'}` +
      `${found.fromCache ? ', cached' : ''})`,
  );
  try {
    return { resource: resolveResource(arg, found.resources) };
  } catch (err) {
    // A resource created since the cache was written (a new CRD): ask the server again.
    if (!(err instanceof ResourceArgError) || !found.fromCache) throw err;
    found = await ask(true).catch(() => null);
    if (!found) throw err;
    return { resource: resolveResource(arg, found.resources) };
  }
}

/** What kind of credential was sent, for the 401 hint (never the credential itself). */
function describeCredential(credential) {
  if (!credential) return '';
  if (credential.type === 'bearer token') return 'a bearer token';
  if (credential.type === 'x509 client certificate') return 'a client certificate';
  return 'no credential';
}

/** Starts the simulated cluster and its workload; returns the watch target. */
async function startDemo(cmd, { controller, logger, cleanups, stderr }) {
  const { createSimulator, startWorkload } = require('../sim');
  const sim = await createSimulator();
  cleanups.push(() => sim.close());
  const workload = startWorkload(sim, { intervalMs: 250 });
  cleanups.push(() => workload.stop());
  const timer = setTimeout(() => controller.abort(), cmd.demoSeconds * 1000);
  cleanups.push(() => clearTimeout(timer));
  stderr.write(
    `kube-watch: demo — a simulated cluster (not a real one) at ${sim.url} with a generated workload; ` +
      `stopping after ${cmd.demoSeconds}s or Ctrl-C\n`,
  );
  logger.debug('demo: anonymous credential, kubectl-proxy style');
  return {
    clusterDetails: {
      name: 'kube-watch-demo',
      url: sim.url,
      authMetadata: { 'kubernetes.io/auth-provider': 'localKubectlProxy' },
    },
    credential: { type: 'anonymous' },
    getCredential: async () => ({ type: 'anonymous' }),
    // The demo watches every namespace unless -n is given.
    namespace: cmd.values.namespace ? cmd.values.namespace : undefined,
    contextName: 'demo',
  };
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
      // Everything is closed by now; if a handle still holds the loop, do not hang.
      setTimeout(() => {
        if (process.argv.includes('-v') || process.argv.includes('--verbose')) {
          process.stderr.write(
            'debug: a handle still held the event loop 2s after the watch ended; exiting\n',
          );
        }
        process.exit(code);
      }, 2000).unref();
    },
    (err) => {
      process.stderr.write(`kube-watch: internal error: ${err && err.stack ? err.stack : err}\n`);
      process.exit(1);
    },
  );
}

module.exports = { main, parseCommandLine, USAGE };
