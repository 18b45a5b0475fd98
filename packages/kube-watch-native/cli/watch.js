'use strict';
// What `kube-watch` does once bin/kube-watch.js has read its command line: a session (the
// logger, the abort that Ctrl-C, SIGTERM, a closed stdout and the demo's timer share, the
// cleanups), then the watch's steps (cluster, resource, namespace, addon, options) and the
// watch or the informer, printing until it ends.

const { loadKubeconfig, KubeconfigError } = require('../lib/kubeconfig');
const { parseResourceArg, resolveResource, ResourceArgError } = require('./resource-arg');
const { discover, cacheDir, DiscoveryError } = require('./discovery');
const {
  createLogger,
  createTableFormatter,
  formatWatchError,
  isCertificateProblem,
  kubeconfigHint,
  shouldColor,
} = require('./format');
const { MetricsReader, formatMetrics } = require('../lib/metrics');

/** How often `--stats` prints the figures. */
const STATS_INTERVAL_MS = 5000;

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

/** The token the demo cluster asks for with --demo-backstage: a demo's, not a secret. */
const DEMO_TOKEN = 'kube-watch-demo';

/** The app-config block and the entity that point a Backstage backend at the demo cluster at `url`. */
function backstageSnippet(url) {
  return `# app-config.yaml: the demo cluster (kube-watch --demo --demo-backstage)
kubernetes:
  serviceLocatorMethod: { type: multiTenant }
  clusterLocatorMethods:
    - type: config
      clusters:
        - name: kube-watch-demo
          url: ${url}
          authProvider: serviceAccount
          serviceAccountToken: ${DEMO_TOKEN}
          skipMetricsLookup: true
# catalog-info.yaml: the entity whose pods the demo labels backstage.io/kubernetes-id=shop
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: shop
  annotations:
    backstage.io/kubernetes-id: shop
spec: { type: service, owner: guests, lifecycle: experimental }
`;
}

/**
 * Starts the simulated cluster and its workload; returns the watch target. With
 * --demo-backstage it listens on a fixed port, asks for a token, labels its pods for the entity
 * "shop" and prints what a Backstage app needs to show them.
 */
async function startDemo(cmd, { controller, logger, cleanups, stderr }) {
  const { createSimulator, startWorkload } = require('../sim');
  const backstage = Boolean(cmd.values['demo-backstage']);
  const sim = await createSimulator({ port: cmd.demoPort, ...(backstage && { token: DEMO_TOKEN }) });
  cleanups.push(() => sim.close());
  const workload = startWorkload(sim, {
    intervalMs: 250,
    ...(backstage && { labels: { 'backstage.io/kubernetes-id': 'shop' } }),
  });
  cleanups.push(() => workload.stop());
  if (Number.isFinite(cmd.demoSeconds)) {
    const timer = setTimeout(() => controller.abort(), cmd.demoSeconds * 1000);
    cleanups.push(() => clearTimeout(timer));
  }
  const stopping = Number.isFinite(cmd.demoSeconds)
    ? `stopping after ${cmd.demoSeconds}s or Ctrl-C`
    : 'until Ctrl-C';
  stderr.write(
    `kube-watch: demo — a simulated cluster (not a real one) at ${sim.url} with a generated workload; ${stopping}\n`,
  );
  if (backstage) stderr.write(`kube-watch: for a Backstage app, copy:\n${backstageSnippet(sim.url)}`);
  const credential = backstage ? { type: 'bearer token', token: DEMO_TOKEN } : { type: 'anonymous' };
  logger.debug(backstage ? 'demo: the demo token' : 'demo: anonymous credential, kubectl-proxy style');
  return {
    clusterDetails: {
      name: 'kube-watch-demo',
      url: sim.url,
      ...(!backstage && { authMetadata: { 'kubernetes.io/auth-provider': 'localKubectlProxy' } }),
    },
    credential,
    getCredential: async () => credential,
    // The demo watches every namespace unless -n is given.
    namespace: cmd.values.namespace ? cmd.values.namespace : undefined,
    contextName: 'demo',
  };
}

module.exports = { startSession, watchCommand, loadTarget, loadAddon, credentialsOf };
