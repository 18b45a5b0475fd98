'use strict';
/**
 * Output of `kube-watch`: the table lines, the one-line status of an object, the ERROR
 * message and the Backstage-shaped logger. Pure string building (no I/O except the
 * logger's writes), so the CLI's streaming loop stays small.
 */

const COLUMNS = ['TIME', 'TYPE', 'NAMESPACE/NAME', 'RV', 'STATUS'];
const GAP = '  ';

const ANSI = {
  reset: '\x1b[0m',
  bold: '\x1b[1m',
  dim: '\x1b[2m',
  red: '\x1b[31m',
  green: '\x1b[32m',
  yellow: '\x1b[33m',
  cyan: '\x1b[36m',
};
const TYPE_COLORS = { ADDED: 'green', MODIFIED: 'yellow', DELETED: 'red', BOOKMARK: 'dim', ERROR: 'red' };

/** Colors only for a terminal, and never when NO_COLOR is set (https://no-color.org). */
function shouldColor(stream, env = process.env) {
  return Boolean(stream && stream.isTTY) && env.NO_COLOR === undefined;
}

/**
 * Streaming table: widths are fixed up front (wide enough for typical names) and only
 * grow, so lines can be printed as events arrive; a name longer than any before it
 * shifts the columns to its right from that line on.
 * @param {{ plural?: string, color?: boolean }} [options]
 */
function createTableFormatter({ plural = '', color = false } = {}) {
  const widths = [12, 8, 40, 8];
  const paint = (name, text) => (color && name ? `${ANSI[name]}${text}${ANSI.reset}` : text);

  function row(cells, colors = []) {
    cells.forEach((cell, i) => {
      if (i < widths.length) widths[i] = Math.max(widths[i], cell.length);
    });
    return cells
      .map((cell, i) => {
        const padded = i < cells.length - 1 ? cell.padEnd(widths[i]) : cell;
        // Pad before painting: escape codes have no width on screen.
        return colors[i] ? paint(colors[i], cell) + padded.slice(cell.length) : padded;
      })
      .join(GAP);
  }

  return {
    header() {
      return row(
        COLUMNS,
        COLUMNS.map(() => 'bold'),
      );
    },
    /** One line (no newline) for a non-ERROR event. */
    line(ev, now = new Date()) {
      const cells = [
        formatTime(now),
        ev.type,
        objectRef(ev),
        ev.resourceVersion || '-',
        eventStatus(ev, plural),
      ];
      return row(cells, [null, TYPE_COLORS[ev.type], null, null, null]);
    },
  };
}

