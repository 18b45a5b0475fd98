'use strict';
// `kube-watch logs`: `kubectl logs` on the native log stream (streamLogs). The pods come from an
// informer of pods (one pod by name, or a label selector's); each chosen container's log is a
// stream of its own, printed as its lines come. With `-f -l SELECTOR` the informer keeps
// running, and the pods that start matching (or whose containers start running) are followed
// too, which kubectl does not do.
//
// Exit codes as the rest of the CLI: 0 every log ended, 1 one ended with an ERROR (its message
// on stderr, as kubectl's "Error from server"), 2 usage or kubeconfig error.

const { parseArgs } = require('node:util');
const { startSession, loadTarget, loadAddon, credentialsOf } = require('./watch');

const LOGS_USAGE = `Usage: kube-watch logs POD [options]
       kube-watch logs -l SELECTOR [options]

Print a container's log, like \`kubectl logs\`, through the native log stream.

Options
  -c, --container NAME        the container (default: the pod's
                              kubectl.kubernetes.io/default-container, else its first)
      --all-containers        every container of the pod(s)
  -l, --selector SELECTOR     the pods matching a label selector; with -f, also the
                              pods that start matching while it runs
  -f, --follow                keep printing lines as they are written; a follow the
                              server ends resumes from the last line printed
      --since DURATION        only lines newer than e.g. 10s, 5m, 1h30m
      --since-time TIME       only lines from this RFC 3339 time on
      --tail N                only the last N lines (default: all; 10 with -l)
  -p, --previous              the previous instance of a restarted container
      --timestamps            each line starts with its timestamp
      --prefix                each line starts with [pod/NAME/CONTAINER]
      --limit-bytes N         at most N bytes of each log
  -n, --namespace NS          the namespace (default: the context's)
      --kubeconfig PATH       kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)
      --context NAME          kubeconfig context (default: current-context)
  -v, --verbose               print debug logging on stderr
  -h, --help                  print this help

Exit status: 0 when every log ends or is interrupted, 1 when one ends with an error, 2 for
usage or kubeconfig errors.
`;

const LOGS_OPTIONS = {
  container: { type: 'string', short: 'c' },
  'all-containers': { type: 'boolean' },
  selector: { type: 'string', short: 'l' },
  follow: { type: 'boolean', short: 'f' },
  since: { type: 'string' },
  'since-time': { type: 'string' },
  tail: { type: 'string' },
  previous: { type: 'boolean', short: 'p' },
  timestamps: { type: 'boolean' },
  prefix: { type: 'boolean' },
  'limit-bytes': { type: 'string' },
  namespace: { type: 'string', short: 'n' },
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  verbose: { type: 'boolean', short: 'v' },
  help: { type: 'boolean', short: 'h' },
};

const DURATION_UNITS = { h: 3600, m: 60, s: 1, ms: 0.001 };

/** A Go duration (`1h30m`, `10s`) in whole seconds, at least 1; null when it is not one. */
function durationSeconds(text) {
  if (!/^(\d+(\.\d+)?(h|ms|m|s))+$/.test(text)) return null;
  let seconds = 0;
  for (const [, number, , unit] of text.matchAll(/(\d+(\.\d+)?)(h|ms|m|s)/g)) {
    seconds += Number(number) * DURATION_UNITS[unit];
  }
  return Math.max(1, Math.ceil(seconds));
}

/** The command line, checked: `{ values, pod, options }`; throws a message for exit 2. */
function parseLogsLine(argv) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: LOGS_OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new Error(err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? err.message.split('. ')[0] : err.message);
  }
  const { values, positionals } = parsed;
  if (values.help) return { values };
  if (positionals.length > 1) throw new Error(`expected one pod, got ${positionals.join(' ')}`);
  const pod = positionals[0];
  if (!pod && !values.selector) throw new Error('a pod name or -l SELECTOR is required');
  if (pod && values.selector) throw new Error('a pod name and -l SELECTOR cannot both be given');
  if (values.container && values['all-containers'])
    throw new Error('--container and --all-containers cannot both be given');
  if (values.since !== undefined && values['since-time'] !== undefined)
    throw new Error('--since and --since-time cannot both be given');
  const options = {
    follow: Boolean(values.follow),
    previous: Boolean(values.previous),
    timestamps: Boolean(values.timestamps),
  };
  if (values.since !== undefined) {
    options.sinceSeconds = durationSeconds(values.since);
    if (options.sinceSeconds === null)
      throw new Error(`--since must be a duration such as 10s or 5m, not "${values.since}"`);
  }
  if (values['since-time'] !== undefined) options.sinceTime = values['since-time'];
  const tail = values.tail ?? (values.selector ? '10' : undefined);
  if (tail !== undefined && tail !== '-1') {
    if (!/^\d+$/.test(tail)) throw new Error(`--tail must be a whole number, not "${tail}"`);
    options.tailLines = Number(tail);
  }
  if (values['limit-bytes'] !== undefined) {
    if (!/^\d+$/.test(values['limit-bytes']) || Number(values['limit-bytes']) < 1)
      throw new Error(
        `--limit-bytes must be a whole number of bytes (1 or more), not "${values['limit-bytes']}"`,
      );
    options.limitBytes = Number(values['limit-bytes']);
  }
  return { values, pod, options };
}

