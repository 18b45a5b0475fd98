#!/usr/bin/env node
'use strict';
// kube-watch: `kubectl get -w` on top of NativeKubernetesWatcher.
// Exit codes: 0 the watch ended (server timeout, Ctrl-C, --demo-seconds); 1 it ended with
// an ERROR event; 2 usage or kubeconfig error.

const { parseArgs } = require('node:util');

const { splitResourceArg, ResourceArgError } = require('../cli/resource-arg');
const { startSession, watchCommand } = require('../cli/watch');
const { logsCommand } = require('../cli/logs');

const USAGE = `Usage: kube-watch RESOURCE [options]
       kube-watch --demo [RESOURCE] [options]
       kube-watch logs POD [options]     a container's log (kube-watch logs --help)

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
      --demo-seconds N        stop the demo after N seconds (default 30; with
                              --demo-backstage, run until Ctrl-C)
      --demo-backstage        serve the demo cluster to a Backstage backend: a fixed
                              port, a token, pods labelled for the entity "shop"; prints
                              the app-config block and the entity to copy
      --demo-port PORT        the demo cluster's port on 127.0.0.1 (with
                              --demo-backstage 47443, else any free one)
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
  'demo-backstage': { type: 'boolean' },
  'demo-port': { type: 'string' },
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
    values['demo-seconds'] === undefined
      ? values['demo-backstage']
        ? Infinity
        : 30
      : positiveNumber(values['demo-seconds'], '--demo-seconds');
  for (const flag of ['demo-seconds', 'demo-backstage', 'demo-port']) {
    if (values[flag] !== undefined && !values.demo)
      throw new UsageError(`--${flag} only applies with --demo`);
  }
  const demoPort =
    values['demo-port'] === undefined ? (values['demo-backstage'] ? 47443 : 0) : port(values['demo-port']);
  if (values.stats && !values.informer) throw new UsageError('--stats only applies with --informer');

  const resourceArg = positionals[0] ?? 'pods';
  try {
    splitResourceArg(resourceArg); // the form only; the name is resolved against the server
  } catch (err) {
    if (err instanceof ResourceArgError) throw new UsageError(err.message);
    throw err;
  }
  return { values, positionals, output, timeout, demoSeconds, demoPort, resourceArg };
}

function positiveInteger(text, flag) {
  if (!/^\d+$/.test(text) || Number(text) < 1)
    throw new UsageError(`${flag} must be a whole number of seconds (1 or more), not "${text}"`);
  return Number(text);
}

function port(text) {
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > 65535)
    throw new UsageError(`--demo-port must be a port number (1 to 65535), not "${text}"`);
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
  if (argv[0] === 'logs') return logsCommand(argv.slice(1), stdout, stderr);

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