/** Local time as HH:MM:SS.mmm. */
function formatTime(d) {
  const p = (n, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

/** `namespace/name`, or `name` for cluster-scoped objects, `-` when there is none (bookmarks). */
function objectRef(ev) {
  const meta = (ev.object && ev.object.metadata) || {};
  if (!meta.name) return '-';
  return meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name;
}

/** A short status: pods `Running 1/2`, workloads `ready 2/3`, else `status.phase` or `-`. */
function eventStatus(ev, plural = '') {
  if (ev.type === 'BOOKMARK' || !ev.object || typeof ev.object !== 'object') return '-';
  const obj = ev.object;
  const status = obj.status || {};
  const kind = obj.kind || '';
  if (kind === 'Pod' || (!kind && plural === 'pods')) return podStatus(obj);
  if (
    ['Deployment', 'StatefulSet', 'ReplicaSet'].includes(kind) ||
    (!kind && ['deployments', 'statefulsets', 'replicasets'].includes(plural))
  ) {
    const desired = obj.spec && obj.spec.replicas !== undefined ? obj.spec.replicas : 1;
    return `ready ${status.readyReplicas || 0}/${desired}`;
  }
  if (kind === 'DaemonSet' || (!kind && plural === 'daemonsets')) {
    return `ready ${status.numberReady || 0}/${status.desiredNumberScheduled || 0}`;
  }
  if (kind === 'Node' || (!kind && plural === 'nodes')) {
    const ready = (status.conditions || []).find((c) => c && c.type === 'Ready');
    if (ready) return ready.status === 'True' ? 'Ready' : 'NotReady';
  }
  return typeof status.phase === 'string' && status.phase ? status.phase : '-';
}

function podStatus(pod) {
  const status = pod.status || {};
  const statuses = Array.isArray(status.containerStatuses) ? status.containerStatuses : [];
  const total = pod.spec && Array.isArray(pod.spec.containers) ? pod.spec.containers.length : statuses.length;
  const ready = statuses.filter((c) => c && c.ready).length;
  // kubectl shows why a container is stuck (CrashLoopBackOff, ImagePullBackOff) over the phase.
  const waiting = statuses
    .map((c) => c && c.state && c.state.waiting && c.state.waiting.reason)
    .find(Boolean);
  let phase = status.phase || 'Pending';
  if (waiting) phase = waiting;
  if (pod.metadata && pod.metadata.deletionTimestamp) phase = 'Terminating';
  return `${phase} ${ready}/${total}`;
}

/**
 * The stderr text for an ERROR event, with a one-line hint for the common causes.
 * @param {object} ev the ERROR event
 * @param {object} [context]
 * @param {string} [context.display] the resource as `plural` or `plural.group`
 * @param {string} [context.clusterUrl]
 * @param {string} [context.clusterName]
 * @param {string} [context.contextName]
 * @param {string} [context.namespace] the watched namespace (none: all namespaces or cluster-scoped)
 * @param {string} [context.credentialKind] e.g. `bearer token from exec plugin "aws"`
 * @param {boolean} [context.certificateProblem] the server's certificate was not trusted
 */
function formatWatchError(ev, context = {}) {
  const e = ev.error || {};
  const head =
    `kube-watch: watch failed: ${e.errorType || 'UNKNOWN_ERROR'} (status ${e.statusCode ?? '?'})` +
    (e.resourcePath ? ` on ${e.resourcePath}` : '');
  const hint = watchErrorHint(e.statusCode, context);
  return hint ? `${head}\n  hint: ${hint}` : head;
}

function watchErrorHint(statusCode, c) {
  const { display = '', clusterUrl = '', namespace } = c;
  const ctx = c.contextName ? `context "${c.contextName}"` : 'the context';
  if (statusCode === 401)
    return (
      `the cluster refused the credential of ${ctx}${c.credentialKind ? ` (${c.credentialKind})` : ''}: ` +
      'it may have expired or belong to another cluster; log in again or update the kubeconfig user'
    );
  if (statusCode === 403) {
    const where = namespace ? ` in namespace "${namespace}"` : '';
    const scope = namespace ? ` -n ${namespace}` : ' -A';
    return (
      `the user of ${ctx} may not watch ${display || 'this resource'}${where}` +
      ` (RBAC verb "watch"; check with: kubectl auth can-i watch ${display}${scope})`
    );
  }
  if (statusCode === 404)
    return `the cluster does not serve "${display}" there: check the name, group and version (plural.group/version)`;
  if (statusCode === 410) return 'the resourceVersion is too old; start again without --resource-version';
  if (statusCode === 0 && c.certificateProblem)
    return (
      `the server's certificate is not trusted: set certificate-authority or certificate-authority-data ` +
      `of cluster "${c.clusterName || '?'}" to the CA that signed it`
    );
  if (statusCode === 0)
    return `could not reach ${clusterUrl || 'the cluster'} (connection, DNS or TLS failure; see warnings above)`;
  return '';
}

/** A one-line hint for a kubeconfig error a first run usually meets, or ''. */
function kubeconfigHint(err) {
  if (err && err.reason === 'NoKubeconfig')
    return "hint: pass --kubeconfig PATH or set KUBECONFIG to your cluster's kubeconfig, or try kube-watch --demo";
  if (err && err.reason === 'ContextNotFound')
    return 'hint: pick one of the available contexts with --context NAME (kubectl config get-contexts lists them)';
  return '';
}

/** Whether a TLS error text or Node error code says the server certificate was not trusted. */
function isCertificateProblem(text) {
  return /UnknownIssuer|unknown ?issuer|self[- ]signed|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|CERT_HAS_EXPIRED|invalid peer certificate|certificate verify failed|ERR_TLS_CERT_ALTNAME_INVALID|NotValidForName/i.test(
    String(text || ''),
  );
}

/**
 * A logger with Backstage's LoggerService shape writing to `stream`: errors and warnings
 * always, info and debug only when verbose.
 * @param {{ verbose?: boolean, stream?: { write(s: string): unknown }, meta?: object }} [options]
 */
function createLogger({ verbose = false, stream = process.stderr, meta = {} } = {}) {
  const write = (level, message, extra) => {
    const fields = { ...meta, ...(extra && typeof extra === 'object' ? extra : {}) };
    const text = Object.entries(fields)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => ` ${k}=${formatField(v)}`)
      .join('');
    stream.write(`${level}: ${message}${text}\n`);
  };
  return {
    error: (message, extra) => write('error', message, extra),
    warn: (message, extra) => write('warn', message, extra),
    info: (message, extra) => verbose && write('info', message, extra),
    debug: (message, extra) => verbose && write('debug', message, extra),
    child: (childMeta) => createLogger({ verbose, stream, meta: { ...meta, ...childMeta } }),
  };
}

function formatField(v) {
  if (v instanceof Error) return JSON.stringify(v.message);
  if (typeof v === 'string') return /^[\w./:@-]+$/.test(v) ? v : JSON.stringify(v);
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

module.exports = {
  createTableFormatter,
  createLogger,
  eventStatus,
  formatTime,
  formatWatchError,
  isCertificateProblem,
  kubeconfigHint,
  objectRef,
  shouldColor,
};