/**
 * The containers of `pod` to print, by the flags; kubectl's default container otherwise, which
 * `notice` is told of.
 */
function containersOf(pod, values, notice) {
  const names = (pod.spec?.containers ?? []).map((c) => c.name);
  if (values['all-containers']) return names;
  if (values.container) return [values.container];
  const preferred = pod.metadata?.annotations?.['kubectl.kubernetes.io/default-container'];
  const chosen = names.includes(preferred) ? preferred : names[0];
  if (names.length > 1 && chosen) notice(`Defaulted container "${chosen}" out of: ${names.join(', ')}`);
  return chosen ? [chosen] : [];
}

/** Whether `container` of `pod` has started (a follow of a waiting one is refused with 400). */
function started(pod, container) {
  const status = (pod.status?.containerStatuses ?? []).find((s) => s.name === container);
  return !status?.state?.waiting;
}

/** Runs `kube-watch logs ARGS`; resolves to the exit code. */
async function logsCommand(argv, stdout, stderr) {
  let cmd;
  try {
    cmd = parseLogsLine(argv);
  } catch (err) {
    stderr.write(`kube-watch logs: ${err.message}\nRun kube-watch logs --help for usage.\n`);
    return 2;
  }
  if (cmd.values.help) {
    stdout.write(LOGS_USAGE);
    return 0;
  }
  const session = startSession(cmd.values, stdout, stderr);
  try {
    const target = await loadTarget({ values: cmd.values }, session);
    if (!target) return 2;
    const addon = loadAddon(stderr);
    if (!addon) return 1;
    return await printLogs(cmd, session, target, addon);
  } finally {
    await session.close();
  }
}

async function printLogs(cmd, session, target, addon) {
  const { values, options } = cmd;
  const { logger, controller } = session;
  const namespace = values.namespace ?? target.namespace ?? 'default';
  const watcher = new addon.NativeKubernetesWatcher({ logger });
  const credentials = credentialsOf(target, logger);
  const informer = watcher.informer(
    {
      clusterDetails: target.clusterDetails,
      getCredential: credentials.current,
      group: '',
      apiVersion: 'v1',
      plural: 'pods',
    },
    {
      namespace,
      ...(cmd.pod ? { fieldSelector: `metadata.name=${cmd.pod}` } : { labelSelector: values.selector }),
      signal: controller.signal,
    },
  );
  const streams = new Map();
  let failed = false;
  const follow = (pod, container) => {
    const key = `${pod.metadata.name}/${container}`;
    if (streams.has(key)) return;
    const prefix = values.prefix ? `[pod/${pod.metadata.name}/${container}] ` : '';
    const params = {
      clusterDetails: target.clusterDetails,
      credential: credentials.current(),
      namespace,
      pod: pod.metadata.name,
      container,
    };
    streams.set(
      key,
      printStream(
        watcher.streamLogs(params, { ...options, signal: controller.signal }),
        prefix,
        session,
      ).then((ok) => {
        if (!ok) failed = true;
      }),
    );
  };
  // kubectl's notice of the default container, once a pod.
  const noticed = new Set();
  const notice = (name) => (text) => {
    if (noticed.has(name)) return;
    noticed.add(name);
    session.stderr.write(`${text}\n`);
  };
  let synced = false;
  for await (const ev of informer) {
    if (ev.type === 'ERROR') {
      session.stderr.write(
        `kube-watch logs: listing pods: ${ev.error.errorType} (HTTP ${ev.error.statusCode})\n`,
      );
      if (!ev.retrying) failed = true;
      if (!synced) break;
      continue;
    }
    if (ev.type === 'SYNCED') {
      synced = true;
      if (streams.size === 0 && informer.list().length === 0) {
        session.stderr.write(
          cmd.pod
            ? `Error from server (NotFound): pods "${cmd.pod}" not found\n`
            : `No resources found in ${namespace} namespace.\n`,
        );
        if (cmd.pod) failed = true;
        if (cmd.pod || !options.follow) break;
      }
      // Only a followed selector takes the pods that come later.
      if (!(options.follow && values.selector)) break;
      continue;
    }
    if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED') continue;
    for (const container of containersOf(ev.object, values, notice(ev.object.metadata.name))) {
      // Before the list is whole, a waiting container is asked for anyway (its 400 is the answer);
      // later ones start once they run.
      if (!synced || started(ev.object, container)) follow(ev.object, container);
    }
  }
  informer.close();
  await Promise.all(streams.values());
  return failed ? 1 : 0;
}

/** Prints one log stream's lines; resolves whether it ended without an ERROR. */
async function printStream(stream, prefix, session) {
  let open = false;
  for await (const ev of stream) {
    if (ev.type === 'ERROR') {
      session.stderr.write(`Error from server (${reasonOf(ev.error)}): ${ev.error.message}\n`);
      return false;
    }
    let text = '';
    ev.lines.forEach((line, i) => {
      text += (open ? '' : prefix) + line;
      open = ev.continued.includes(i);
      if (!open) text += '\n';
    });
    if (session.stdoutOpen) session.stdout.write(text);
  }
  return true;
}

/** kubectl's name for an ERROR's status. */
function reasonOf(error) {
  const reasons = { 400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound' };
  return reasons[error.statusCode] ?? error.errorType;
}

module.exports = { logsCommand, parseLogsLine, durationSeconds, LOGS_USAGE };
